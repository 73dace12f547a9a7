package webpush_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/infra/webpush"
	"github.com/tandem-dev/tandem/internal/infra/webpush/webpushtest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openDB(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

type received struct {
	Type      string           `json:"type"`
	Kind      string           `json:"kind"`
	RequestID string           `json:"requestID"`
	Title     string           `json:"title"`
	Body      string           `json:"body"`
	URL       string           `json:"url"`
	Actions   []webpush.Action `json:"actions"`
}

func decode(t *testing.T, p webpushtest.Push) received {
	t.Helper()
	var r received
	if err := json.Unmarshal(p.Plaintext, &r); err != nil {
		t.Fatalf("push is not JSON: %v: %s", err, p.Plaintext)
	}
	return r
}

func TestService(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "tandem.db")
	db := openDB(t, dbPath)
	clk := &clock{t: time.Now()}
	var changes atomic.Int32
	svc, err := webpush.Open(t.Context(), webpush.Options{DB: db, Now: clk.now, Changed: func() { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Subscribed() {
		t.Fatal("a new database has subscribers")
	}
	push := webpushtest.New(t)
	phone := push.Subscribe(t, svc.PublicKey())
	laptop := push.Subscribe(t, svc.PublicKey())
	for _, sub := range []webpush.Subscription{phone, laptop} {
		if err := svc.Subscribe(t.Context(), sub, "test browser"); err != nil {
			t.Fatal(err)
		}
	}
	if !svc.Subscribed() || changes.Load() != 2 {
		t.Fatalf("after two subscriptions: subscribed %v, %d changes", svc.Subscribed(), changes.Load())
	}
	notice := webpush.Notice{Kind: "permission", RequestID: "per_test1", SessionID: "ses_1", Title: "bash: git push origin main", Body: "Session “deploy”",
		Buttons: []webpush.Button{{Action: "approve", Title: "Approve", Decision: "once"}, {Action: "reject", Title: "Reject", Decision: "reject"}}}

	t.Run("the VAPID key is generated once and kept across restarts", func(t *testing.T) {
		again, err := webpush.Open(t.Context(), webpush.Options{DB: db})
		if err != nil {
			t.Fatal(err)
		}
		if again.PublicKey() != svc.PublicKey() {
			t.Error("a second start made a new key")
		}
	})

	var pushes []received
	t.Run("every subscriber gets the request encrypted to its own keys, with its own tokens", func(t *testing.T) {
		n, total, err := svc.Asked(t.Context(), notice)
		if err != nil || n != 2 || total != 2 {
			t.Fatalf("Asked = %d, %v", n, err)
		}
		seen := map[string]bool{}
		for range 2 {
			p := push.Next(t, 5*time.Second)
			seen[p.Endpoint] = true
			if p.Header.Get("Urgency") != "high" || len(p.Header.Get("Topic")) != 32 {
				t.Errorf("headers: Urgency %q Topic %q", p.Header.Get("Urgency"), p.Header.Get("Topic"))
			}
			pushes = append(pushes, decode(t, p))
		}
		if !seen[phone.Endpoint] || !seen[laptop.Endpoint] {
			t.Errorf("delivered to %v", seen)
		}
		for _, r := range pushes {
			if r.Type != "asked" || r.RequestID != "per_test1" || r.Title != notice.Title || r.URL != "/#/pending/per_test1" || len(r.Actions) != 2 {
				t.Fatalf("payload %+v", r)
			}
			if r.Actions[0].Decision != "once" || r.Actions[1].Decision != "reject" || r.Actions[0].Token == "" {
				t.Errorf("actions %+v", r.Actions)
			}
		}
		if pushes[0].Actions[0].Token == pushes[1].Actions[0].Token {
			t.Error("two devices got the same token")
		}
	})

	t.Run("a token answers its request with its decision, once", func(t *testing.T) {
		req, decision, err := svc.Redeem(t.Context(), pushes[0].Actions[0].Token)
		if err != nil || req != "per_test1" || decision != "once" {
			t.Fatalf("Redeem = %q %q %v", req, decision, err)
		}
		if _, _, err := svc.Redeem(t.Context(), pushes[0].Actions[0].Token); !errs.Is(err, errs.Forbidden) {
			t.Errorf("second use: %v, want Forbidden", err)
		}
	})
	t.Run("once a request is answered by one token its other tokens are void, on every device", func(t *testing.T) {
		for _, tok := range []string{pushes[0].Actions[1].Token, pushes[1].Actions[0].Token, pushes[1].Actions[1].Token} {
			if _, _, err := svc.Redeem(t.Context(), tok); !errs.Is(err, errs.Forbidden) {
				t.Errorf("sibling token: %v, want Forbidden", err)
			}
		}
	})
	t.Run("a token that was never issued is refused", func(t *testing.T) {
		if _, _, err := svc.Redeem(t.Context(), "bm90LWEtdG9rZW4"); !errs.Is(err, errs.Forbidden) {
			t.Errorf("%v", err)
		}
	})
	t.Run("a token is refused after it expired", func(t *testing.T) {
		notice := notice
		notice.RequestID = "per_test2"
		if _, _, err := svc.Asked(t.Context(), notice); err != nil {
			t.Fatal(err)
		}
		r := decode(t, push.Next(t, 5*time.Second))
		push.Next(t, 5*time.Second)
		clk.add(webpush.DefaultTokenTTL + time.Second)
		if _, _, err := svc.Redeem(t.Context(), r.Actions[0].Token); !errs.Is(err, errs.Forbidden) {
			t.Errorf("expired token: %v, want Forbidden", err)
		}
	})
	t.Run("the resolution replaces the notification and voids the tokens", func(t *testing.T) {
		notice := notice
		notice.RequestID = "per_test3"
		if _, _, err := svc.Asked(t.Context(), notice); err != nil {
			t.Fatal(err)
		}
		asked := decode(t, push.Next(t, 5*time.Second))
		push.Next(t, 5*time.Second)
		if _, _, err := svc.Resolved(t.Context(), "per_test3", "Answered: once", "by tandem web UI", ""); err != nil {
			t.Fatal(err)
		}
		r := decode(t, push.Next(t, 5*time.Second))
		push.Next(t, 5*time.Second)
		if r.Type != "resolved" || r.RequestID != "per_test3" || r.Title != "Answered: once" || len(r.Actions) != 0 {
			t.Errorf("resolved payload %+v", r)
		}
		if _, _, err := svc.Redeem(t.Context(), asked.Actions[0].Token); !errs.Is(err, errs.Forbidden) {
			t.Errorf("token after resolution: %v", err)
		}
	})
	t.Run("a subscription the push service reports gone is forgotten", func(t *testing.T) {
		push.Unsubscribe(laptop.Endpoint)
		n, total, err := svc.Asked(t.Context(), notice)
		if err != nil || n != 1 || total != 2 {
			t.Fatalf("Asked = %d, %v", n, err)
		}
		push.Next(t, 5*time.Second)
		subs, err := svc.Subscribers(t.Context())
		if err != nil || len(subs) != 1 || subs[0].Endpoint != phone.Endpoint {
			t.Errorf("subscribers = %+v, %v", subs, err)
		}
		if changes.Load() != 3 {
			t.Errorf("%d changes, want 3 (the gone subscription is one)", changes.Load())
		}
		if err := svc.Unsubscribe(t.Context(), phone.Endpoint); err != nil || svc.Subscribed() {
			t.Errorf("after the last unsubscribe: %v, subscribed %v", err, svc.Subscribed())
		}
	})
	t.Run("a subscription with malformed keys is refused", func(t *testing.T) {
		bad := phone
		bad.Keys.Auth = "AAAA"
		if err := svc.Subscribe(t.Context(), bad, ""); !errs.Is(err, errs.Invalid) {
			t.Errorf("%v", err)
		}
		bad = phone
		bad.Endpoint = "ftp://push.example/x"
		if err := svc.Subscribe(t.Context(), bad, ""); !errs.Is(err, errs.Invalid) {
			t.Errorf("%v", err)
		}
	})
}

// TestTokensSurviveARestart: a notification's buttons keep working after the server restarts (the
// request they answer is restored too): the token's hash is in the database, not in memory.
func TestTokensSurviveARestart(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "tandem.db")
	push := webpushtest.New(t)
	notice := webpush.Notice{Kind: "permission", RequestID: "per_restart", Title: "bash: make deploy",
		Buttons: []webpush.Button{{Action: "approve", Title: "Approve", Decision: "once"}, {Action: "reject", Title: "Reject", Decision: "reject"}}}

	first, err := store.Open(t.Context(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := webpush.Open(t.Context(), webpush.Options{DB: first})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Subscribe(t.Context(), push.Subscribe(t, svc.PublicKey()), "phone"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Asked(t.Context(), notice); err != nil {
		t.Fatal(err)
	}
	asked := decode(t, push.Next(t, 5*time.Second))
	if len(asked.Actions) != 2 {
		t.Fatalf("actions %+v", asked.Actions)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("the database holds the tokens' hashes, never the tokens", func(t *testing.T) {
		raw, err := os.ReadFile(dbPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range asked.Actions {
			if strings.Contains(string(raw), a.Token) {
				t.Errorf("the database file contains the token %s", a.Token)
			}
			sum := sha256.Sum256([]byte(a.Token))
			if !strings.Contains(string(raw), string(sum[:])) {
				t.Errorf("the database file does not contain the hash of the token %s", a.Token)
			}
		}
	})

	db := openDB(t, dbPath)
	clk := &clock{t: time.Now()}
	restarted, err := webpush.Open(t.Context(), webpush.Options{DB: db, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("after the restart the Approve token answers its request, once", func(t *testing.T) {
		req, decision, err := restarted.Redeem(t.Context(), asked.Actions[0].Token)
		if err != nil || req != "per_restart" || decision != "once" {
			t.Fatalf("Redeem = %q %q %v", req, decision, err)
		}
		if _, _, err := restarted.Redeem(t.Context(), asked.Actions[0].Token); !errs.Is(err, errs.Forbidden) {
			t.Errorf("second use: %v, want Forbidden (403)", err)
		}
		if _, _, err := restarted.Redeem(t.Context(), asked.Actions[1].Token); !errs.Is(err, errs.Forbidden) {
			t.Errorf("the Reject token after Approve was used: %v, want Forbidden (403)", err)
		}
	})

	t.Run("two taps racing on one request: exactly one wins", func(t *testing.T) {
		notice := notice
		notice.RequestID = "per_race"
		if _, _, err := restarted.Asked(t.Context(), notice); err != nil {
			t.Fatal(err)
		}
		r := decode(t, push.Next(t, 5*time.Second))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for _, a := range r.Actions {
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, err := restarted.Redeem(t.Context(), a.Token)
					switch {
					case err == nil:
						wins.Add(1)
					case !errs.Is(err, errs.Forbidden):
						t.Errorf("Redeem: %v", err)
					}
				}()
			}
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Errorf("%d taps won, want 1", wins.Load())
		}
	})

	t.Run("expired tokens are refused and pruned from the database", func(t *testing.T) {
		notice := notice
		notice.RequestID = "per_old"
		if _, _, err := restarted.Asked(t.Context(), notice); err != nil {
			t.Fatal(err)
		}
		old := decode(t, push.Next(t, 5*time.Second))
		clk.add(webpush.DefaultTokenTTL + time.Second)
		if _, _, err := restarted.Redeem(t.Context(), old.Actions[0].Token); !errs.Is(err, errs.Forbidden) {
			t.Errorf("expired token: %v, want Forbidden", err)
		}
		sum := sha256.Sum256([]byte(old.Actions[1].Token))
		if _, err := db.PushToken(t.Context(), sum[:]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the expired Reject token's row: %v, want it pruned", err)
		}
	})
}
