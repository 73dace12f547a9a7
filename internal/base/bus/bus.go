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
//
// Several nodes on one database run the bus in cluster mode: Publish encodes an event and hands it
// to Options.Sink (the node's writer to the shared event log) instead of delivering it, and the
// node's tailer feeds every logged event — its own and the other nodes' — back through Deliver with
// the log's sequence number. Options.Boot is then the cluster's ID, so a cursor is valid on every
// node and across restarts, and a cursor older than the ring is served from the log through
// Options.Backfill instead of asking the client to resynchronise.
package bus

import (
	"bytes"
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
	// Origin is the ID of the node that published the event (cluster mode; empty on a single node).
	Origin string
}

// Options size the bus.
type Options struct {
	// Replay is how many recent events are kept for Last-Event-ID replay (default 4096).
	Replay int
	// ReplayBytes bounds the JSON those events hold (default 1 MiB; the newest event is kept
	// whatever its size). A reconnect within a minute of streaming finds what it missed either way;
	// the bound keeps a run of large events (diffs, long tool output) from holding 4096 of them.
	ReplayBytes int
	// MaxQueued is how many bytes of events may wait for one subscriber before it is cut off
	// (default 8 MiB). A reader that keeps up never gets near it: the stream writer takes the whole
	// queue at once, so a burst of any length costs it one write per wake-up.
	MaxQueued int
	// MaxStall is how long events may wait untaken before the subscriber is cut off (default 30 s):
	// a reader whose connection accepts nothing at all, however little it is sent.
	MaxStall time.Duration
	// Now is the clock; tests set it to make a stall without waiting for one.
	Now func() time.Time

	// Boot is the prefix of every cursor (default: random, so a cursor from an earlier run is not
	// mistaken for one of this run). In cluster mode it is the cluster's ID: the sequence numbers
	// are the shared log's, the same on every node and across restarts.
	Boot string
	// Sink, when set, puts the bus in cluster mode: Publish encodes the event (ID, Payload, Global)
	// and hands it to Sink, which must not block for long, instead of sequencing and delivering it.
	// The event comes back through Deliver once the log has given it its sequence number.
	Sink func(*Event)
	// Backfill returns the events with after < Seq < before, oldest first: Subscribe calls it
	// (through SubscribeContext, outside the bus's lock) for a cursor older than the ring, and to
	// check a cursor ahead of this bus. Nil: such a cursor asks for a resync.
	Backfill func(ctx context.Context, after, before uint64) ([]*Event, error)
	// Log receives what the bus cannot return to anyone: a Deliver out of order, a failed Backfill
	// (default: discarded).
	Log *slog.Logger
}

// Bus is the event hub. The zero value is not usable; call New.
type Bus struct {
	boot        string
	ids         *id.Source
	replayBytes int
	maxQueued   int
	maxStall    time.Duration
	now         func() time.Time
	sink        func(*Event)
	backfill    func(ctx context.Context, after, before uint64) ([]*Event, error)
	log         *slog.Logger

	mu      sync.Mutex
	seq     uint64
	first   uint64   // the oldest sequence number the ring can hold: events before it were never in it, or were let go
	ring    []*Event // ring[seq % len(ring)]
	held    int      // the bytes the ring's events hold (ringSize)
	subs    map[*Subscription]struct{}
	closed  bool
	ignored uint64 // Deliver calls refused for an old sequence number
}

// New returns a bus with a fresh boot identifier.
func New(o Options) *Bus {
	if o.Replay <= 0 {
		o.Replay = 4096
	}
	if o.ReplayBytes <= 0 {
		o.ReplayBytes = 1 << 20
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
	if o.Boot == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.Boot = hex.EncodeToString(b[:])
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Bus{
		boot:        o.Boot,
		ids:         id.NewSource(),
		replayBytes: o.ReplayBytes,
		maxQueued:   o.MaxQueued,
		maxStall:    o.MaxStall,
		now:         o.Now,
		sink:        o.Sink,
		backfill:    o.Backfill,
		log:         o.Log,
		first:       1,
		ring:        make([]*Event, o.Replay),
		subs:        make(map[*Subscription]struct{}),
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

// Publish encodes and delivers an event (in cluster mode: hands it to Options.Sink). It never
// blocks on subscribers. properties must marshal to a JSON object; an encoding failure is a
// programming error and is returned.
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
	payload, global := envelopes(directory, payload)
	ev := &Event{ID: evID, Type: typ, Directory: directory, Payload: payload, Global: global}
	if b.sink != nil {
		b.sink(ev)
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.seq++
	ev.Seq = b.seq
	b.deliverLocked(ev)
	return nil
}

// envelopes wraps an instance envelope for /global/event and returns both, the instance envelope
// as the part of the global one it is: the replay ring then holds each event's JSON once, not
// twice (the part is capped, so appending to it never writes into the whole). Publish and FromLog
// both build them here, so an event rebuilt from the log is byte for byte the one its publisher made.
func envelopes(directory string, payload []byte) (instance, global []byte) {
	global = make([]byte, 0, len(payload)+len(directory)+32)
	global = append(global, '{')
	if directory != "" {
		global = append(global, `"directory":`...)
		global = strconv.AppendQuote(global, directory)
		global = append(global, ',')
	}
	global = append(global, `"payload":`...)
	start := len(global)
	global = append(global, payload...)
	end := len(global)
	global = append(global, '}')
	return global[start:end:end], global
}

// FromLog rebuilds an event from its row in the cluster's log: payload is the instance envelope
// Publish made (so ID comes from it), and Global is rebuilt the way Publish built it.
func FromLog(seq uint64, directory, typ string, payload []byte, origin string) *Event {
	payload, global := envelopes(directory, payload)
	return &Event{
		Seq: seq, ID: payloadID(payload), Type: typ, Directory: directory, Origin: origin,
		Payload: payload, Global: global,
	}
}

// payloadID is the "id" of an instance envelope. Publish writes it first, so it is read without
// decoding what may be a large payload; anything else is decoded (an envelope without an id gives
// an empty ID and is still delivered).
func payloadID(payload []byte) string {
	const head = `{"id":"`
	if rest, ok := bytes.CutPrefix(payload, []byte(head)); ok {
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return string(rest[:i])
		}
	}
	var env struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(payload, &env)
	return env.ID
}

// Deliver sequences and fans out an event whose Seq is already set: in cluster mode, each event of
// the shared log, in the log's order. Seq must grow; an event at or before the bus's position
// (already delivered) is ignored, logged and counted (Ignored). An event after a gap (the log was
// pruned past this node, or Begin was not called) starts the ring afresh; what came before it is
// served through Backfill.
func (b *Bus) Deliver(ev *Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if ev.Seq <= b.seq {
		b.ignored++
		b.log.Warn("bus: an event at or before the bus's position was not delivered again",
			"seq", ev.Seq, "position", b.seq, "type", ev.Type, "origin", ev.Origin)
		return
	}
	if ev.Seq != b.seq+1 {
		b.restartRingLocked(ev.Seq)
	}
	b.seq = ev.Seq
	b.deliverLocked(ev)
}

// Begin sets the position a bus in cluster mode starts after: the log's newest sequence number
// when the node joins. Those events are not in the ring (Backfill serves them), and Cursor and new
// subscriptions start from there. It has no effect on a bus already past seq.
func (b *Bus) Begin(seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq > b.seq {
		b.seq = seq
		b.restartRingLocked(seq + 1)
	}
}

// Ignored reports how many events Deliver refused as already delivered.
func (b *Bus) Ignored() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ignored
}

// restartRingLocked empties the ring: the next event it keeps is first's.
func (b *Bus) restartRingLocked(first uint64) {
	clear(b.ring)
	b.first, b.held = first, 0
}

// oldestLocked is the oldest sequence number the ring still holds (when it holds any).
func (b *Bus) oldestLocked() uint64 {
	oldest := b.first
	if n := uint64(len(b.ring)); b.seq >= n && b.seq-n+1 > oldest {
		oldest = b.seq - n + 1
	}
	return oldest
}

// ringSize is what an event costs the ring: its JSON (the instance envelope is part of the global
// one) and about as much again as its struct and strings for small ones.
func ringSize(ev *Event) int { return len(ev.Global) + 128 }

// keepLocked puts ev (the newest event, b.seq) in the ring, letting the oldest go while the ring
// holds more than replayBytes.
func (b *Bus) keepLocked(ev *Event) {
	slot := &b.ring[ev.Seq%uint64(len(b.ring))]
	if *slot != nil {
		b.held -= ringSize(*slot)
	}
	*slot = ev
	b.held += ringSize(ev)
	for b.held > b.replayBytes {
		oldest := b.oldestLocked()
		if oldest >= ev.Seq {
			break
		}
		if old := &b.ring[oldest%uint64(len(b.ring))]; *old != nil {
			b.held -= ringSize(*old)
			*old = nil
		}
		b.first = oldest + 1
	}
}

// deliverLocked keeps ev in the ring and queues it for every subscriber that wants it.
func (b *Bus) deliverLocked(ev *Event) {
	b.keepLocked(ev)
	now := b.now()
	for s := range b.subs {
		if ev.Seq <= s.after || !s.accepts(ev) {
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
	after  uint64 // events up to this sequence number are not queued: the client has them already
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
// A cursor older than the ring asks for a resync; SubscribeContext serves it from the log instead.
func (b *Bus) Subscribe(lastEventID string, filter Filter) (*Subscription, Resume, error) {
	return b.subscribe(lastEventID, filter, nil)
}

// SubscribeContext is Subscribe for a bus in cluster mode: a cursor older than the ring is served
// from the log through Options.Backfill (the ring's part is taken atomically with the registration,
// the older part fetched after it under ctx and put first), and a cursor a little ahead of this
// node (another node had delivered further when the client left it) is checked against the log and
// honoured: the subscription starts after it. A Backfill that fails, or finds the cursor's events
// pruned, asks for a resync, as a single node does for a cursor older than its ring.
func (b *Bus) SubscribeContext(ctx context.Context, lastEventID string, filter Filter) (*Subscription, Resume, error) {
	var fetch func(after, before uint64) ([]*Event, error)
	if b.backfill != nil {
		fetch = func(after, before uint64) ([]*Event, error) { return b.backfill(ctx, after, before) }
	}
	return b.subscribe(lastEventID, filter, fetch)
}

// subscribe is both; fetch is nil for Subscribe (and without Options.Backfill).
func (b *Bus) subscribe(lastEventID string, filter Filter, fetch func(after, before uint64) ([]*Event, error)) (*Subscription, Resume, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, Resume{}, ErrClosed
	}
	s := &Subscription{bus: b, ready: make(chan struct{}, 1), filter: filter}
	var r Resume
	var from, oldest uint64
	older, ahead := false, false
	if lastEventID != "" {
		var ok bool
		from, ok = b.parseCursor(lastEventID)
		oldest = b.oldestLocked()
		canFetch := fetch != nil
		switch {
		case !ok:
			r.Resync = true
		case from > b.seq && canFetch:
			ahead, s.after = true, from
		case from+1 < oldest && canFetch:
			older = true
			r.Replay = b.replayLocked(s, oldest, b.seq)
		case from > b.seq || from+1 < oldest:
			r.Resync = true
		default:
			r.Replay = b.replayLocked(s, from+1, b.seq)
		}
	}
	position := b.seq
	r.Cursor = b.cursor(max(position, s.after))
	b.subs[s] = struct{}{}
	b.mu.Unlock()

	switch {
	case ahead:
		// The events up to the cursor reach this bus through Deliver and are skipped; the cursor
		// is real if the log holds its event.
		evs, err := fetch(position, from+1)
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Seq != from {
			if err != nil {
				b.log.Warn("bus: could not check a cursor ahead of this node; the client resynchronises", "cursor", lastEventID, "err", err)
			}
			// Not a position of the log: start afresh, the client resynchronises.
			s.Close()
			s, r, err = b.subscribe("", filter, nil)
			r.Resync = true
			return s, r, err
		}
	case older:
		evs, err := fetch(from, oldest)
		if err != nil {
			b.log.Warn("bus: could not fetch the events before the ring; the client resynchronises", "cursor", lastEventID, "err", err)
		}
		if err != nil || len(evs) == 0 || evs[0].Seq != from+1 {
			r.Resync, r.Replay = true, nil // pruned (or unreadable): what the client missed is gone
			break
		}
		replay := make([]*Event, 0, len(evs)+len(r.Replay))
		for _, ev := range evs {
			if ev.Seq < oldest && s.accepts(ev) {
				replay = append(replay, ev)
			}
		}
		r.Replay = append(replay, r.Replay...)
	}
	return s, r, nil
}

// replayLocked returns the ring's events from..to that s accepts.
func (b *Bus) replayLocked(s *Subscription, from, to uint64) []*Event {
	var out []*Event
	for seq := from; seq <= to; seq++ {
		if ev := b.ring[seq%uint64(len(b.ring))]; s.accepts(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func (b *Bus) parseCursor(c string) (uint64, bool) {
	i := strings.LastIndexByte(c, '-')
	if i < 0 || c[:i] != b.boot {
		return 0, false
	}
	n, err := strconv.ParseUint(c[i+1:], 10, 64)
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
