package store_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

func TestPushQueries(t *testing.T) {
	ctx := t.Context()
	eachBackend(t, func(t *testing.T, db *store.DB) {

		t.Run("the first VAPID key stored is the one every later start gets", func(t *testing.T) {
			first, err := db.VAPIDKey(ctx, []byte("key-one"), 1)
			if err != nil {
				t.Fatal(err)
			}
			second, err := db.VAPIDKey(ctx, []byte("key-two"), 2)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, []byte("key-one")) || !bytes.Equal(second, []byte("key-one")) {
				t.Errorf("got %q then %q, want key-one twice", first, second)
			}
		})

		t.Run("a subscription is listed, re-subscribing replaces its keys, and deleting it forgets it", func(t *testing.T) {
			a := store.PushSubscription{Endpoint: "https://push.example/a", P256dh: "p1", Auth: "a1", UserAgent: "phone", Created: 10}
			b := store.PushSubscription{Endpoint: "https://push.example/b", P256dh: "p2", Auth: "a2", UserAgent: "laptop", Created: 20}
			for _, p := range []store.PushSubscription{a, b} {
				if err := db.PutPushSubscription(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			a.P256dh, a.Auth = "p1-new", "a1-new"
			if err := db.PutPushSubscription(ctx, a); err != nil {
				t.Fatal(err)
			}
			got, err := db.PushSubscriptions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0] != a || got[1] != b {
				t.Fatalf("subscriptions = %+v", got)
			}
			if err := db.DeletePushSubscription(ctx, a.Endpoint); err != nil {
				t.Fatal(err)
			}
			if err := db.DeletePushSubscription(ctx, a.Endpoint); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("second delete: %v, want ErrNotFound", err)
			}
			got, err = db.PushSubscriptions(ctx)
			if err != nil || len(got) != 1 || got[0] != b {
				t.Errorf("after delete: %+v, %v", got, err)
			}
		})

		t.Run("a token is found by its hash, voided with its request's others, and pruned once expired", func(t *testing.T) {
			tokens := []store.PushToken{
				{Hash: []byte("hash-approve"), RequestID: "per_1", Decision: "once", Expires: 1000},
				{Hash: []byte("hash-reject"), RequestID: "per_1", Decision: "reject", Expires: 1000},
				{Hash: []byte("hash-other"), RequestID: "per_2", Decision: "once", Expires: 500},
				{Hash: []byte("hash-later"), RequestID: "per_3", Decision: "once", Expires: 2000},
			}
			for _, tk := range tokens {
				if err := db.PutPushToken(ctx, tk); err != nil {
					t.Fatal(err)
				}
			}
			got, err := db.PushToken(ctx, []byte("hash-reject"))
			if err != nil || got.RequestID != "per_1" || got.Decision != "reject" || got.Expires != 1000 {
				t.Fatalf("PushToken = %+v, %v", got, err)
			}
			if n, err := db.DeletePushTokens(ctx, "per_1"); err != nil || n != 2 {
				t.Fatalf("DeletePushTokens = %d, %v; want 2", n, err)
			}
			if _, err := db.PushToken(ctx, []byte("hash-approve")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a voided token: %v, want ErrNotFound", err)
			}
			if n, err := db.PrunePushTokens(ctx, 1500); err != nil || n != 1 {
				t.Fatalf("PrunePushTokens = %d, %v; want 1", n, err)
			}
			if _, err := db.PushToken(ctx, []byte("hash-other")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("an expired token: %v, want ErrNotFound", err)
			}
			if _, err := db.PushToken(ctx, []byte("hash-later")); err != nil {
				t.Errorf("a token not yet expired was pruned: %v", err)
			}
		})
	})
}
