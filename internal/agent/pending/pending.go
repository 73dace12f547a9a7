// Package pending holds requests that wait for a person: permission approvals, questions and MCP
// elicitations all have the same life — created, announced, listed, answered once by whichever client
// gets there first (or timed out, or cancelled with their session) — so they share this one broker.
//
// The broker never blocks the caller of Reply on the waiting side, and exactly one resolution wins:
// later replies learn which decision won.
package pending

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
)

// Cause says how a request was resolved.
type Cause string

// The ways a request ends.
const (
	Replied   Cause = "reply"   // a client answered
	TimedOut  Cause = "timeout" // nobody answered in time
	Cancelled Cause = "cancel"  // the turn was aborted, the session deleted, or the asker gave up
	// Stopped: the server shut down while the request waited. It is not resolved, announced or
	// recorded: like a crash, a graceful stop leaves it stored, and the next start asks it again
	// with the same ID.
	Stopped Cause = "stopped"
)

// ErrServerStopping is the cause a waiter's context is cancelled with (context.WithCancelCause)
// when the server shuts down: Ask then lets the request go without resolving it (Stopped).
var ErrServerStopping = errors.New("the server is shutting down")

// ServerStopping reports whether ctx ended because the server is shutting down.
func ServerStopping(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrServerStopping)
}

// Item is one pending request as clients list it.
type Item[Req any] struct {
	ID        string
	SessionID string
	Created   time.Time
	Request   Req
}

// Resolution is how an item ended.
type Resolution[Rep any] struct {
	Reply  Rep
	Cause  Cause
	By     Who // the client that answered; zero for timeouts and cancels
	At     time.Time
	Reason string // for timeouts and cancels: a sentence for the model and the log
}

// Who identifies the client that answered, for the decision log.
type Who struct {
	Client string // the User-Agent or a client name
	Addr   string // the remote address
}

// Hooks let the owning domain package publish events and record decisions. They run synchronously,
// outside the broker's lock, in the order things happen: Resolved before the waiter wakes (so the
// "replied" event precedes whatever the waiter does next), Recorded after it (slow work such as a
// database write, which should not delay the waiter).
type Hooks[Req, Rep any] struct {
	Asked    func(Item[Req])
	Resolved func(Item[Req], Resolution[Rep])
	Recorded func(Item[Req], Resolution[Rep])
}

// Broker holds the pending items of one kind.
type Broker[Req, Rep any] struct {
	prefix   id.Prefix
	noun     string // "Permission request", for messages
	ids      *id.Source
	hooks    Hooks[Req, Rep]
	fallback func(reason string) Rep // the reply recorded for timeouts and cancels
	now      func() time.Time

	mu       sync.Mutex
	waiting  map[string]*entry[Req, Rep]
	reserved map[string]*entry[Req, Rep] // reserved and not yet claimed by Ask
	decided  map[string]Resolution[Rep]  // recent outcomes, so a late reply gets 409 with the winner
	order    []string                    // decided IDs, oldest first, to bound the map

	shared *Shared[Req] // set by Share: requests are settled across nodes
}

type entry[Req, Rep any] struct {
	item Item[Req]
	done chan Resolution[Rep] // buffered 1; written once under the lock
}

const rememberDecided = 4096

// New makes a broker whose IDs carry prefix. noun names the kind in error messages ("Permission
// request"); fallback gives the reply to record when a request times out or is cancelled.
func New[Req, Rep any](prefix id.Prefix, noun string, fallback func(reason string) Rep, hooks Hooks[Req, Rep]) *Broker[Req, Rep] {
	return &Broker[Req, Rep]{
		prefix:   prefix,
		noun:     noun,
		ids:      id.NewSource(),
		hooks:    hooks,
		fallback: fallback,
		now:      time.Now,
		waiting:  make(map[string]*entry[Req, Rep]),
		reserved: make(map[string]*entry[Req, Rep]),
		decided:  make(map[string]Resolution[Rep]),
	}
}

// Reserve lists and announces a request before anyone waits for it: a request restored after a
// restart is pending from the moment the server starts, while the turn that will Ask it with the
// same ID is still being resumed. A reply in between is kept for that Ask.
func (b *Broker[Req, Rep]) Reserve(itemID, sessionID string, req Req, created time.Time) {
	e := &entry[Req, Rep]{
		item: Item[Req]{ID: itemID, SessionID: sessionID, Created: created, Request: req},
		done: make(chan Resolution[Rep], 1),
	}
	b.mu.Lock()
	b.waiting[itemID] = e
	b.reserved[itemID] = e
	b.mu.Unlock()
	if b.hooks.Asked != nil {
		b.hooks.Asked(e.item)
	}
	// Across nodes, an answer may have been claimed while the node that asked was down.
	b.Apply(itemID)
}

// Unreserve cancels a reserved request that no Ask claimed (its turn could not reach it); it
// reports whether it did.
func (b *Broker[Req, Rep]) Unreserve(itemID, reason string) bool {
	b.mu.Lock()
	_, ok := b.reserved[itemID]
	delete(b.reserved, itemID)
	b.mu.Unlock()
	return ok && b.Cancel(itemID, reason)
}

// NewID reserves an ID for a request the caller is about to Ask, so the request body can carry it.
func (b *Broker[Req, Rep]) NewID() string { return b.ids.New(b.prefix) }

// Ask registers a request under id and blocks until it is resolved: by Reply, by the timeout (zero
// means none), or by ctx ending (Cancelled). It returns the resolution that won.
func (b *Broker[Req, Rep]) Ask(ctx context.Context, itemID, sessionID string, req Req, timeout time.Duration) Resolution[Rep] {
	b.mu.Lock()
	e, reserved := b.reserved[itemID]
	if reserved {
		delete(b.reserved, itemID)
	} else {
		e = &entry[Req, Rep]{
			item: Item[Req]{ID: itemID, SessionID: sessionID, Created: b.now(), Request: req},
			done: make(chan Resolution[Rep], 1),
		}
		b.waiting[itemID] = e
	}
	b.mu.Unlock()
	if !reserved && b.hooks.Asked != nil {
		b.hooks.Asked(e.item)
	}

	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-e.done:
		return r
	case <-expired:
		b.settle(itemID, Resolution[Rep]{Cause: TimedOut, Reason: "no one answered within " + timeout.String()})
	case <-ctx.Done():
		if ServerStopping(ctx) {
			b.Release(itemID)
		} else {
			b.settle(itemID, Resolution[Rep]{Cause: Cancelled, Reason: "the request was cancelled"})
		}
	}
	// Either our resolve won, or a reply won the race a moment earlier; done holds the winner.
	return <-e.done
}

// Release lets a waiting item go without resolving it, for a shutdown: no hook runs, nothing is
// announced or recorded, and its Ask returns Stopped. It reports false when the item was not
// waiting (a resolution won first).
func (b *Broker[Req, Rep]) Release(itemID string) bool {
	b.mu.Lock()
	e, ok := b.waiting[itemID]
	delete(b.waiting, itemID)
	delete(b.reserved, itemID)
	b.mu.Unlock()
	if ok {
		e.done <- Resolution[Rep]{Cause: Stopped, At: b.now(), Reason: ErrServerStopping.Error()}
	}
	return ok
}

// Reply answers a waiting item. Exactly one resolution wins; a reply to an item already resolved is
// a Conflict carrying the winning decision, and to an unknown ID a NotFound.
func (b *Broker[Req, Rep]) Reply(itemID string, rep Rep, by Who) error {
	r := Resolution[Rep]{Reply: rep, Cause: Replied, By: by}
	var won bool
	var prev *Resolution[Rep]
	if b.shared == nil {
		won, prev = b.resolve(itemID, r)
	} else {
		var err error
		if won, prev, err = b.claim(itemID, r); err != nil {
			return err
		}
	}
	if won {
		return nil
	}
	if prev != nil {
		e := errs.Named(errs.Conflict, "AlreadyResolvedError", "%s %s was already resolved (%s)", b.noun, itemID, prev.Cause).
			With("requestID", itemID).With("cause", string(prev.Cause)).With("reply", prev.Reply)
		if prev.By.Client != "" {
			e = e.With("client", prev.By.Client) // who answered first, for the loser to show
		}
		return e
	}
	return errs.Named(errs.NotFound, "NotFoundError", "%s not found: %s", b.noun, itemID).With("requestID", itemID)
}

// Cancel resolves one waiting item as cancelled; it reports whether the item was waiting.
func (b *Broker[Req, Rep]) Cancel(itemID, reason string) bool {
	return b.settle(itemID, Resolution[Rep]{Cause: Cancelled, Reason: reason})
}

// resolve records r for itemID if it is still waiting. It returns whether r won, and otherwise the
// earlier resolution if one is remembered.
func (b *Broker[Req, Rep]) resolve(itemID string, r Resolution[Rep]) (bool, *Resolution[Rep]) {
	r.At = b.now()
	if r.Cause != Replied {
		r.Reply = b.fallback(r.Reason)
	}
	b.mu.Lock()
	e, ok := b.waiting[itemID]
	if !ok {
		prev, seen := b.decided[itemID]
		b.mu.Unlock()
		if seen {
			return false, &prev
		}
		return false, nil
	}
	delete(b.waiting, itemID)
	b.decided[itemID] = r
	b.order = append(b.order, itemID)
	if len(b.order) > rememberDecided {
		delete(b.decided, b.order[0])
		b.order = b.order[1:]
	}
	b.mu.Unlock()
	if b.hooks.Resolved != nil {
		b.hooks.Resolved(e.item, r)
	}
	e.done <- r
	if b.hooks.Recorded != nil {
		b.hooks.Recorded(e.item, r)
	}
	return true, nil
}

// Get returns one waiting item (across nodes, also one another node asked).
func (b *Broker[Req, Rep]) Get(itemID string) (Item[Req], bool) {
	b.mu.Lock()
	e, ok := b.waiting[itemID]
	b.mu.Unlock()
	if ok {
		return e.item, true
	}
	if b.shared != nil {
		if items := b.remote(itemID); len(items) == 1 {
			return items[0], true
		}
	}
	return Item[Req]{}, false
}

// Local returns the items waiting on this node alone (a tool call's own requests), oldest first.
func (b *Broker[Req, Rep]) Local(sessionID string) []Item[Req] {
	return b.list(sessionID, false)
}

// List returns the waiting items (across nodes, every node's), oldest first; a non-empty sessionID keeps only that session's.
func (b *Broker[Req, Rep]) List(sessionID string) []Item[Req] {
	return b.list(sessionID, true)
}

func (b *Broker[Req, Rep]) list(sessionID string, everyNode bool) []Item[Req] {
	b.mu.Lock()
	out := make([]Item[Req], 0, len(b.waiting))
	for _, e := range b.waiting {
		if sessionID == "" || e.item.SessionID == sessionID {
			out = append(out, e.item)
		}
	}
	b.mu.Unlock()
	if b.shared != nil && everyNode {
		for _, it := range b.remote("") {
			if sessionID == "" || it.SessionID == sessionID {
				out = append(out, it)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
