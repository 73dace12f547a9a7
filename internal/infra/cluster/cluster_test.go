package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", to cut the listeners off

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestMain runs the tests on one shared PostgreSQL server, a database each.
func TestMain(m *testing.M) { os.Exit(testenv.MainWithPostgres(m)) }

// testNode is one node of a test cluster: its own store handle, bus and runtime, as a tandem
// process has.
type testNode struct {
	*Node
	bus       *bus.Bus
	store     store.Cluster
	takeovers chan []store.SessionLease
}

type nodeOpts struct {
	replay     int
	staleAfter time.Duration
}

// openCluster opens a store handle of its own on the database at url.
func openCluster(tb testing.TB, url string) store.Cluster {
	tb.Helper()
	db, err := store.Open(tb.Context(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close the store: %v", err)
		}
	})
	cs, ok := db.Cluster()
	if !ok {
		tb.Fatal("a PostgreSQL store has no Cluster")
	}
	return cs
}

// startNode starts a node on the database at url; it is closed (cleanly) when the test ends.
func startNode(tb testing.TB, url, id string, o nodeOpts) *testNode {
	tb.Helper()
	if o.staleAfter == 0 {
		o.staleAfter = 500 * time.Millisecond
	}
	cs := openCluster(tb, url)
	tn := &testNode{store: cs, takeovers: make(chan []store.SessionLease, 16)}
	n, err := New(tb.Context(), Options{
		Store: cs, ID: id, URL: "http://" + id + ".test",
		Heartbeat: 100 * time.Millisecond, StaleAfter: o.staleAfter, Poll: 200 * time.Millisecond,
		OnTakeOver: func(_ context.Context, leases []store.SessionLease) { tn.takeovers <- leases },
	})
	if err != nil {
		tb.Fatal(err)
	}
	tn.Node = n
	tn.bus = bus.New(bus.Options{Boot: n.ClusterID(), Sink: n.Sink, Backfill: n.Backfill, Replay: o.replay})
	if err := n.Start(tb.Context(), tn.bus); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		n.Close()
		tn.bus.Close()
	})
	return tn
}

func (tn *testNode) subscribe(t *testing.T, cursor string) (*bus.Subscription, bus.Resume) {
	t.Helper()
	sub, r, err := tn.bus.SubscribeContext(t.Context(), cursor, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub, r
}

// waitDelivered waits until the node has delivered the log up to seq.
func (tn *testNode) waitDelivered(t *testing.T, seq uint64) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("node %s delivers seq %d", tn.ID(), seq), func() bool {
		return tn.Health().Delivered >= seq
	})
}

// nextEvents takes n events from sub, failing the test after testenv.Patience.
func nextEvents(t *testing.T, sub *bus.Subscription, n int) []*bus.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience)
	defer cancel()
	var out []*bus.Event
	for len(out) < n {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("got %d of %d events, then: %v", len(out), n, err)
		}
		out = append(out, ev)
	}
	return out
}

func publish(t *testing.T, b *bus.Bus, i int) {
	t.Helper()
	if err := b.Publish("/p", "test.event", map[string]int{"i": i}); err != nil {
		t.Fatal(err)
	}
}

func TestAnEventPublishedOnOneNodeIsDeliveredOnEveryNodeWithTheSameCursor(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := startNode(t, url, "a", nodeOpts{}), startNode(t, url, "b", nodeOpts{})
	onA, _ := a.subscribe(t, "")
	onB, _ := b.subscribe(t, "")
	publish(t, a.bus, 1)
	x, y := nextEvents(t, onA, 1)[0], nextEvents(t, onB, 1)[0]
	if x.Seq == 0 || x.Seq != y.Seq || a.bus.CursorOf(x) != b.bus.CursorOf(y) {
		t.Errorf("seq %d cursor %s on a, seq %d cursor %s on b: want one seq and cursor", x.Seq, a.bus.CursorOf(x), y.Seq, b.bus.CursorOf(y))
	}
	if x.ID != y.ID || string(x.Global) != string(y.Global) || x.Origin != "a" || y.Origin != "a" {
		t.Errorf("on a: %s %s origin %q; on b: %s %s origin %q", x.ID, x.Global, x.Origin, y.ID, y.Global, y.Origin)
	}
	h := b.Health()
	if h.Node != "b" || h.Cluster != a.ClusterID() || h.Delivered < y.Seq || h.Queued != 0 {
		t.Errorf("b's health = %+v", h)
	}
	testenv.Eventually(t, "both nodes see two live nodes, listening", func() bool {
		ha, hb := a.Health(), b.Health()
		return ha.Alive == 2 && hb.Alive == 2 && ha.Listening && hb.Listening
	})
}

func TestEventsPublishedConcurrentlyOnTwoNodesArriveInOneOrderOnBoth(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := startNode(t, url, "a", nodeOpts{}), startNode(t, url, "b", nodeOpts{})
	onA, _ := a.subscribe(t, "")
	onB, _ := b.subscribe(t, "")
	const perPublisher, publishers = 125, 8 // 1,000 events, half on each node
	var wg sync.WaitGroup
	for p := range publishers {
		node := []*testNode{a, b}[p%2]
		wg.Go(func() {
			for i := range perPublisher {
				if err := node.bus.Publish("/p", "test.event", map[string]int{"i": p*perPublisher + i}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	const total = perPublisher * publishers
	gotA, gotB := nextEvents(t, onA, total), nextEvents(t, onB, total)
	seen := map[string]bool{}
	for i := range total {
		x, y := gotA[i], gotB[i]
		if x.ID != y.ID || x.Seq != y.Seq {
			t.Fatalf("event %d: %s (seq %d) on a, %s (seq %d) on b", i, x.ID, x.Seq, y.ID, y.Seq)
		}
		if i > 0 && x.Seq != gotA[i-1].Seq+1 {
			t.Fatalf("event %d: seq %d after %d", i, x.Seq, gotA[i-1].Seq)
		}
		if seen[x.ID] {
			t.Fatalf("event %s delivered twice", x.ID)
		}
		seen[x.ID] = true
	}
	for _, n := range []*testNode{a, b} {
		if n.bus.Ignored() != 0 {
			t.Errorf("node %s ignored %d events", n.ID(), n.bus.Ignored())
		}
	}
}

func TestEventsStillArriveWhenTheDoorbellListenersAreCutOff(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := startNode(t, url, "a", nodeOpts{}), startNode(t, url, "b", nodeOpts{})
	onB, _ := b.subscribe(t, "")
	testenv.Eventually(t, "both nodes listen", func() bool { return a.Health().Listening && b.Health().Listening })
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// What a failover of the database, or a proxy's idle timeout, does to the listeners.
	var cut int
	if err := db.QueryRowContext(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&cut); err != nil || cut != 2 {
		t.Fatalf("cut %d listeners (%v), want 2", cut, err)
	}
	for i := range 5 {
		publish(t, a.bus, i)
	}
	got := nextEvents(t, onB, 5)
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	testenv.Eventually(t, "the listeners reconnect", func() bool {
		var n int
		err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n == 2
	})
}

func TestASubscriberReconnectingToAnotherNodeGetsExactlyWhatItMissed(t *testing.T) {
	url := testenv.Postgres(t)
	// Rings of 8: most of what the subscriber missed is older than the ring and comes from the log.
	a, b := startNode(t, url, "a", nodeOpts{replay: 8}), startNode(t, url, "b", nodeOpts{replay: 8})
	onA, _ := a.subscribe(t, "")
	for i := range 10 {
		publish(t, a.bus, i)
	}
	first := nextEvents(t, onA, 10)
	cursor := a.bus.CursorOf(first[4]) // the client saw five events, then lost its connection to a
	for i := 10; i < 40; i++ {
		publish(t, b.bus, i)
	}
	all := append(first, nextEvents(t, onA, 30)...)
	want := all[5:]

	check := func(t *testing.T, n *testNode) {
		n.waitDelivered(t, all[len(all)-1].Seq)
		sub, r := n.subscribe(t, cursor)
		if r.Resync || len(r.Replay) != len(want) {
			t.Fatalf("resume on %s: resync %v, %d events replayed, want %d", n.ID(), r.Resync, len(r.Replay), len(want))
		}
		for i, ev := range r.Replay {
			if ev.ID != want[i].ID || ev.Seq != want[i].Seq || string(ev.Global) != string(want[i].Global) {
				t.Fatalf("replayed event %d: %s seq %d, want %s seq %d", i, ev.ID, ev.Seq, want[i].ID, want[i].Seq)
			}
		}
		publish(t, a.bus, 40)
		if ev := nextEvents(t, sub, 1)[0]; ev.Seq != all[len(all)-1].Seq+1 {
			t.Errorf("the first live event has seq %d, want %d", ev.Seq, all[len(all)-1].Seq+1)
		}
		all = append(all, nextEvents(t, onA, 1)...)
	}
	t.Run("on a node that delivered them all", func(t *testing.T) { check(t, b) })
	t.Run("on a node that joined after them", func(t *testing.T) {
		c := startNode(t, url, "c", nodeOpts{replay: 8})
		want = all[5:]
		check(t, c)
	})
}

func TestADeadNodesSessionsAreTakenOverByALiveOne(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := startNode(t, url, "a", nodeOpts{}), startNode(t, url, "b", nodeOpts{})
	for _, s := range []string{"ses_1", "ses_2"} {
		if l, err := a.Lease(t.Context(), s); err != nil || l.Node != "a" || l.Epoch != 1 {
			t.Fatalf("a's lease of %s = %+v, %v", s, l, err)
		}
	}
	if u, mine, err := b.Owner(t.Context(), "ses_1"); err != nil || mine || u != "http://a.test" {
		t.Fatalf("b: owner of ses_1 = %q mine %v err %v, want a's URL", u, mine, err)
	}
	a.crash() // a dies: no flush, no announcement, its heartbeat just ages

	leases, _ := testenv.Recv(t, b.takeovers, "b takes over a's sessions")
	sort.Slice(leases, func(i, j int) bool { return leases[i].SessionID < leases[j].SessionID })
	if fmt.Sprint(leases) != "[{ses_1 b 2} {ses_2 b 2}]" {
		t.Errorf("b took over %v, want ses_1 and ses_2 with epoch 2", leases)
	}
	if u, mine, err := b.Owner(t.Context(), "ses_2"); err != nil || !mine || u != "http://b.test" {
		t.Errorf("b: owner of ses_2 = %q mine %v err %v, want b", u, mine, err)
	}
	testenv.Eventually(t, "a leaves the registry", func() bool {
		nodes, err := b.store.Nodes(t.Context(), time.Minute)
		return err == nil && len(nodes) == 1 && nodes[0].ID == "b"
	})
}

func TestLeaseTakesOnlyASessionWhoseOwnerIsNoLongerRegistered(t *testing.T) {
	url := testenv.Postgres(t)
	a := startNode(t, url, "a", nodeOpts{})
	if _, err := a.Lease(t.Context(), "ses_1"); err != nil {
		t.Fatal(err)
	}
	a.crash()
	// b's failover loop does not run (b is not started): only Lease could move the session.
	cs := openCluster(t, url)
	takeovers := make(chan []store.SessionLease, 4)
	b, err := New(t.Context(), Options{Store: cs, ID: "b", Heartbeat: 100 * time.Millisecond, StaleAfter: 500 * time.Millisecond,
		OnTakeOver: func(_ context.Context, l []store.SessionLease) { takeovers <- l }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	testenv.Eventually(t, "a is stale", func() bool {
		nodes, err := cs.Nodes(t.Context(), 500*time.Millisecond)
		return err == nil && len(nodes) == 1 && !nodes[0].Alive
	})
	// Stale but registered: the session waits for the failover, which recovers what it takes.
	if l, err := b.Lease(t.Context(), "ses_1"); !errors.Is(err, store.ErrOwnedElsewhere) || l.Node != "a" {
		t.Fatalf("b's lease of a stale node's session = %+v, %v; want a's lease and ErrOwnedElsewhere", l, err)
	}
	if err := cs.RemoveNode(t.Context(), "a", 0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if l, err := b.Lease(t.Context(), "ses_1"); err != nil || l != (store.SessionLease{SessionID: "ses_1", Node: "b", Epoch: 2}) {
			t.Fatalf("b's lease = %+v, %v; want ses_1 with epoch 2", l, err)
		}
	}
	// Lease calls OnTakeOver before it returns: what it reported is in the channel already.
	if got := len(takeovers); got != 1 {
		t.Fatalf("the takeover was reported %d times, want once", got)
	}
	if got := fmt.Sprint(<-takeovers); got != "[{ses_1 b 2}]" {
		t.Errorf("OnTakeOver got %s, want [{ses_1 b 2}]", got)
	}
}

func TestACleanStopHandsTheSessionsOverAtOnce(t *testing.T) {
	url := testenv.Postgres(t)
	// With an hour's StaleAfter, only a's announcement can make b take over.
	a := startNode(t, url, "a", nodeOpts{staleAfter: time.Hour})
	b := startNode(t, url, "b", nodeOpts{staleAfter: time.Hour})
	if _, err := a.Lease(t.Context(), "ses_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lease(t.Context(), "ses_1"); !errors.Is(err, store.ErrOwnedElsewhere) {
		t.Fatalf("b's Lease of a's session: %v, want ErrOwnedElsewhere", err)
	}
	a.Close()
	leases, _ := testenv.Recv(t, b.takeovers, "b takes over a's sessions")
	if fmt.Sprint(leases) != "[{ses_1 b 2}]" {
		t.Errorf("b took over %v, want ses_1 with epoch 2", leases)
	}
}

func TestCloseWritesEveryEventStillQueued(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := startNode(t, url, "a", nodeOpts{}), startNode(t, url, "b", nodeOpts{})
	onB, _ := b.subscribe(t, "")
	const n = 300
	for i := range n {
		publish(t, a.bus, i)
	}
	a.Close() // right after publishing: most events are still queued
	var got []int
	for _, ev := range nextEvents(t, onB, n+1) {
		if Internal(ev.Type) {
			continue // a's departure
		}
		var env struct {
			Properties struct{ I int } `json:"properties"`
		}
		if err := json.Unmarshal(ev.Payload, &env); err != nil {
			t.Fatal(err)
		}
		got = append(got, env.Properties.I)
	}
	if len(got) != n {
		t.Fatalf("b received %d of a's %d events", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("event %d carries %d: the order was not kept", i, v)
		}
	}
}

func TestARestartUnderTheSameIDFencesThePreviousLife(t *testing.T) {
	url := testenv.Postgres(t)
	a := startNode(t, url, "a", nodeOpts{})
	old, err := a.Lease(t.Context(), "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	a.crash()
	again := startNode(t, url, "a", nodeOpts{})
	leases, _ := testenv.Recv(t, again.takeovers, "the restarted node takes its sessions over")
	if len(leases) != 1 || leases[0].SessionID != "ses_1" || leases[0].Node != "a" || leases[0].Epoch != old.Epoch+1 {
		t.Fatalf("took over %v, want ses_1 with epoch %d", leases, old.Epoch+1)
	}
	if l, err := again.store.SessionLease(t.Context(), "ses_1"); err != nil || l != leases[0] {
		t.Errorf("stored lease %+v, %v; want %+v", l, err, leases[0])
	}
	if l, err := again.Lease(t.Context(), "ses_1"); err != nil || l.Epoch != old.Epoch+1 {
		t.Errorf("Lease after the restart = %+v, %v; want epoch %d", l, err, old.Epoch+1)
	}
}

func TestNewRefusesOptionsItCannotRunWith(t *testing.T) {
	url := testenv.Postgres(t)
	cs := openCluster(t, url)
	tests := []struct {
		name string
		o    Options
	}{
		{"a node without an ID is refused", Options{Store: cs}},
		{"a node without a store is refused", Options{ID: "a"}},
		{"a StaleAfter no longer than the heartbeat is refused", Options{Store: cs, ID: "a", Heartbeat: time.Second, StaleAfter: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n, err := New(t.Context(), tt.o); err == nil {
				n.Close()
				t.Fatal("want an error")
			}
		})
	}
	t.Run("a bus whose cursors are not the cluster's is refused", func(t *testing.T) {
		n, err := New(t.Context(), Options{Store: cs, ID: "a"})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		b := bus.New(bus.Options{})
		defer b.Close()
		if err := n.Start(t.Context(), b); err == nil {
			t.Fatal("want an error")
		}
	})
}

func TestInternalTellsNodeSignalsFromClientEvents(t *testing.T) {
	for typ, want := range map[string]bool{"tandem.cluster.claimed": true, typeLeft: true, "session.updated": false, "tandem.clusterx": false} {
		if Internal(typ) != want {
			t.Errorf("Internal(%q) = %v, want %v", typ, !want, want)
		}
	}
}

// BenchmarkEventLatencyAcrossNodes publishes on node a and waits for the event on node b, one at a
// time: the time from Publish to delivery on another node (append, commit, doorbell, read).
func BenchmarkEventLatencyAcrossNodes(b *testing.B) {
	url := testenv.Postgres(b)
	a, c := startNode(b, url, "a", nodeOpts{}), startNode(b, url, "b", nodeOpts{})
	sub, _, err := c.bus.SubscribeContext(b.Context(), "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := a.bus.Publish("/p", "bench.event", map[string]string{"sessionID": "ses_bench"}); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(b.Context(), testenv.Patience)
		_, err := sub.Next(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
