// Package bus carries every business event from the domain packages to whoever listens (the SSE
// streams, the web UI, tests). Publishing never blocks: each subscriber has a bounded queue, and one
// that falls behind is cut off (it reconnects and replays) so that no one else waits for it.
//
// Every event gets a sequence number and is kept in a bounded ring, so a client that reconnects with
// its last cursor receives exactly what it missed. A cursor names the boot of the bus as well as the
// sequence number; a cursor from another boot, or older than the ring, cannot be replayed and the
// client must resynchronise.
package bus

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"tandem/id"
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
	// Queue is how many events may wait for one subscriber before it is cut off (default 256). The
	// queue is allocated up front for every subscriber, so its size is most of what an idle SSE
	// client costs; the stream writer drains it in one write, so it only fills while a client's
	// socket is not accepting data at all.
	Queue int
}

// Bus is the event hub. The zero value is not usable; call New.
type Bus struct {
	boot  string
	ids   *id.Source
	queue int

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
	if o.Queue <= 0 {
		o.Queue = 256
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Bus{
		boot:  hex.EncodeToString(b[:]),
		ids:   id.NewSource(),
		queue: o.Queue,
		ring:  make([]*Event, o.Replay),
		subs:  make(map[*Subscription]struct{}),
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
	for s := range b.subs {
		if !s.accepts(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			b.dropLocked(s, ErrSlow)
		}
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

// Subscription is one listener's queue. Read Events until it is closed, then Err says why.
type Subscription struct {
	bus    *Bus
	ch     chan *Event
	filter Filter
	err    error // set under bus.mu before ch is closed
}

// Reasons a subscription ends.
var (
	ErrSlow   = fmt.Errorf("bus: subscriber fell behind and was disconnected")
	ErrClosed = fmt.Errorf("bus: shutting down")
)

func (s *Subscription) accepts(ev *Event) bool { return s.filter == nil || s.filter(ev) }

// Events delivers events in sequence order; it is closed when the subscription ends.
func (s *Subscription) Events() <-chan *Event { return s.ch }

// Err says why Events was closed: ErrSlow, ErrClosed, or nil after Close.
func (s *Subscription) Err() error {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.err
}

// Close ends the subscription; it is safe to call more than once.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	if _, ok := s.bus.subs[s]; ok {
		delete(s.bus.subs, s)
		close(s.ch)
	}
}

func (b *Bus) dropLocked(s *Subscription, reason error) {
	if _, ok := b.subs[s]; !ok {
		return
	}
	delete(b.subs, s)
	s.err = reason
	close(s.ch)
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
	s := &Subscription{bus: b, ch: make(chan *Event, b.queue), filter: filter}
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
// still delivered to readers that drain their channel.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for s := range b.subs {
		b.dropLocked(s, ErrClosed)
	}
}
