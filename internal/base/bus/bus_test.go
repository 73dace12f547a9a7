package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// publishN publishes n events of type "test.event" carrying their index.
func publishN(t *testing.T, b *bus.Bus, dir string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := b.Publish(dir, "test.event", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
}

func indexOf(t *testing.T, ev *bus.Event) int {
	t.Helper()
	var env struct {
		Type       string         `json:"type"`
		Properties map[string]int `json:"properties"`
	}
	if err := json.Unmarshal(ev.Payload, &env); err != nil {
		t.Fatalf("payload %s: %v", ev.Payload, err)
	}
	return env.Properties["i"]
}

func indexes(t *testing.T, evs []*bus.Event) []int {
	t.Helper()
	out := make([]int, len(evs))
	for i, ev := range evs {
		out[i] = indexOf(t, ev)
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func TestPublishEncodesBothEnvelopes(t *testing.T) {
	b := bus.New(bus.Options{})
	defer b.Close()
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(`/tmp/a "quoted" dir`, "session.created", map[string]string{"sessionID": "ses_1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish("", "server.thing", nil); err != nil {
		t.Fatal(err)
	}
	first, second := next(t, sub), next(t, sub)

	var payload struct {
		ID         string            `json:"id"`
		Type       string            `json:"type"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(first.Payload, &payload); err != nil {
		t.Fatalf("payload is not JSON: %s", first.Payload)
	}
	if !strings.HasPrefix(payload.ID, "evt_") || payload.ID != first.ID || payload.Type != "session.created" || payload.Properties["sessionID"] != "ses_1" {
		t.Errorf("payload = %+v", payload)
	}
	var global struct {
		Directory string          `json:"directory"`
		Payload   json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(first.Global, &global); err != nil {
		t.Fatalf("global envelope is not JSON: %s", first.Global)
	}
	if global.Directory != `/tmp/a "quoted" dir` || string(global.Payload) != string(first.Payload) {
		t.Errorf("global = %s", first.Global)
	}
	if want := `"properties":{}`; !strings.Contains(string(second.Payload), want) {
		t.Errorf("nil properties: payload %s lacks %s", second.Payload, want)
	}
	if strings.Contains(string(second.Global), "directory") {
		t.Errorf("a server-wide event must have no directory: %s", second.Global)
	}
	if second.Seq != first.Seq+1 {
		t.Errorf("sequence numbers %d then %d", first.Seq, second.Seq)
	}
}

func TestPublishRefusesPropertiesThatDoNotEncode(t *testing.T) {
	b := bus.New(bus.Options{})
	defer b.Close()
	if err := b.Publish("", "bad", map[string]any{"f": func() {}}); err == nil {
		t.Fatal("want an encoding error")
	}
}

func TestReplay(t *testing.T) {
	tests := []struct {
		name       string
		cursor     func(b *bus.Bus, seen []*bus.Event) string
		wantResync bool
		want       []int
	}{
		{
			name:   "a cursor inside the ring replays exactly the events after it",
			cursor: func(b *bus.Bus, seen []*bus.Event) string { return b.CursorOf(seen[9]) },
			want:   seq(10, 19),
		},
		{
			name:   "the newest cursor replays nothing",
			cursor: func(b *bus.Bus, seen []*bus.Event) string { return b.Cursor() },
		},
		{
			name:   "the cursor just before the oldest kept event replays the whole ring",
			cursor: func(b *bus.Bus, seen []*bus.Event) string { return b.CursorOf(seen[3]) },
			want:   seq(4, 19),
		},
		{
			name:       "a cursor older than the ring asks for a resync",
			cursor:     func(b *bus.Bus, seen []*bus.Event) string { return b.CursorOf(seen[2]) },
			wantResync: true,
		},
		{
			name: "a cursor from another boot asks for a resync",
			cursor: func(b *bus.Bus, seen []*bus.Event) string {
				other := bus.New(bus.Options{})
				defer other.Close()
				publishN(t, other, "", 0, 12)
				return other.CursorOf(seen[0])
			},
			wantResync: true,
		},
		{
			name:       "a cursor ahead of the bus asks for a resync",
			cursor:     func(b *bus.Bus, seen []*bus.Event) string { return strings.Split(b.Cursor(), "-")[0] + "-999" },
			wantResync: true,
		},
		{
			name:       "garbage asks for a resync",
			cursor:     func(*bus.Bus, []*bus.Event) string { return "not-a-cursor" },
			wantResync: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bus.New(bus.Options{Replay: 16})
			defer b.Close()
			rec, _, err := b.Subscribe("", nil)
			if err != nil {
				t.Fatal(err)
			}
			publishN(t, b, "", 0, 20)
			var seen []*bus.Event
			for range 20 {
				seen = append(seen, next(t, rec))
			}
			sub, r, err := b.Subscribe(tt.cursor(b, seen), nil)
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
			if r.Cursor != b.Cursor() {
				t.Errorf("Resume.Cursor = %q, want the newest %q", r.Cursor, b.Cursor())
			}
			// The live stream continues right after the replay.
			publishN(t, b, "", 20, 1)
			if got := indexOf(t, next(t, sub)); got != 20 {
				t.Errorf("first live event %d, want 20", got)
			}
		})
	}
}

// The ring also keeps no more than ReplayBytes of JSON: past it the oldest events go, so a client
// behind them resynchronises, and one after them still replays.
func TestReplayKeepsToItsByteBudget(t *testing.T) {
	b := bus.New(bus.Options{Replay: 64})
	defer b.Close()
	rec, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	publishN(t, b, "", 0, 1)
	first := next(t, rec)
	// Five events of 300 KB: the 1 MiB budget holds the newest three.
	big := strings.Repeat("x", 300<<10)
	var seen []*bus.Event
	for i := range 5 {
		if err := b.Publish("", "big", map[string]any{"i": i + 1, "text": big}); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, next(t, rec))
	}
	tests := []struct {
		name       string
		cursor     string
		wantResync bool
		want       []int
	}{
		{"a cursor before the events let go asks for a resync", b.CursorOf(first), true, nil},
		{"a cursor before the oldest event still kept asks for a resync", b.CursorOf(seen[0]), true, nil},
		{"the cursor just before the oldest event kept replays all three", b.CursorOf(seen[1]), false, []int{3, 4, 5}},
		{"a cursor among the kept events replays those after it", b.CursorOf(seen[3]), false, []int{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, r, err := b.Subscribe(tt.cursor, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if r.Resync != tt.wantResync {
				t.Errorf("Resync = %v, want %v", r.Resync, tt.wantResync)
			}
			var got []int
			for _, ev := range r.Replay {
				var env struct {
					Properties struct{ I int } `json:"properties"`
				}
				if err := json.Unmarshal(ev.Payload, &env); err != nil {
					t.Fatal(err)
				}
				got = append(got, env.Properties.I)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("replayed %v, want %v", got, tt.want)
			}
		})
	}
	// An event larger than the whole budget is still kept, alone.
	if err := b.Publish("", "big", map[string]any{"i": 6, "text": strings.Repeat("y", 2<<20)}); err != nil {
		t.Fatal(err)
	}
	huge := next(t, rec)
	sub, r, err := b.Subscribe(b.CursorOf(seen[4]), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if r.Resync || len(r.Replay) != 1 || r.Replay[0] != huge {
		t.Errorf("after an event over the budget: resync %v, %d replayed; want that event alone", r.Resync, len(r.Replay))
	}
}

func TestReplayAppliesTheFilter(t *testing.T) {
	b := bus.New(bus.Options{})
	defer b.Close()
	start := b.Cursor()
	publishN(t, b, "/a", 0, 3)
	publishN(t, b, "/b", 3, 3)
	publishN(t, b, "", 6, 1)
	sub, r, err := b.Subscribe(start, func(ev *bus.Event) bool { return ev.Directory == "" || ev.Directory == "/b" })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := indexes(t, r.Replay); fmt.Sprint(got) != "[3 4 5 6]" {
		t.Errorf("replayed %v, want [3 4 5 6]", got)
	}
	publishN(t, b, "/a", 7, 1)
	publishN(t, b, "/b", 8, 1)
	if got := indexOf(t, next(t, sub)); got != 8 {
		t.Errorf("live event %d, want 8 (the /a one is filtered out)", got)
	}
}

// TestSubscribeDuringPublishLosesNothing races subscribers against a publisher: every subscriber must
// see, through replay plus its live queue, each event after its cursor exactly once and in order.
func TestSubscribeDuringPublishLosesNothing(t *testing.T) {
	b := bus.New(bus.Options{Replay: 10000})
	defer b.Close()
	const total = 2000
	start := b.Cursor()
	var wg sync.WaitGroup
	wg.Go(func() { publishN(t, b, "", 0, total) })
	results := make([][]int, 8)
	for k := range results {
		wg.Go(func() {
			sub, r, err := b.Subscribe(start, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer sub.Close()
			got := indexes(t, r.Replay)
			for len(got) < total {
				// t.Fatal is for the test's goroutine; here a missing event ends this subscriber.
				ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience)
				e, err := sub.Next(ctx)
				cancel()
				if err != nil {
					t.Errorf("subscriber got %d of %d events, then: %v", len(got), total, err)
					return
				}
				got = append(got, indexOf(t, e))
			}
			results[k] = got
		})
	}
	wg.Wait()
	want := fmt.Sprint(seq(0, total-1))
	for k, got := range results {
		if fmt.Sprint(got) != want {
			t.Errorf("subscriber %d saw a different sequence (len %d)", k, len(got))
		}
	}
}

func TestABurstReachesEveryHealthyReaderWhateverItsLength(t *testing.T) {
	b := bus.New(bus.Options{MaxQueued: 1 << 20})
	defer b.Close()
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Far more events than any fixed queue held, published before the reader looks: the reader is
	// healthy (it takes the whole queue when it wakes), so nothing is dropped.
	publishN(t, b, "", 0, 5000)
	<-sub.Ready()
	evs, err := sub.Take(nil)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if got := indexes(t, evs); fmt.Sprint(got) != fmt.Sprint(seq(0, 4999)) {
		t.Errorf("took %d events, want 0..4999 in order", len(got))
	}
	if evs, _ := sub.Take(nil); len(evs) != 0 {
		t.Errorf("a second Take returned %d events, want none", len(evs))
	}
}

func TestAStuckSubscriberIsDroppedAndOthersKeepReceiving(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name   string
		opts   bus.Options
		before func() // what happens between the stuck reader's last event and the next publish
		events int
	}{
		{
			name:   "more bytes waiting than the budget cut the reader off",
			opts:   bus.Options{MaxQueued: 4 << 10},
			before: func() {},
			events: 200,
		},
		{
			name:   "events waiting untaken for longer than the stall limit cut the reader off",
			opts:   bus.Options{MaxStall: 30 * time.Second, Now: func() time.Time { return clock }},
			before: func() { clock = clock.Add(31 * time.Second) },
			events: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bus.New(tt.opts)
			defer b.Close()
			stuck, _, err := b.Subscribe("", nil)
			if err != nil {
				t.Fatal(err)
			}
			healthy, _, err := b.Subscribe("", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer healthy.Close()
			for i := range tt.events {
				if i == 1 {
					tt.before()
				}
				publishN(t, b, "", i, 1)
				if got := indexOf(t, next(t, healthy)); got != i {
					t.Fatalf("healthy subscriber got %d, want %d", got, i)
				}
			}
			// What the stuck reader had not taken went with it.
			if got, err := drain(t, stuck); !errors.Is(err, bus.ErrSlow) || len(got) != 0 {
				t.Errorf("stuck reader: took %v then %v, want nothing then ErrSlow", got, err)
			}
			if n := b.Subscribers(); n != 1 {
				t.Errorf("Subscribers() = %d, want 1", n)
			}
			stuck.Close() // harmless after the drop
		})
	}
}

func TestCloseEndsEverySubscriptionWithErrClosed(t *testing.T) {
	b := bus.New(bus.Options{})
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, b, "", 0, 2)
	b.Close()
	b.Close() // idempotent
	got, err := drain(t, sub)
	if fmt.Sprint(got) != "[0 1]" {
		t.Errorf("events queued before Close: got %v, want [0 1]", got)
	}
	if !errors.Is(err, bus.ErrClosed) || !errors.Is(sub.Err(), bus.ErrClosed) {
		t.Errorf("ended with %v, Err() = %v, want ErrClosed", err, sub.Err())
	}
	if _, _, err := b.Subscribe("", nil); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Subscribe after Close: err = %v, want ErrClosed", err)
	}
	if err := b.Publish("", "late", nil); err != nil {
		t.Errorf("Publish after Close: %v", err)
	}
}

func TestCloseOfASubscriptionIsCleanAndRepeatable(t *testing.T) {
	b := bus.New(bus.Options{})
	defer b.Close()
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	sub.Close()
	if got, err := drain(t, sub); len(got) != 0 || !errors.Is(err, bus.ErrUnsubscribed) {
		t.Errorf("after Close: took %v then %v, want nothing then ErrUnsubscribed", got, err)
	}
	if b.Subscribers() != 0 {
		t.Errorf("Subscribers() = %d, want 0", b.Subscribers())
	}
	publishN(t, b, "", 0, 1) // must not panic on the closed channel
}

func BenchmarkPublish(b *testing.B) {
	bs := bus.New(bus.Options{})
	defer bs.Close()
	props := map[string]any{"sessionID": "ses_x", "info": map[string]any{"title": "bench"}}
	for b.Loop() {
		_ = bs.Publish("/tmp", "session.updated", props)
	}
}

// next is the subscriber's next event; the test fails if none arrives within testenv.Patience or the
// stream ends.
func next(t *testing.T, sub *bus.Subscription) *bus.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience)
	defer cancel()
	e, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("no next event: %v", err)
	}
	return e
}

// drain takes what the subscription still holds once it has ended, and why it ended.
func drain(t *testing.T, sub *bus.Subscription) ([]int, error) {
	t.Helper()
	var got []int
	for {
		ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience)
		e, err := sub.Next(ctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the subscription did not end within %s", testenv.Patience)
			}
			return got, err
		}
		got = append(got, indexOf(t, e))
	}
}

func TestEmitLogsAnEventThatCannotBeEncoded(t *testing.T) {
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	b := bus.New(bus.Options{})
	defer b.Close()
	b.Emit(log, "", "broken.event", map[string]any{"f": func() {}})
	if !strings.Contains(logged.String(), "type=broken.event") {
		t.Fatalf("the encoding failure was not logged: %q", logged.String())
	}
	var none *bus.Bus
	none.Emit(log, "", "ignored", nil) // a service built without a bus emits nothing
}
