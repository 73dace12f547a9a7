package pending_test

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// node is one broker of a pair sharing one real store, as two tandem nodes share one database.
type node struct {
	b      *pending.Broker[string, string]
	mu     sync.Mutex
	events []string // resolutions this node announced
}

func twoNodes(t *testing.T) (*store.DB, *node, *node) {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PutSession(t.Context(), store.Session{ID: "ses_1", Directory: "/p", Created: 1, Updated: 1, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	a, b := &node{}, &node{}
	for _, n := range []*node{a, b} {
		n.b = pending.New[string, string](id.Permission, "Permission request", func(reason string) string { return "reject" },
			pending.Hooks[string, string]{Resolved: func(it pending.Item[string], r pending.Resolution[string]) {
				n.mu.Lock()
				defer n.mu.Unlock()
				n.events = append(n.events, it.ID+"="+r.Reply)
			}})
	}
	// A claim that wins on one node reaches the other as the cluster's signal does.
	a.b.Share(pending.Shared[string]{Ctx: t.Context(), DB: db, Kind: "permission", Claimed: func(_, itemID, _ string) { b.b.Apply(itemID) }, Decode: decodeString})
	b.b.Share(pending.Shared[string]{Ctx: t.Context(), DB: db, Kind: "permission", Claimed: func(_, itemID, _ string) { a.b.Apply(itemID) }, Decode: decodeString})
	return db, a, b
}

func decodeString(row store.PendingRequest) (string, error) {
	var s string
	err := json.Unmarshal(row.Data, &s)
	return s, err
}

func TestARequestAskedOnOneNodeIsAnsweredOnceFromEither(t *testing.T) {
	db, a, b := twoNodes(t)
	const itemID = "per_shared1"
	if err := db.PutPending(t.Context(), store.PendingRequest{ID: itemID, Kind: "permission", SessionID: "ses_1", Created: 1, Data: []byte(`"rm -rf build"`)}); err != nil {
		t.Fatal(err)
	}
	got := make(chan pending.Resolution[string], 1)
	go func() { got <- a.b.Ask(t.Context(), itemID, "ses_1", "rm -rf build", time.Minute) }()
	waitFor(t, func() bool { return len(a.b.Local("")) == 1 })

	if items := b.b.List(""); len(items) != 1 || items[0].ID != itemID || items[0].Request != "rm -rf build" {
		t.Fatalf("the other node lists %+v, want the request asked on the first", items)
	}
	if it, ok := b.b.Get(itemID); !ok || it.Request != "rm -rf build" {
		t.Fatalf("the other node's Get: %+v, %v", it, ok)
	}

	var wg sync.WaitGroup
	results := make(chan error, 20)
	for i := range 20 {
		n := a
		if i%2 == 1 {
			n = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- n.b.Reply(itemID, "once", pending.Who{Client: "client-" + string(rune('a'+i))})
		}()
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case errs.KindOf(err) != errs.Conflict:
			t.Errorf("a losing reply: %v, want a conflict naming the winner", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d replies won, want exactly one", won)
	}
	select {
	case r := <-got:
		if r.Cause != pending.Replied || r.Reply != "once" {
			t.Errorf("the waiter got %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting node never got the answer")
	}
	if items := b.b.List(""); len(items) != 0 {
		t.Errorf("an answered request is still listed: %+v", items)
	}
}

func TestATimeoutLosesToAnAnswerClaimedOnAnotherNode(t *testing.T) {
	db, a, b := twoNodes(t)
	const itemID = "per_shared2"
	if err := db.PutPending(t.Context(), store.PendingRequest{ID: itemID, Kind: "permission", SessionID: "ses_1", Created: 1, Data: []byte(`"ls"`)}); err != nil {
		t.Fatal(err)
	}
	// The answer is claimed while the asking node does not wait yet (it was down): Reserve applies it.
	if err := b.b.Reply(itemID, "always", pending.Who{Client: "phone"}); err != nil {
		t.Fatal(err)
	}
	a.b.Reserve(itemID, "ses_1", "ls", time.UnixMilli(1))
	r := a.b.Ask(t.Context(), itemID, "ses_1", "ls", time.Nanosecond)
	if r.Cause != pending.Replied || r.Reply != "always" || r.By.Client != "phone" {
		t.Errorf("the resumed waiter got %+v, want the answer claimed while it was down", r)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
