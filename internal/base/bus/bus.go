// Package bus carries every business event from the domain packages to whoever listens (the SSE
// streams, the web UI, tests). Publishing never blocks: each subscriber has its own queue, which a
// healthy reader drains however large the burst; only a subscriber that is truly stuck — more than
// Options.MaxQueued bytes waiting, or nothing taken for Options.MaxStall — is cut off (it reconnects
// and replays) so that no one else waits for it and memory stays bounded.
//
// Every event gets a sequence number and is kept in a bounded ring, so a client that reconnects with
// its last cursor receives exactly what it missed. A cursor names the boot of the bus as well as the
// sequence number; a cursor from another boot, or older than the ring, cannot be replayed and the
// client must resynchronise.
package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/base/id"
)

// Event is one published event, encoded once at publish time and shared read-only by every subscriber.
type Event struct {
	Seq       uint64
	ID        string // evt_…
	Type      string // dotted name: session.created, permission.asked, ...
	Directory string // the project directory the event belongs to; empty for server-wide events
	// Payload is the instance envelope {"id","type","properties"} as JSON.
	Payload json.RawMessage
	// Global is the /global/event envelope {"directory"?, "payload"} as JSON.
	Global json.RawMessage
}

// Options size the bus.
type Options struct {
	// Replay is how many recent events are kept for Last-Event-ID replay (default 4096).
	Replay int
	// MaxQueued is how many bytes of events may wait for one subscriber before it is cut off
	// (default 8 MiB). A reader that keeps up never gets near it: the stream writer takes the whole
	// queue at once, so a burst of any length costs it one write per wake-up.
	MaxQueued int
	// MaxStall is how long events may wait untaken before the subscriber is cut off (default 30 s):
	// a reader whose connection accepts nothing at all, however little it is sent.
	MaxStall time.Duration
	// Now is the clock; tests set it to make a stall without waiting for one.
	Now func() time.Time
}

// Bus is the event hub. The zero value is not usable; call New.
type Bus struct {
	boot      string
	ids       *id.Source
	maxQueued int
	maxStall  time.Duration
	now       func() time.Time

	mu     sync.Mutex
	seq    uint64
	ring   []*Event // ring[seq % len(ring)]
	subs   map[*Subscription]struct{}
	closed bool
}

// New returns a bus with a fresh boot identifier.
func New(o Options) *Bus {
	if o.Replay <= 0 {
		o.Replay = 4096
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 8 << 20
	}
	if o.MaxStall <= 0 {
		o.MaxStall = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Bus{
		boot:      hex.EncodeToString(b[:]),
		ids:       id.NewSource(),
		maxQueued: o.MaxQueued,
		maxStall:  o.MaxStall,
		now:       o.Now,
		ring:      make([]*Event, o.Replay),
		subs:      make(map[*Subscription]struct{}),
	}
}

// Emit publishes an event raised as a side effect, where no caller could act on an encoding
// failure: the failure, a programming error, is logged to log instead of returned. A nil Bus emits
// nothing, so a service built without one (in tests, for tools) needs no check of its own.
func (b *Bus) Emit(log *slog.Logger, directory, typ string, properties any) {
	if b == nil {
		return
	}
	if err := b.Publish(directory, typ, properties); err != nil {
		log.Error("publish failed", "type", typ, "err", err)
	}
}

// Publish encodes and delivers an event. It never blocks on subscribers. properties must marshal
// to a JSON object; an encoding failure is a programming error and is returned.
func (b *Bus) Publish(directory, typ string, properties any) error {
	props, err := json.Marshal(properties)
	if err != nil {
		return fmt.Errorf("bus: encode %s: %w", typ, err)
	}
	if string(props) == "null" {
		props = []byte("{}")
	}
	evID := b.ids.New(id.Event)
	payload := make([]byte, 0, len(props)+len(typ)+64)
	payload = append(payload, `{"id":"`...)
	payload = append(payload, evID...)
	payload = append(payload, `","type":`...)
	payload = strconv.AppendQuote(payload, typ)
	payload = append(payload, `,"properties":`...)
	payload = append(payload, props...)
	payload = append(payload, '}')

	global := make([]byte, 0, len(payload)+len(directory)+32)
	global = append(global, '{')
	if directory != "" {
		global = append(global, `"directory":`...)
		global = strconv.AppendQuote(global, directory)
		global = append(global, ',')
	}
	global = append(global, `"payload":`...)
	global = append(global, payload...)
	global = append(global, '}')
	ev := &Event{ID: evID, Type: typ, Directory: directory, Payload: payload, Global: global}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.seq++
	ev.Seq = b.seq
	b.ring[ev.Seq%uint64(len(b.ring))] = ev
	now := b.now()
	for s := range b.subs {
		if !s.accepts(ev) {
			continue
		}
		if len(s.queue) > 0 && (s.queued+len(ev.Global) > b.maxQueued || now.Sub(s.since) > b.maxStall) {
			b.dropLocked(s, ErrSlow)
			continue
		}
		if len(s.queue) == 0 {
			s.since = now
			s.signal()
		}
		s.queue = append(s.queue, ev)
		s.queued += len(ev.Global)
	}
	return nil
}

// NewEventID makes an evt_ ID for a frame that is not published (heartbeats, connection notices).
func (b *Bus) NewEventID() string { return b.ids.New(id.Event) }

// Cursor is the position of the newest event, as a Last-Event-ID value.
func (b *Bus) Cursor() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cursor(b.seq)
}

func (b *Bus) cursor(seq uint64) string { return b.boot + "-" + strconv.FormatUint(seq, 10) }

// Filter selects which events a subscription receives; nil receives everything.
type Filter func(*Event) bool

// Subscription is one listener's queue. Wait on Ready, then Take what is queued (or call Next for
// one event at a time) until Take reports that the subscription has ended and why.
type Subscription struct {
	bus    *Bus
	filter Filter
	ready  chan struct{} // holds a token while events wait or once the subscription has ended

	// Guarded by bus.mu.
	queue  []*Event
	queued int       // bytes in queue
	since  time.Time // when the oldest event in queue was queued
	ended  bool
	err    error
}

// Reasons a subscription ends.
var (
	ErrSlow   = fmt.Errorf("bus: subscriber fell behind and was disconnected")
	ErrClosed = fmt.Errorf("bus: shutting down")
	// ErrUnsubscribed is what Take and Next report after the subscriber's own Close.
	ErrUnsubscribed = fmt.Errorf("bus: subscription closed")
)

func (s *Subscription) accepts(ev *Event) bool { return s.filter == nil || s.filter(ev) }

// signal leaves a token in ready unless one is already there; it never blocks.
func (s *Subscription) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Ready receives when events are waiting or the subscription has ended. A wake-up may find nothing
// to take (the events were taken already); call Take and wait again.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Take appends every waiting event to dst, oldest first, and returns it. A non-nil error means the
// subscription has ended and nothing more will come: ErrClosed (the events queued before the bus
// closed are still returned with it), ErrSlow, or ErrUnsubscribed.
func (s *Subscription) Take(dst []*Event) ([]*Event, error) {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	dst = append(dst, s.queue...)
	clear(s.queue)
	s.queue, s.queued = s.queue[:0], 0
	if cap(s.queue) > 1024 {
		s.queue = nil // a burst's backing array is not kept by an idle subscriber
	}
	if s.ended {
		return dst, s.err
	}
	return dst, nil
}

// Next returns the oldest waiting event, waiting for one until ctx is done. It is for readers that
// handle one event at a time; a stream writer should Take whole batches instead.
func (s *Subscription) Next(ctx context.Context) (*Event, error) {
	for {
		s.bus.mu.Lock()
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.queued -= len(ev.Global)
			s.since = s.bus.now() // the reader made progress: the stall clock restarts
			if len(s.queue) > 0 {
				s.signal() // keep the token for the rest
			}
			s.bus.mu.Unlock()
			return ev, nil
		}
		ended, err := s.ended, s.err
		s.bus.mu.Unlock()
		if ended {
			return nil, err
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Err says why the subscription ended: ErrSlow, ErrClosed, ErrUnsubscribed, or nil while it runs.
func (s *Subscription) Err() error {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.err
}

// Close ends the subscription; it is safe to call more than once.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.bus.endLocked(s, ErrUnsubscribed)
}

// dropLocked cuts a subscriber off; what it had not taken is discarded with it.
func (b *Bus) dropLocked(s *Subscription, reason error) {
	clear(s.queue)
	s.queue, s.queued = nil, 0
	b.endLocked(s, reason)
}

func (b *Bus) endLocked(s *Subscription, reason error) {
	if _, ok := b.subs[s]; !ok {
		return
	}
	delete(b.subs, s)
	s.ended, s.err = true, reason
	s.signal()
}

// Resume is the outcome of subscribing from a cursor.
type Resume struct {
	// Replay holds the missed events, oldest first, already matched against the filter.
	Replay []*Event
	// Resync is true when the cursor could not be honoured (another boot, or older than the ring):
	// the client must refetch its state.
	Resync bool
	// Cursor is the position the subscription starts after.
	Cursor string
}

// Subscribe registers a listener. With a non-empty lastEventID the events after it are returned for
// replay; registration and replay happen atomically, so no event is lost or repeated in between.
func (b *Bus) Subscribe(lastEventID string, filter Filter) (*Subscription, Resume, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, Resume{}, ErrClosed
	}
	s := &Subscription{bus: b, ready: make(chan struct{}, 1), filter: filter}
	var r Resume
	if lastEventID != "" {
		from, ok := b.parseCursor(lastEventID)
		oldest := uint64(1)
		if b.seq > uint64(len(b.ring)) {
			oldest = b.seq - uint64(len(b.ring)) + 1
		}
		switch {
		case !ok || from > b.seq || from+1 < oldest:
			r.Resync = true
		default:
			for seq := from + 1; seq <= b.seq; seq++ {
				if ev := b.ring[seq%uint64(len(b.ring))]; s.accepts(ev) {
					r.Replay = append(r.Replay, ev)
				}
			}
		}
	}
	r.Cursor = b.cursor(b.seq)
	b.subs[s] = struct{}{}
	return s, r, nil
}

func (b *Bus) parseCursor(c string) (uint64, bool) {
	boot, seq, ok := strings.Cut(c, "-")
	if !ok || boot != b.boot {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
}

// CursorOf returns the Last-Event-ID value of an event published on this bus.
func (b *Bus) CursorOf(ev *Event) string { return b.cursor(ev.Seq) }

// Subscribers reports how many listeners are registered.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Close ends every subscription with ErrClosed and refuses new ones. Events queued before Close are
// still handed to readers that Take them.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for s := range b.subs {
		b.endLocked(s, ErrClosed)
	}
}
