// Package cluster runs one tandem node among several sharing a PostgreSQL database: it keeps the
// node registered (heartbeats), takes over the sessions of nodes that stopped beating, and carries
// the event bus across nodes — every event published on any node is appended to the shared log
// and delivered, in the log's order and with the log's sequence number, on every node.
//
// Setting a node up takes two steps, because the bus must exist before anything that publishes,
// and the node's writer before the bus:
//
//	node, err := cluster.New(ctx, cluster.Options{Store: cs, ID: id, URL: url, OnTakeOver: recover})
//	b := bus.New(bus.Options{Boot: node.ClusterID(), Sink: node.Sink, Backfill: node.Backfill})
//	// … build the services on b …
//	err = node.Start(ctx, b)
//	defer node.Close()
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// InternalPrefix starts the type of every node-to-node event ("tandem.cluster.claimed", …). They
// travel through the log like any other event but are never shown to clients.
const InternalPrefix = "tandem.cluster."

// Internal reports whether an event type is a node-to-node signal, to be kept out of SSE streams.
func Internal(typ string) bool { return strings.HasPrefix(typ, InternalPrefix) }

// Defaults of Options.
const (
	DefaultHeartbeat  = 2 * time.Second
	DefaultStaleAfter = 10 * time.Second
	DefaultPoll       = time.Second
	DefaultKeep       = 100_000
	// pruneEvery is how often the log is cut back to Keep events.
	pruneEvery = time.Minute
	// flushFor bounds how long Close waits for queued events to reach the log.
	flushFor = 10 * time.Second
	// appendBatch is the most events one AppendEvents transaction carries.
	appendBatch = 512
	// readBatch is the most events one EventsAfter read returns.
	readBatch = 1000
	// queueWarn is the queue length past which the writer's backlog is logged as an error: the
	// store is down or far too slow. Events are still kept (never dropped).
	queueWarn = 100_000
)

// Options configure a node.
type Options struct {
	Store store.Cluster
	ID    string // this node's ID, unique in the cluster and kept across restarts
	URL   string // where this node serves, for requests other nodes forward to it
	Log   *slog.Logger

	Heartbeat  time.Duration // how often the node says it is alive (default 2 s)
	StaleAfter time.Duration // a node not heard from for this long is dead (default 10 s)
	Poll       time.Duration // how often the log is read without a doorbell (default 1 s)
	Keep       int64         // how many events the log keeps (default 100,000); an older cursor resyncs

	// OnTakeOver is told the sessions this node has just taken over, each once: from Start, those
	// of its own previous life (a restart under the same ID); from the failover loop, those of a
	// node that stopped beating or announced it left; from Lease, a session taken from a node
	// that is gone before the failover loop got to it. Each lease has a new epoch: writes under
	// the old one are refused (store.WithFence). The failover loop waits for it, so it should
	// recover what it must (a turn waiting on a person, a tool that was running) and return.
	OnTakeOver func(ctx context.Context, leases []store.SessionLease)
}

// Node is one running member of the cluster.
type Node struct {
	o       Options
	log     *slog.Logger
	cluster string
	started int64

	ctx    context.Context // the node's life: ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bus    *bus.Bus

	// The writer's queue.
	qmu     sync.Mutex
	queue   []*bus.Event
	warned  bool
	stopped bool          // the writer has ended; what Sink gets now cannot be written
	qwake   chan struct{} // a token while the queue has events
	flush   chan struct{} // closed by Close: the writer drains the queue and ends
	wdone   chan struct{} // closed when the writer has ended

	doorbell  chan struct{} // a token when the log may have new events
	leftWake  chan struct{} // a token when a node announced it left
	delivered atomic.Uint64 // the newest sequence number delivered to the bus
	listening atomic.Bool   // the doorbell's listener is connected
	alive     atomic.Int64  // live nodes at the last look

	mu      sync.Mutex
	leases  map[string]store.SessionLease // sessions this node holds
	urls    map[string]string             // node ID → URL, from the last look
	leaving map[string]int64              // nodes that announced they left → the start of that life
	beatAt  time.Time                     // when the last heartbeat that succeeded was sent

	closeOnce sync.Once
	startOnce bool // Start was called
	running   bool // Start launched the loops
}

// New prepares a node: it checks the options and reads the cluster's ID (for the bus's cursors).
// Nothing runs until Start; events given to Sink meanwhile wait in the queue.
func New(ctx context.Context, o Options) (*Node, error) {
	if o.Store == nil || o.ID == "" {
		return nil, errors.New("cluster: a node needs a store and an ID")
	}
	if strings.ContainsAny(o.ID, " \t\n") {
		return nil, fmt.Errorf("cluster: node ID %q contains white space", o.ID)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.StaleAfter <= o.Heartbeat {
		return nil, fmt.Errorf("cluster: StaleAfter (%s) must be longer than Heartbeat (%s)", o.StaleAfter, o.Heartbeat)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	cid, err := o.Store.ClusterID(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: read the cluster ID: %w", err)
	}
	n := &Node{
		o: o, log: o.Log.With("node", o.ID), cluster: cid, started: time.Now().UnixMilli(),
		qwake: make(chan struct{}, 1), flush: make(chan struct{}), wdone: make(chan struct{}),
		doorbell: make(chan struct{}, 1), leftWake: make(chan struct{}, 1),
		leases: map[string]store.SessionLease{}, urls: map[string]string{}, leaving: map[string]int64{},
	}
	n.ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return n, nil
}

// ClusterID is the database's cluster ID: the bus's Boot, so cursors are valid on every node.
func (n *Node) ClusterID() string { return n.cluster }

// ID is this node's ID.
func (n *Node) ID() string { return n.o.ID }

// Start registers the node, fences its previous life (a node restarted under the same ID takes its
// own sessions over with new epochs, reported to OnTakeOver before Start returns), and starts the
// heartbeat, the failover loop, the event writer, the tailer that delivers the log to b, and the
// pruning of the log. b must be built with Boot = ClusterID(), Sink = Sink and Backfill = Backfill.
func (n *Node) Start(ctx context.Context, b *bus.Bus) error {
	if n.startOnce {
		return errors.New("cluster: the node has started already")
	}
	n.startOnce = true
	if !strings.HasPrefix(b.Cursor(), n.cluster+"-") {
		return fmt.Errorf("cluster: the bus's cursors (%s) are not this cluster's (%s): build it with Boot = ClusterID()", b.Cursor(), n.cluster)
	}
	n.bus = b
	nodes, err := n.o.Store.Nodes(ctx, n.o.StaleAfter)
	if err != nil {
		return fmt.Errorf("cluster: list nodes: %w", err)
	}
	for _, nd := range nodes {
		if nd.ID == n.o.ID && nd.Alive {
			// Either this node's previous life, stopped less than StaleAfter ago, or another
			// process given the same ID: the two would take each other's sessions over.
			n.log.Warn("cluster: a node with this ID was alive moments ago; if another process runs under it, give each its own ID",
				"started", time.UnixMilli(nd.Started).UTC(), "url", nd.URL)
		}
	}
	beatAt := time.Now()
	if err := n.o.Store.Heartbeat(ctx, n.self()); err != nil {
		return fmt.Errorf("cluster: register node %s: %w", n.o.ID, err)
	}
	n.mu.Lock()
	n.beatAt = beatAt
	n.mu.Unlock()
	mine, err := n.o.Store.TakeOver(ctx, n.o.ID, n.o.ID)
	if err != nil {
		return fmt.Errorf("cluster: fence the previous life of node %s: %w", n.o.ID, err)
	}
	last, err := n.o.Store.LastEventSeq(ctx)
	if err != nil {
		return fmt.Errorf("cluster: read the event log: %w", err)
	}
	b.Begin(uint64(last))
	n.delivered.Store(uint64(last))
	n.running = true
	n.wg.Add(6)
	go n.beat()
	go n.failover()
	go n.write()
	go n.listen()
	go n.tail(uint64(last))
	go n.prune()
	if mine = n.adopt(mine); len(mine) > 0 {
		n.log.Info("cluster: took over the sessions of this node's previous life", "sessions", len(mine))
		if n.o.OnTakeOver != nil {
			n.o.OnTakeOver(ctx, mine)
		}
	}
	return nil
}

func (n *Node) self() store.Node {
	return store.Node{ID: n.o.ID, URL: n.o.URL, Started: n.started}
}

// every runs f every d until the node stops.
func (n *Node) every(d time.Duration, f func()) {
	defer n.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// beat keeps the node's heartbeat fresh. A node that could not beat for StaleAfter (the database
// was unreachable, or the process was paused) may have lost its sessions to a takeover, so it
// forgets the leases it holds: Lease asks the store again.
func (n *Node) beat() {
	n.every(n.o.Heartbeat, func() {
		at := time.Now()
		if err := n.o.Store.Heartbeat(n.ctx, n.self()); err != nil {
			if n.ctx.Err() == nil {
				n.log.Error("cluster: heartbeat failed", "err", err)
			}
			return
		}
		n.mu.Lock()
		if at.Sub(n.beatAt) >= n.o.StaleAfter {
			n.log.Warn("cluster: this node was silent for longer than StaleAfter; its sessions may have been taken over", "silent", at.Sub(n.beatAt).Round(time.Millisecond))
			clear(n.leases)
		}
		n.beatAt = at
		n.mu.Unlock()
	})
}

// failover takes over the sessions of every node not heard from within StaleAfter, and of every
// node that announced it left (Close). Nodes racing for the same node are safe: TakeOver moves its
// sessions in one statement, so one node gets them and the others get none.
func (n *Node) failover() {
	defer n.wg.Done()
	t := time.NewTicker(n.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.leftWake:
		}
		n.check()
	}
}

func (n *Node) check() {
	nodes, err := n.o.Store.Nodes(n.ctx, n.o.StaleAfter)
	if err != nil {
		if n.ctx.Err() == nil {
			n.log.Error("cluster: list nodes", "err", err)
		}
		return
	}
	n.mu.Lock()
	left := n.leaving
	n.leaving = map[string]int64{}
	n.mu.Unlock()
	urls := make(map[string]string, len(nodes))
	var dead []store.Node
	for _, nd := range nodes {
		started, gone := left[nd.ID]
		switch {
		case nd.ID == n.o.ID:
			urls[nd.ID] = nd.URL
		case !nd.Alive || (gone && max(started-nd.Started, nd.Started-started) <= 1): // ms, through the database's timestamps
			dead = append(dead, nd)
		default:
			urls[nd.ID] = nd.URL
		}
	}
	n.alive.Store(int64(len(urls)))
	n.mu.Lock()
	n.urls = urls
	n.mu.Unlock()
	for _, nd := range dead {
		leases, err := n.o.Store.TakeOver(n.ctx, nd.ID, n.o.ID)
		if err != nil {
			if n.ctx.Err() == nil {
				n.log.Error("cluster: take over a dead node's sessions", "dead", nd.ID, "err", err)
			}
			continue
		}
		if leases = n.adopt(leases); len(leases) > 0 {
			n.log.Warn("cluster: took over the sessions of a node that is gone", "node", nd.ID, "sessions", len(leases), "alive", nd.Alive)
			if n.o.OnTakeOver != nil {
				n.o.OnTakeOver(n.ctx, leases)
			}
		}
		if err := n.o.Store.RemoveNode(n.ctx, nd.ID, nd.Started); err != nil && n.ctx.Err() == nil {
			n.log.Error("cluster: remove a node that is gone", "node", nd.ID, "err", err)
		}
	}
}

// typeLeft is the event a node publishes as it stops cleanly, so the others take over its sessions
// at once instead of after StaleAfter.
const typeLeft = InternalPrefix + "left"

type leftEvent struct {
	Node    string `json:"node"`
	Started int64  `json:"started"` // which life of the node left: a restart under the same ID is not gone
}

// left notes a node's departure for the failover loop.
func (n *Node) left(ev *bus.Event) {
	var env struct {
		Properties leftEvent `json:"properties"`
	}
	if err := json.Unmarshal(ev.Payload, &env); err != nil || env.Properties.Node == "" {
		n.log.Error("cluster: a malformed departure event", "payload", string(ev.Payload), "err", err)
		return
	}
	n.mu.Lock()
	n.leaving[env.Properties.Node] = env.Properties.Started
	n.mu.Unlock()
	select {
	case n.leftWake <- struct{}{}:
	default:
	}
}

// adopt caches leases this node holds and returns those it did not hold already: when the
// failover loop and Lease take the same session over at once, only one reports it to OnTakeOver.
func (n *Node) adopt(leases []store.SessionLease) []store.SessionLease {
	n.mu.Lock()
	defer n.mu.Unlock()
	var fresh []store.SessionLease
	for _, l := range leases {
		if n.leases[l.SessionID] != l {
			n.leases[l.SessionID] = l
			fresh = append(fresh, l)
		}
	}
	return fresh
}

// Lease returns this node's lease of a session, acquiring it if no registered node owns it (store
// AcquireSession with no staleness: a registered owner, however stale, keeps the session until the
// failover takes it over with its recovery); with store.ErrOwnedElsewhere the lease names the node
// that owns it. A session taken from an owner no longer registered is reported to OnTakeOver, as
// the failover would have.
//
// The leases this node holds are cached. A lease can only be lost to a takeover after its node
// was not heard from for StaleAfter, and a node that notices such a silence in itself forgets the
// cache; the store's fencing refuses any write made under a lost lease regardless.
func (n *Node) Lease(ctx context.Context, sessionID string) (store.SessionLease, error) {
	n.mu.Lock()
	l, ok := n.leases[sessionID]
	if ok && time.Since(n.beatAt) >= n.o.StaleAfter {
		clear(n.leases)
		ok = false
	}
	n.mu.Unlock()
	if ok {
		return l, nil
	}
	prev, err := n.o.Store.SessionLease(ctx, sessionID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.SessionLease{}, err
	}
	l, err = n.o.Store.AcquireSession(ctx, sessionID, n.o.ID, 0)
	if err != nil {
		return l, err
	}
	fresh := n.adopt([]store.SessionLease{l})
	if len(fresh) > 0 && prev.Node != "" && prev.Node != n.o.ID && l.Epoch > prev.Epoch {
		n.log.Warn("cluster: took over a session of a node that is gone", "session", sessionID, "node", prev.Node)
		if n.o.OnTakeOver != nil {
			n.o.OnTakeOver(ctx, []store.SessionLease{l})
		}
	}
	return l, nil
}

// ErrOwnerUnknown is returned by Owner when a live node owns the session but its URL is unknown
// (it registered without one).
var ErrOwnerUnknown = errors.New("cluster: the session's owner has no URL to forward to")

// Owner says which node runs a session, for forwarding a request that must run on the owner: mine
// is true when it is this node (which acquires a session no registered node owns); otherwise nodeURL is
// the owner's advertised URL.
func (n *Node) Owner(ctx context.Context, sessionID string) (nodeURL string, mine bool, err error) {
	l, err := n.Lease(ctx, sessionID)
	if err == nil {
		return n.o.URL, true, nil
	}
	if !errors.Is(err, store.ErrOwnedElsewhere) {
		return "", false, err
	}
	n.mu.Lock()
	u, ok := n.urls[l.Node]
	n.mu.Unlock()
	if !ok {
		nodes, err := n.o.Store.Nodes(ctx, n.o.StaleAfter)
		if err != nil {
			return "", false, fmt.Errorf("cluster: find the owner of session %s: %w", sessionID, err)
		}
		for _, nd := range nodes {
			if nd.ID == l.Node {
				u = nd.URL
			}
		}
	}
	if u == "" {
		return "", false, fmt.Errorf("%w: session %s, node %s", ErrOwnerUnknown, sessionID, l.Node)
	}
	return u, false, nil
}

// Health is a node's view of the cluster, for GET /global/health.
type Health struct {
	Node      string // this node's ID
	Cluster   string // the database's cluster ID
	Delivered uint64 // the newest log sequence number delivered to this node's bus
	Listening bool   // the doorbell listener has connected and runs (the store reconnects it by itself; while it is down, events arrive by polling)
	Alive     int    // live nodes at the last look, this one included
	Queued    int    // events published here and not yet in the log
	Ignored   uint64 // events the bus refused as already delivered
	Sessions  int    // sessions this node holds the lease of (those it has run or taken over since it started)
}

// Health reports the node's state.
func (n *Node) Health() Health {
	n.qmu.Lock()
	queued := len(n.queue)
	n.qmu.Unlock()
	n.mu.Lock()
	leases := len(n.leases)
	n.mu.Unlock()
	h := Health{
		Node: n.o.ID, Cluster: n.cluster, Delivered: n.delivered.Load(), Listening: n.listening.Load(),
		Alive: int(n.alive.Load()), Queued: queued, Sessions: leases,
	}
	if n.bus != nil {
		h.Ignored = n.bus.Ignored()
	}
	return h
}

// Close stops the node: it announces that it leaves (so the other nodes take its sessions over at
// once, with OnTakeOver, rather than after StaleAfter), writes the events still queued (for up to
// 10 s), and ends every loop. No goroutine of the node outlives Close. Stop what publishes on the
// bus before: an event published after Close is not logged.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		n.stop(true)
	})
}

// crash ends the node as a crash would (for tests): see stop.
func (n *Node) crash() {
	n.closeOnce.Do(func() {
		n.stop(false)
	})
}

// stop ends the node; with clean false it ends like a crash (for tests): nothing is flushed or
// announced, and the others take its sessions over once its heartbeat is StaleAfter old.
func (n *Node) stop(clean bool) {
	if n.running && clean {
		n.bus.Emit(n.log, "", typeLeft, leftEvent{Node: n.o.ID, Started: n.started})
		close(n.flush)
		t := time.NewTimer(flushFor)
		select {
		case <-n.wdone:
		case <-t.C:
			n.log.Error("cluster: queued events were not written before the node stopped", "queued", n.Health().Queued)
		}
		t.Stop()
	}
	n.cancel()
	n.wg.Wait()
	n.qmu.Lock()
	n.stopped = true
	lost := len(n.queue)
	n.qmu.Unlock()
	if lost > 0 && clean {
		n.log.Error("cluster: events lost at stop", "events", lost)
	}
}
