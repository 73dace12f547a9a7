package store_test

import (
	"bytes"
	"errors"
	"testing"

	"tandem/store"
)

func TestPushQueries(t *testing.T) {
	ctx := t.Context()
	db := open(t)

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
}
