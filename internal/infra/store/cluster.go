package store

import (
	"context"
	"errors"
	"time"
)

// Several tandem nodes can share one PostgreSQL database. What they coordinate through is below:
// a registry of live nodes, one owner per session (with an epoch that fences a node which lost its
// ownership), one ordered event log every node tails, and claims that settle a waiting request
// once whichever node the answer arrives at. SQLite, one node's store, implements none of it
// (DB.Cluster reports false).

// Node is one tandem process sharing the database.
type Node struct {
	ID        string
	URL       string // where the node serves, for requests forwarded to the owner of a session
	Started   int64  // unix ms
	Heartbeat int64  // unix ms, by the database's clock
	Alive     bool   // its heartbeat is newer than the staleAfter the caller asked with
}

// SessionLease says which node runs a session. Epoch grows by one each time the session changes
// hands, so a write carrying an older epoch is from a node that lost it.
type SessionLease struct {
	SessionID string
	Node      string
	Epoch     int64
}

// LoggedEvent is one event in the cluster-wide log. Seq orders every node's events; the log only
// ever shows a reader a seq after every smaller one has committed.
type LoggedEvent struct {
	Seq       int64
	ID        string // the event's own ID (evt_…): appending it again logs nothing
	Node      string // the node that published it
	Directory string
	Type      string
	Payload   []byte // the instance envelope {"id","type","properties"}
}

// PendingClaim is the answer a node records for a waiting request (PendingRequest.State becomes
// "claimed"); the request's owner applies it.
type PendingClaim struct {
	Reply []byte // the owning package's resolution document
	By    string // who answered, for the loser's 409 and the decision log
	At    int64  // unix ms
}

// The states of a stored pending request.
const (
	PendingWaiting = "pending" // nobody has answered
	PendingClaimed = "claimed" // answered (on any node), not yet applied by the node that asked
	PendingDone    = "done"    // resolved and applied; kept a while so late answers learn the winner
)

// ErrFenced is returned for a write made under a session lease that is no longer held: another
// node has taken the session over, and what this node was doing for it is void.
var ErrFenced = errors.New("store: this node no longer owns the session")

// ErrOwnedElsewhere is returned by AcquireSession when a live node other than the caller owns
// the session; the lease returned with it names that node.
var ErrOwnedElsewhere = errors.New("store: the session is owned by another live node")

// Cluster is what several nodes on one database coordinate through.
type Cluster interface {
	// ClusterID identifies the database (made once, at its first migration): event cursors carry
	// it, so a cursor from another database is never mistaken for one of this log.
	ClusterID(ctx context.Context) (string, error)

	// Heartbeat records that the node is alive (inserting it the first time), by the database's clock.
	Heartbeat(ctx context.Context, n Node) error
	// Nodes lists the registered nodes; Alive is set for those heard from within staleAfter.
	Nodes(ctx context.Context, staleAfter time.Duration) ([]Node, error)
	// RemoveNode forgets a node (one that stopped, or whose sessions were all taken over). With
	// started (unix ms, from Nodes) it forgets that life of the node only: one that has registered
	// again meanwhile (restarted under the same ID) stays. 0 forgets whichever life it is.
	RemoveNode(ctx context.Context, id string, started int64) error

	// AcquireSession makes node the owner of a session: a session nobody owns gets epoch 1; one
	// the node owns already keeps its lease; one whose owner has not been heard from within
	// staleAfter is taken over with its epoch plus one. A session a live node owns is left as it
	// is and returned with ErrOwnedElsewhere. With staleAfter <= 0 a registered owner counts as
	// live however stale: only TakeOver (the failover, which recovers what it takes) moves it.
	AcquireSession(ctx context.Context, sessionID, node string, staleAfter time.Duration) (SessionLease, error)
	// SessionLease returns a session's lease, or ErrNotFound when no node has run it yet.
	SessionLease(ctx context.Context, sessionID string) (SessionLease, error)
	// TakeOver moves every session of from to node, each with its epoch plus one, in one
	// transaction, and returns the new leases. from may equal node (a node restarted under the same
	// ID fences its previous life).
	TakeOver(ctx context.Context, from, node string) ([]SessionLease, error)

	// AppendEvents adds events to the log in one transaction, giving them consecutive sequence
	// numbers (returned, in order), and rings the doorbell after the commit.
	AppendEvents(ctx context.Context, evs []LoggedEvent) ([]int64, error)
	// EventsAfter returns up to limit events with Seq > after, oldest first.
	EventsAfter(ctx context.Context, after int64, limit int) ([]LoggedEvent, error)
	// LastEventSeq is the newest event's sequence number (0 for an empty log).
	LastEventSeq(ctx context.Context) (int64, error)
	// PruneEvents deletes all but the newest keep events; it returns how many it deleted.
	PruneEvents(ctx context.Context, keep int64) (int64, error)
	// Secret returns the secret stored under name, storing candidate first when there is none:
	// concurrent first starts of several nodes agree on one.
	Secret(ctx context.Context, name string, candidate []byte) ([]byte, error)

	// Listen calls ring after every doorbell, and once after each (re)connection of the listener
	// (a doorbell may have been missed meanwhile). It returns when ctx ends, or with an error it
	// cannot recover from.
	Listen(ctx context.Context, ring func()) error
}

// fenceKey carries a session lease in a context: a write made with that context is refused with
// ErrFenced unless the lease is still the session's.
type fenceKey struct{}

// WithFence returns a context whose store writes for the lease's session succeed only while the
// lease still holds (PostgreSQL; SQLite has one node and ignores it).
func WithFence(ctx context.Context, l SessionLease) context.Context {
	return context.WithValue(ctx, fenceKey{}, l)
}

// FenceOf returns the lease a context carries.
func FenceOf(ctx context.Context) (SessionLease, bool) {
	l, ok := ctx.Value(fenceKey{}).(SessionLease)
	return l, ok
}
