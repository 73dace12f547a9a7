package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/base/bus"
)

// sharedLog stands in for the cluster's event log in these tests: what sink-mode buses publish is
// appended with the next sequence number, and read back as the cluster runtime does (FromLog).
type sharedLog struct {
	mu     sync.Mutex
	events []*bus.Event // events[i].Seq == first+i
	first  uint64
}

func (l *sharedLog) sink(origin string) func(*bus.Event) {
	return func(ev *bus.Event) {
		l.mu.Lock()
		defer l.mu.Unlock()
		seq := l.first + uint64(len(l.events))
		l.events = append(l.events, bus.FromLog(seq, ev.Directory, ev.Type, ev.Payload, origin))
	}
}

// after returns the logged events with after < Seq < before.
func (l *sharedLog) backfill(_ context.Context, after, before uint64) ([]*bus.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*bus.Event
	for _, ev := range l.events {
		if ev.Seq > after && ev.Seq < before {
			out = append(out, ev)
		}
	}
	return out, nil
}

// prune drops the events before seq.
func (l *sharedLog) prune(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.events) > 0 && l.events[0].Seq < seq {
		l.events = l.events[1:]
		l.first++
	}
}

// deliverUpTo feeds b the logged events up to seq that it has not had.
func (l *sharedLog) deliverUpTo(b *bus.Bus, from, to uint64) {
	l.mu.Lock()
	evs := append([]*bus.Event(nil), l.events...)
	l.mu.Unlock()
	for _, ev := range evs {
		if ev.Seq >= from && ev.Seq <= to {
			b.Deliver(ev)
		}
	}
}

func TestClusterModeHandsEventsToTheSinkAndDeliversThemFromTheLog(t *testing.T) {
	var got []*bus.Event
	b := bus.New(bus.Options{Boot: "c1a2-b3", Sink: func(ev *bus.Event) { got = append(got, ev) }})
	defer b.Close()
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := b.Publish(`/tmp/a "dir"`, "session.created", map[string]string{"sessionID": "ses_1"}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Seq != 0 {
		t.Fatalf("the sink got %d events (seq %v), want one without a sequence number", len(got), got)
	}
	if evs, _ := sub.Take(nil); len(evs) != 0 {
		t.Fatalf("a sink-mode bus delivered %d events itself", len(evs))
	}
	published := got[0]
	rebuilt := bus.FromLog(41, published.Directory, published.Type, published.Payload, "node-a")
	if rebuilt.ID != published.ID || string(rebuilt.Global) != string(published.Global) || string(rebuilt.Payload) != string(published.Payload) {
		t.Errorf("rebuilt from the log: %+v\npublished: %+v", rebuilt, published)
	}
	b.Begin(40)
	b.Deliver(rebuilt)
	ev := next(t, sub)
	if ev.Seq != 41 || ev.Origin != "node-a" || b.CursorOf(ev) != "c1a2-b3-41" || b.Cursor() != "c1a2-b3-41" {
		t.Errorf("delivered seq %d origin %q cursor %q (bus at %q), want 41, node-a, c1a2-b3-41", ev.Seq, ev.Origin, b.CursorOf(ev), b.Cursor())
	}
}

func TestDeliverIgnoresWhatItDeliveredAlready(t *testing.T) {
	log := &sharedLog{first: 1}
	b := bus.New(bus.Options{Boot: "c", Sink: log.sink("a")})
	defer b.Close()
	publishN(t, b, "", 0, 3)
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	log.deliverUpTo(b, 1, 3)
	log.deliverUpTo(b, 2, 3) // again, as a tailer that re-read would
	if got := indexes(t, takeAll(t, sub)); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("delivered %v, want [0 1 2] once each", got)
	}
	if b.Ignored() != 2 {
		t.Errorf("Ignored() = %d, want 2", b.Ignored())
	}
}

func TestAClusterCursorIsServedFromTheLog(t *testing.T) {
	tests := []struct {
		name       string
		cursor     uint64
		pruneTo    uint64
		wantResync bool
		want       []int
	}{
		{name: "a cursor inside the ring replays from the ring", cursor: 26, want: seq(26, 29)},
		{name: "a cursor older than the ring is filled in from the log", cursor: 12, want: seq(12, 29)},
		{name: "a cursor from before this node joined is filled in from the log", cursor: 3, want: seq(3, 29)},
		{name: "a cursor whose events were pruned asks for a resync", cursor: 12, pruneTo: 15, wantResync: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &sharedLog{first: 1}
			// Another node published events 1..10 before this one joined.
			other := bus.New(bus.Options{Boot: "c", Sink: log.sink("b")})
			defer other.Close()
			publishN(t, other, "", 0, 10)
			b := bus.New(bus.Options{Boot: "c", Replay: 4, Sink: log.sink("a"), Backfill: log.backfill})
			defer b.Close()
			b.Begin(10)
			publishN(t, b, "", 10, 20)
			log.deliverUpTo(b, 11, 30)
			if tt.pruneTo > 0 {
				log.prune(tt.pruneTo)
			}
			sub, r, err := b.SubscribeContext(t.Context(), fmt.Sprintf("c-%d", tt.cursor), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if r.Resync != tt.wantResync {
				t.Errorf("Resync = %v, want %v", r.Resync, tt.wantResync)
			}
			if got := indexes(t, r.Replay); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("replayed %v, want %v", got, tt.want)
			}
			if r.Cursor != "c-30" {
				t.Errorf("Resume.Cursor = %q, want c-30", r.Cursor)
			}
			publishN(t, b, "", 30, 1)
			log.deliverUpTo(b, 31, 31)
			if got := indexOf(t, next(t, sub)); got != 30 {
				t.Errorf("first live event %d, want 30", got)
			}
			// Without a context (Subscribe), the old cursor cannot be served.
			plain, r, err := b.Subscribe(fmt.Sprintf("c-%d", tt.cursor), nil)
			if err != nil {
				t.Fatal(err)
			}
			plain.Close()
			if tt.cursor < 27 && !r.Resync {
				t.Errorf("Subscribe without a context served a cursor older than the ring")
			}
		})
	}
}

func TestACursorAheadOfThisNodeStartsAfterIt(t *testing.T) {
	log := &sharedLog{first: 1}
	b := bus.New(bus.Options{Boot: "c", Sink: log.sink("a"), Backfill: log.backfill})
	defer b.Close()
	publishN(t, b, "", 0, 5)
	log.deliverUpTo(b, 1, 3) // this node has delivered 3 of the 5 logged events so far

	t.Run("a cursor the log holds is honoured: the events up to it are not sent again", func(t *testing.T) {
		sub, r, err := b.SubscribeContext(t.Context(), "c-5", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if r.Resync || len(r.Replay) != 0 || r.Cursor != "c-5" {
			t.Errorf("resume = %+v, want no resync, no replay, cursor c-5", r)
		}
		publishN(t, b, "", 5, 1)
		log.deliverUpTo(b, 4, 6)
		if got := indexes(t, takeAll(t, sub)); fmt.Sprint(got) != "[5]" {
			t.Errorf("received %v, want only [5]", got)
		}
	})
	t.Run("a cursor past the log's end asks for a resync", func(t *testing.T) {
		sub, r, err := b.SubscribeContext(t.Context(), "c-99", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if !r.Resync || r.Cursor != b.Cursor() {
			t.Errorf("resume = %+v, want a resync from %s", r, b.Cursor())
		}
		publishN(t, b, "", 6, 1)
		log.deliverUpTo(b, 7, 7)
		if got := indexes(t, takeAll(t, sub)); fmt.Sprint(got) != "[6]" {
			t.Errorf("received %v, want [6]", got)
		}
	})
}

func TestABackfillThatFailsAsksForAResync(t *testing.T) {
	log := &sharedLog{first: 1}
	var logged strings.Builder
	b := bus.New(bus.Options{Boot: "c", Replay: 2, Sink: log.sink("a"), Log: slog.New(slog.NewTextHandler(&logged, nil)),
		Backfill: func(context.Context, uint64, uint64) ([]*bus.Event, error) { return nil, errors.New("database down") }})
	defer b.Close()
	publishN(t, b, "", 0, 6)
	log.deliverUpTo(b, 1, 6)
	sub, r, err := b.SubscribeContext(t.Context(), "c-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if !r.Resync || len(r.Replay) != 0 {
		t.Errorf("resume = %+v, want a resync without replay", r)
	}
	if !strings.Contains(logged.String(), "database down") {
		t.Errorf("the failure was not logged: %q", logged.String())
	}
}

// takeAll takes what is queued for sub now (every delivery in these tests is synchronous).
func takeAll(t *testing.T, sub *bus.Subscription) []*bus.Event {
	t.Helper()
	evs, err := sub.Take(nil)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestFromLogReadsTheEventID(t *testing.T) {
	tests := []struct {
		name, payload, want string
	}{
		{"the envelope Publish writes has its id first", `{"id":"evt_1","type":"x","properties":{}}`, "evt_1"},
		{"an id elsewhere is decoded", `{"type":"x","id":"evt_2","properties":{}}`, "evt_2"},
		{"an escaped id is decoded", `{"id":"evt_\u0033","type":"x"}`, "evt_3"},
		{"an envelope without an id has none", `{"type":"x"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bus.FromLog(1, "", "x", []byte(tt.payload), "a").ID; got != tt.want {
				t.Errorf("ID = %q, want %q", got, tt.want)
			}
		})
	}
}
