package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestCoalescer(t *testing.T) {
	t.Run("the first update goes out at once and the newest state is published by Close", func(t *testing.T) {
		state, published := 0, []int{}
		c := newCoalescer(time.Hour, func() { published = append(published, state) })
		for i := 1; i <= 1000; i++ {
			c.Add(func() { state = i })
		}
		if len(published) != 1 || published[0] != 1 {
			t.Errorf("before Close published %v, want [1]", published)
		}
		c.Close()
		if len(published) != 2 || published[1] != 1000 {
			t.Errorf("after Close published %v, want [1 1000]", published)
		}
		c.Add(func() { state = 1001 })
		c.Flush()
		if len(published) != 2 {
			t.Errorf("an update after Close was published: %v", published)
		}
	})
	t.Run("a quiet stream publishes its last update after the interval without a Flush", func(t *testing.T) {
		done := make(chan int, 2)
		state := 0
		c := newCoalescer(time.Millisecond, func() { done <- state })
		defer c.Close()
		c.Add(func() { state = 1 })
		c.Add(func() { state = 2 })
		if got, _ := testenv.Recv(t, done, "the first update"); got != 1 {
			t.Errorf("first publication carried %d, want 1", got)
		}
		if got, _ := testenv.Recv(t, done, "the timer's publication"); got != 2 {
			t.Errorf("the timer published %d, want 2", got)
		}
	})
	t.Run("with no interval every update is published", func(t *testing.T) {
		n := 0
		c := newCoalescer(0, func() { n++ })
		for range 10 {
			c.Add(func() {})
		}
		c.Close()
		if n != 10 {
			t.Errorf("published %d times, want 10", n)
		}
	})
}

// streamed is what one turn announced about its parts.
type streamed struct {
	events, bytes int               // message.part.updated and message.part.delta events, and their size
	toolBytes     int               // the size of those about the tool part
	tool          map[string]string // the tool part's last announced state: status and output
	text          string            // the reply's text, as the deltas built it
	took          time.Duration

	// What a client applying the announcements held of the tool's live output (metadata.output):
	// just before the final state, and the deltas that did not start where its copy ended.
	live       string
	liveDeltas int
	misplaced  []string
}

// runStreamed prompts "run: <command>" on a service announcing updates every `every` and collects
// what the stream said about the turn's parts, applying them as a client does.
func runStreamed(tb testing.TB, every time.Duration, command string) streamed {
	tb.Helper()
	db, err := store.Open(tb.Context(), filepath.Join(tb.TempDir(), "tandem.db"))
	if err != nil {
		tb.Fatal(err)
	}
	b := bus.New(bus.Options{})
	s := New(Options{DB: db, Bus: b, Version: "test", UpdateEvery: every,
		Agent: &Agent{Providers: demoOnly{provider.NewDemo()}, Tools: tool.Builtins(tool.Options{}).All}})
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(tb.Context()), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		b.Close()
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	}()
	sess, err := s.Create(tb.Context(), tb.TempDir(), CreateInput{})
	if err != nil {
		tb.Fatal(err)
	}
	sub, _, err := b.Subscribe("", func(ev *bus.Event) bool { return strings.HasPrefix(ev.Type, "message.part.") })
	if err != nil {
		tb.Fatal(err)
	}
	defer sub.Close()

	start := time.Now()
	if _, err := s.Prompt(tb.Context(), sess.ID, text("run: "+command)); err != nil {
		tb.Fatal(err)
	}
	got := streamed{took: time.Since(start), tool: map[string]string{}}
	evs, _ := sub.Take(nil)
	var toolID string
	for _, ev := range evs {
		got.events++
		got.bytes += len(ev.Payload)
		var env struct {
			Properties struct {
				Part   Part   `json:"part"`
				PartID string `json:"partID"`
				Field  string `json:"field"`
				Delta  string `json:"delta"`
				Offset int    `json:"offset"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(ev.Payload, &env); err != nil {
			tb.Fatal(err)
		}
		switch p, d := env.Properties.Part, env.Properties; {
		case ev.Type == "message.part.delta" && d.Field == api.FieldLiveOutput:
			got.liveDeltas++
			got.toolBytes += len(ev.Payload)
			if d.PartID != toolID || d.Offset != utf16Len(got.live) {
				got.misplaced = append(got.misplaced, fmt.Sprintf("%q at %d onto %d units", d.Delta, d.Offset, utf16Len(got.live)))
				continue
			}
			got.live += d.Delta
		case ev.Type == "message.part.delta":
			got.text += d.Delta
		case p.Type == "tool" && p.State != nil:
			toolID = p.ID
			got.toolBytes += len(ev.Payload)
			got.tool["status"] = p.State.Status
			if p.State.Output != nil {
				got.tool["output"] = *p.State.Output
				got.tool["metadata.output"], _ = p.State.Metadata["output"].(string)
			} else {
				got.live, _ = p.State.Metadata["output"].(string)
			}
		}
	}
	return got
}

func TestALongCommandIsAnnouncedInTensOfEventsWithTheSameResult(t *testing.T) {
	every := runStreamed(t, -1, "seq 1 2000")
	bounded := runStreamed(t, defaultUpdateEvery, "seq 1 2000")
	t.Logf("seq 1 2000: every update %d events, %d bytes; bounded %d events, %d bytes", every.events, every.bytes, bounded.events, bounded.bytes)

	want := make([]string, 2000)
	for i := range want {
		want[i] = strconv.Itoa(i + 1)
	}
	for name, got := range map[string]streamed{"every update": every, "bounded": bounded} {
		if got.tool["status"] != "completed" || got.tool["output"] != strings.Join(want, "\n")+"\n" {
			t.Errorf("%s: the tool ended %q with %d bytes of output, want completed with all 2000 lines", name, got.tool["status"], len(got.tool["output"]))
		}
		if len(got.misplaced) > 0 {
			t.Errorf("%s: live output deltas that do not start where the client's copy ends: %v", name, got.misplaced)
		}
	}
	if every.tool["output"] != bounded.tool["output"] || every.text != bounded.text {
		t.Errorf("the bounded stream ends differently: output %d vs %d bytes, text %q vs %q",
			len(bounded.tool["output"]), len(every.tool["output"]), bounded.text, every.text)
	}
	// At most one announcement per interval per part, plus the first and the final state of each.
	limit := int(bounded.took/defaultUpdateEvery)*3 + 16
	if bounded.events > limit {
		t.Errorf("the bounded turn announced %d part events in %s, more than %d", bounded.events, bounded.took, limit)
	}
}

func TestAClientApplyingTheLiveDeltasHoldsTheCommandsOutput(t *testing.T) {
	for _, every := range []time.Duration{-1, defaultUpdateEvery} {
		t.Run(fmt.Sprintf("announcing every %s, the client's copy ends as the final output", every), func(t *testing.T) {
			// 200 lines, 1.8 KB: less than a step, so every byte is streamed as it is printed.
			got := runStreamed(t, every, "for i in $(seq 1 200); do echo line-$i; sleep 0.001; done")
			var want strings.Builder
			for i := 1; i <= 200; i++ {
				fmt.Fprintf(&want, "line-%d\n", i)
			}
			if len(got.misplaced) > 0 {
				t.Fatalf("deltas that do not start where the client's copy ends: %v", got.misplaced)
			}
			if got.liveDeltas == 0 || got.live != want.String() || got.tool["metadata.output"] != want.String() {
				t.Fatalf("%d deltas built %q; the final metadata.output is %q; want %q", got.liveDeltas, got.live, got.tool["metadata.output"], want.String())
			}
		})
	}
}

func TestAFloodOfOutputIsStreamedWithinItsBudget(t *testing.T) {
	// seq 1 100000 prints 588,895 bytes in a moment. The live output restarts as a tail of at most a
	// step rather than carrying it all, and the final state carries the 2,000 lines the model sees
	// once in state.output and once in metadata.output (OpenCode's TUI reads only the latter).
	got := runStreamed(t, defaultUpdateEvery, "seq 1 100000")
	if len(got.misplaced) > 0 {
		t.Fatalf("deltas that do not start where the client's copy ends: %v", got.misplaced)
	}
	if got.tool["status"] != "completed" || !strings.HasSuffix(got.tool["output"], "\n99999\n100000\n") {
		t.Fatalf("the tool ended %q with %d bytes", got.tool["status"], len(got.tool["output"]))
	}
	// The final state: 2 × 11 KB of kept output (JSON escapes its 2,000 newlines) and the part's
	// fields; the live output: the pending and first running part, and a restart of at most a step
	// (twice that when JSON escapes every other byte) and the part a second.
	const part = 600
	budget := 2*(len(got.tool["output"])+2000) + part + 2*part + int(got.took/liveWholeEvery+1)*(2*liveStep+part)
	t.Logf("seq 1 100000: %d part events, %d bytes, %d of them the tool's, in %s (budget %d)", got.events, got.bytes, got.toolBytes, got.took, budget)
	if got.toolBytes > budget {
		t.Fatalf("%d bytes of the tool part's events, more than %d", got.toolBytes, budget)
	}
}

// BenchmarkSeq5000Stream reports how many part events and bytes one `seq 1 5000` turn announces,
// announcing every update (how tandem streamed before) and at the default bounded rate.
func BenchmarkSeq5000Stream(b *testing.B) {
	for _, c := range []struct {
		name  string
		every time.Duration
	}{{"every-update", -1}, {"bounded-40ms", defaultUpdateEvery}} {
		b.Run(c.name, func(b *testing.B) {
			var events, bytes int
			for b.Loop() {
				got := runStreamed(b, c.every, "seq 1 5000")
				events += got.events
				bytes += got.bytes
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(float64(bytes)/float64(b.N), "event-bytes/op")
		})
	}
}
