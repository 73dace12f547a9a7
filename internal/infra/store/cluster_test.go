package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// clusterOf opens a PostgreSQL store and returns its Cluster.
func clusterOf(t *testing.T, url string) (*store.DB, store.Cluster) {
	t.Helper()
	db := openAt(t, url)
	c, ok := db.Cluster()
	if !ok {
		t.Fatal("a PostgreSQL store has no Cluster")
	}
	return db, c
}

func heartbeat(t *testing.T, c store.Cluster, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := c.Heartbeat(t.Context(), store.Node{ID: id, URL: "http://" + id}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTheClusterIDIsMadeOnceAndSharedByEveryNode(t *testing.T) {
	url := testenv.Postgres(t)
	_, a := clusterOf(t, url)
	_, b := clusterOf(t, url)
	idA, err := a.ClusterID(t.Context())
	if err != nil || len(idA) != 32 {
		t.Fatalf("ClusterID = %q, %v; want 32 hex digits", idA, err)
	}
	if idB, err := b.ClusterID(t.Context()); err != nil || idB != idA {
		t.Fatalf("another node reads %q (%v), want %q", idB, err, idA)
	}
	if other, err := func() (string, error) { _, c := clusterOf(t, testenv.Postgres(t)); return c.ClusterID(t.Context()) }(); err != nil || other == idA {
		t.Fatalf("another database has the ID %q (%v)", other, err)
	}
}

func TestNodesAreAliveWhileTheirHeartbeatIsNewerThanStaleAfter(t *testing.T) {
	url := testenv.Postgres(t)
	db, c := clusterOf(t, url)
	ctx := t.Context()
	if err := c.Heartbeat(ctx, store.Node{ID: "node-a", URL: "http://a", Started: 1_700_000_000_000}); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, c, "node-b")
	// node-b was last heard from a minute ago, by the database's clock.
	if _, err := db.SQL().ExecContext(ctx, `UPDATE nodes SET heartbeat = now() - interval '1 minute' WHERE id = 'node-b'`); err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes(ctx, 10*time.Second)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("Nodes = %+v, %v", nodes, err)
	}
	if a := nodes[0]; a.ID != "node-a" || !a.Alive || a.URL != "http://a" || a.Started != 1_700_000_000_000 || a.Heartbeat == 0 {
		t.Errorf("node-a: %+v, want alive as registered", a)
	}
	if b := nodes[1]; b.ID != "node-b" || b.Alive || nodes[0].Heartbeat-b.Heartbeat < 59_000 {
		t.Errorf("node-b: %+v, want dead, heard from a minute before node-a", b)
	}
	if nodes, err := c.Nodes(ctx, 2*time.Minute); err != nil || !nodes[1].Alive {
		t.Errorf("with a staleAfter of two minutes node-b is %+v (%v), want alive", nodes, err)
	}
	life := nodes[1].Started
	if err := c.RemoveNode(ctx, "node-b", life+1); err != nil {
		t.Fatal(err)
	}
	if nodes, err := c.Nodes(ctx, time.Minute); err != nil || len(nodes) != 2 {
		t.Errorf("RemoveNode of another life of node-b removed it: %+v, %v", nodes, err)
	}
	if err := c.RemoveNode(ctx, "node-b", life); err != nil {
		t.Fatal(err)
	}
	if nodes, err := c.Nodes(ctx, time.Minute); err != nil || len(nodes) != 1 || nodes[0].ID != "node-a" {
		t.Errorf("after RemoveNode: %+v, %v", nodes, err)
	}
}

func TestOfNodesRacingToAcquireASessionOneOwnsItAndTheOtherIsToldWho(t *testing.T) {
	url := testenv.Postgres(t)
	_, a := clusterOf(t, url)
	_, b := clusterOf(t, url)
	heartbeat(t, a, "node-a", "node-b")
	ctx := t.Context()
	for round := range 10 {
		sid := fmt.Sprintf("ses_%d", round)
		type result struct {
			node  string
			lease store.SessionLease
			err   error
		}
		results := make(chan result, 2)
		var wg sync.WaitGroup
		for node, c := range map[string]store.Cluster{"node-a": a, "node-b": b} {
			wg.Go(func() {
				l, err := c.AcquireSession(ctx, sid, node, time.Minute)
				results <- result{node, l, err}
			})
		}
		wg.Wait()
		close(results)
		var owner string
		var losers int
		for r := range results {
			switch {
			case r.err == nil:
				if owner != "" || r.lease.Node != r.node || r.lease.Epoch != 1 {
					t.Fatalf("%s: %+v (the owner so far: %q)", r.node, r.lease, owner)
				}
				owner = r.node
			case errors.Is(r.err, store.ErrOwnedElsewhere):
				losers++
			default:
				t.Fatal(r.err)
			}
		}
		if owner == "" || losers != 1 {
			t.Fatalf("owner %q, %d losers; want one of each", owner, losers)
		}
		if l, err := a.SessionLease(ctx, sid); err != nil || l.Node != owner || l.Epoch != 1 {
			t.Fatalf("SessionLease = %+v, %v", l, err)
		}
		// The owner acquiring it again keeps its lease.
		if l, err := b.AcquireSession(ctx, sid, owner, time.Minute); err != nil || l.Epoch != 1 {
			t.Fatalf("the owner again: %+v, %v", l, err)
		}
	}
	if _, err := a.SessionLease(ctx, "ses_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the lease of a session nobody ran: %v, want ErrNotFound", err)
	}
}

func TestASessionOfADeadNodeIsAcquiredWithTheNextEpoch(t *testing.T) {
	url := testenv.Postgres(t)
	_, c := clusterOf(t, url)
	ctx := t.Context()
	heartbeat(t, c, "node-a")
	if _, err := c.AcquireSession(ctx, "ses_a", "node-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	heartbeat(t, c, "node-b")
	// With no staleness given, a registered owner is never taken over outside TakeOver.
	if l, err := c.AcquireSession(ctx, "ses_a", "node-b", 0); !errors.Is(err, store.ErrOwnedElsewhere) || l.Node != "node-a" {
		t.Fatalf("AcquireSession with staleAfter 0 = %+v, %v; want node-a's lease and ErrOwnedElsewhere", l, err)
	}
	// node-a has not been heard from for longer than a nanosecond.
	l, err := c.AcquireSession(ctx, "ses_a", "node-b", time.Nanosecond)
	if err != nil || l.Node != "node-b" || l.Epoch != 2 {
		t.Fatalf("AcquireSession = %+v, %v; want node-b with epoch 2", l, err)
	}
}

func TestAWriteUnderALeaseTakenOverIsFenced(t *testing.T) {
	url := testenv.Postgres(t)
	db, c := clusterOf(t, url)
	ctx := t.Context()
	heartbeat(t, c, "node-a", "node-b")
	old, err := c.AcquireSession(ctx, "ses_a", "node-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcquireSession(ctx, "ses_b", "node-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	fenced := store.WithFence(ctx, old)
	put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
	if err := db.PutMessage(fenced, store.Message{ID: "msg_1", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)}); err != nil {
		t.Fatalf("a write under the current lease: %v", err)
	}
	leases, err := c.TakeOver(ctx, "node-a", "node-b")
	if err != nil || len(leases) != 2 {
		t.Fatalf("TakeOver = %+v, %v", leases, err)
	}
	slices.SortFunc(leases, func(x, y store.SessionLease) int { return cmpString(x.SessionID, y.SessionID) })
	if leases[0] != (store.SessionLease{SessionID: "ses_a", Node: "node-b", Epoch: 2}) || leases[1].Epoch != 2 {
		t.Fatalf("TakeOver = %+v, want both sessions on node-b with epoch 2", leases)
	}
	current := store.WithFence(ctx, leases[0])
	writes := []struct {
		name  string
		write func(ctx context.Context, q store.Tx) error
	}{
		{"PutSession", func(ctx context.Context, q store.Tx) error {
			return q.PutSession(ctx, store.Session{ID: "ses_a", Directory: "/p", Title: "x", Created: 1, Updated: 2, Data: []byte(`{}`)})
		}},
		{"PutMessage", func(ctx context.Context, q store.Tx) error {
			return q.PutMessage(ctx, store.Message{ID: "msg_2", SessionID: "ses_a", Created: 2, Data: []byte(`{}`)})
		}},
		{"PutPart", func(ctx context.Context, q store.Tx) error {
			return q.PutPart(ctx, store.Part{ID: "prt_1", MessageID: "msg_1", SessionID: "ses_a", Data: []byte(`{}`)})
		}},
		{"PutTodos", func(ctx context.Context, q store.Tx) error { return q.PutTodos(ctx, "ses_a", []byte(`[]`)) }},
		{"PutSessionDiff", func(ctx context.Context, q store.Tx) error { return q.PutSessionDiff(ctx, "ses_a", []byte(`[]`)) }},
		{"PutPending", func(ctx context.Context, q store.Tx) error {
			return q.PutPending(ctx, store.PendingRequest{ID: "per_1", Kind: "permission", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)})
		}},
		{"DeletePart", func(ctx context.Context, q store.Tx) error { return q.DeletePart(ctx, "ses_a", "msg_1", "prt_1") }},
		{"DeleteMessage", func(ctx context.Context, q store.Tx) error { return q.DeleteMessage(ctx, "ses_a", "msg_2") }},
	}
	for _, w := range writes {
		t.Run(w.name+" under the old lease is fenced, under the new one stored", func(t *testing.T) {
			if err := w.write(fenced, db); !errors.Is(err, store.ErrFenced) {
				t.Errorf("on the pool under the old lease: %v, want ErrFenced", err)
			}
			err := db.Tx(ctx, func(q store.Tx) error { return w.write(fenced, q) })
			if !errors.Is(err, store.ErrFenced) {
				t.Errorf("in a transaction under the old lease: %v, want ErrFenced", err)
			}
			if err := w.write(current, db); err != nil {
				t.Errorf("under the new lease: %v", err)
			}
		})
	}
	t.Run("nothing fenced was stored", func(t *testing.T) {
		if s, err := db.GetSession(ctx, "ses_a"); err != nil || s.Title != "x" {
			t.Errorf("session: %+v, %v", s, err)
		}
	})
	t.Run("a write for another session than the lease's is not checked against it", func(t *testing.T) {
		if err := db.PutSession(fenced, store.Session{ID: "ses_c", Directory: "/p", Title: "c", Created: 1, Updated: 1, Data: []byte(`{}`)}); err != nil {
			t.Error(err)
		}
	})
	t.Run("a claim is not fenced: any node may answer", func(t *testing.T) {
		if _, won, err := db.ClaimPending(fenced, "per_1", store.PendingClaim{Reply: []byte(`"once"`), By: "someone", At: 1}); err != nil || !won {
			t.Errorf("won %v, %v", won, err)
		}
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestEventsAppendedConcurrentlyAreReadInSeqOrderWithNoGap: a reader polling the log while eight
// writers append never sees a seq before every smaller one has committed.
func TestEventsAppendedConcurrentlyAreReadInSeqOrderWithNoGap(t *testing.T) {
	url := testenv.Postgres(t)
	_, c := clusterOf(t, url)
	ctx := t.Context()
	const writers, batches, perBatch = 8, 25, 3
	const total = writers * batches * perBatch
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range batches {
				evs := make([]store.LoggedEvent, perBatch)
				for j := range evs {
					evs[j] = store.LoggedEvent{Node: fmt.Sprintf("node-%d", w), Directory: "/p", Type: "test.event",
						Payload: fmt.Appendf(nil, `{"w":%d,"i":%d,"j":%d}`, w, i, j)}
				}
				seqs, err := c.AppendEvents(ctx, evs)
				if err != nil {
					t.Error(err)
					return
				}
				for j := 1; j < len(seqs); j++ {
					if seqs[j] != seqs[j-1]+1 {
						t.Errorf("one append got seqs %v, want consecutive", seqs)
					}
				}
			}
		})
	}
	deadline, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last int64
	for last < total {
		evs, err := c.EventsAfter(deadline, last, 50)
		if err != nil {
			t.Fatalf("after seq %d: %v", last, err)
		}
		for _, e := range evs {
			if e.Seq != last+1 {
				t.Fatalf("read seq %d after %d: a gap", e.Seq, last)
			}
			last = e.Seq
		}
	}
	wg.Wait()
	if n, err := c.LastEventSeq(ctx); err != nil || n != total {
		t.Fatalf("LastEventSeq = %d, %v; want %d", n, err, total)
	}
	t.Run("pruning keeps the newest", func(t *testing.T) {
		n, err := c.PruneEvents(ctx, 10)
		if err != nil || n != total-10 {
			t.Fatalf("PruneEvents deleted %d (%v), want %d", n, err, total-10)
		}
		evs, err := c.EventsAfter(ctx, 0, 100)
		if err != nil || len(evs) != 10 || evs[0].Seq != total-9 || evs[9].Seq != total {
			t.Fatalf("%d events left (%v), want seqs %d..%d", len(evs), err, total-9, total)
		}
		if n, err := c.LastEventSeq(ctx); err != nil || n != total {
			t.Fatalf("LastEventSeq after pruning = %d, %v", n, err)
		}
	})
}

func TestAnAppendedEventReadsBackAsItWasWritten(t *testing.T) {
	_, c := clusterOf(t, testenv.Postgres(t))
	ctx := t.Context()
	if n, err := c.LastEventSeq(ctx); err != nil || n != 0 {
		t.Fatalf("LastEventSeq of an empty log = %d, %v", n, err)
	}
	if seqs, err := c.AppendEvents(ctx, nil); err != nil || len(seqs) != 0 {
		t.Fatalf("appending nothing: %v, %v", seqs, err)
	}
	want := store.LoggedEvent{Seq: 1, Node: "node-a", Directory: "/p", Type: "session.updated", Payload: []byte(`{"id":"x"}`)}
	if seqs, err := c.AppendEvents(ctx, []store.LoggedEvent{want}); err != nil || !slices.Equal(seqs, []int64{1}) {
		t.Fatalf("AppendEvents = %v, %v", seqs, err)
	}
	evs, err := c.EventsAfter(ctx, 0, 10)
	if err != nil || len(evs) != 1 || evs[0].Seq != 1 || evs[0].Node != want.Node || evs[0].Directory != want.Directory ||
		evs[0].Type != want.Type || string(evs[0].Payload) != string(want.Payload) {
		t.Fatalf("EventsAfter = %+v, %v", evs, err)
	}
}

// TestListenRingsForAnotherNodesAppendsAndAgainAfterItsConnectionIsKilled.
func TestListenRingsForAnotherNodesAppendsAndAgainAfterItsConnectionIsKilled(t *testing.T) {
	url := testenv.Postgres(t)
	listener, c := clusterOf(t, url)
	_, other := clusterOf(t, url)
	ctx, cancel := context.WithCancel(t.Context())
	rings := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() { done <- c.Listen(ctx, func() { rings <- struct{}{} }) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Listen returned %v when its context ended, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Listen did not return after its context ended")
		}
	}()
	ring := func(why string) {
		t.Helper()
		select {
		case <-rings:
		case <-time.After(30 * time.Second):
			t.Fatalf("no ring %s", why)
		}
	}
	drain := func() {
		for {
			select {
			case <-rings:
			default:
				return
			}
		}
	}
	ring("once connected")
	drain()
	if _, err := other.AppendEvents(ctx, []store.LoggedEvent{{Node: "node-b", Directory: "/p", Type: "x", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	ring("after another node's append")
	drain()
	res, err := listener.SQL().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN tandem_events'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("terminated %d listeners, want 1", n)
	}
	ring("after the listener's connection was killed and made again")
	drain()
	if _, err := other.AppendEvents(ctx, []store.LoggedEvent{{Node: "node-b", Directory: "/p", Type: "x", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	ring("after an append on the new connection")
}

func TestNodesStartingTogetherAgreeOnOneSecret(t *testing.T) {
	url := testenv.Postgres(t)
	_, a := clusterOf(t, url)
	_, b := clusterOf(t, url)
	first, err := a.Secret(t.Context(), "browser-sessions", []byte("candidate-a"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.Secret(t.Context(), "browser-sessions", []byte("candidate-b"))
	if err != nil || string(first) != "candidate-a" || string(second) != "candidate-a" {
		t.Errorf("secrets %q and %q (%v), want both the first one stored", first, second, err)
	}
}

func TestAnEventAppendedAgainIsLoggedOnce(t *testing.T) {
	_, c := clusterOf(t, testenv.Postgres(t))
	ctx := t.Context()
	ev := store.LoggedEvent{ID: "evt_retried", Node: "node-a", Directory: "/p", Type: "session.updated", Payload: []byte(`{}`)}
	for range 2 { // a retry after a commit whose reply was lost
		if _, err := c.AppendEvents(ctx, []store.LoggedEvent{ev}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AppendEvents(ctx, []store.LoggedEvent{{ID: "evt_next", Node: "node-a", Type: "session.updated", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.EventsAfter(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != "session.updated" || got[1].Seq <= got[0].Seq {
		t.Errorf("the log holds %+v, want the retried event once and the next one after it", got)
	}
}
