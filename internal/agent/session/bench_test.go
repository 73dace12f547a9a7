package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// benchService is newService for benchmarks: the demo model, the built-in tools, a real SQLite file.
func benchService(b *testing.B) (*Service, string) {
	b.Helper()
	db, err := store.Open(b.Context(), filepath.Join(b.TempDir(), "tandem.db"))
	if err != nil {
		b.Fatal(err)
	}
	bs := bus.New(bus.Options{})
	builtins := tool.Builtins(tool.Options{})
	s := New(Options{DB: db, Bus: bs, Version: "bench", Agent: &Agent{Providers: demoOnly{provider.NewDemo()}, Tools: builtins.All}})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(b.Context()), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		bs.Close()
		if err := db.Close(); err != nil {
			b.Error(err)
		}
	})
	return s, b.TempDir()
}

// BenchmarkPromptGrowth sends 500 prompts to one session through the session service and the demo
// model — every other one a tool call (read), the rest a plain text answer — and reports the mean
// time of prompts 1–50 and 451–500 and their ratio: a turn should cost what is new in it, not the
// whole history. Run it with -benchtime 1x (each iteration is a whole 500-prompt session).
func BenchmarkPromptGrowth(b *testing.B) {
	const prompts, window = 500, 50
	s, dir := benchService(b)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	var first, last time.Duration
	var firstTimes, lastTimes []time.Duration
	for b.Loop() {
		sess, err := s.Create(ctx, dir, CreateInput{})
		if err != nil {
			b.Fatal(err)
		}
		for i := range prompts {
			in := text(fmt.Sprintf("prompt number %d of the growth benchmark", i))
			if i%2 == 1 {
				in = text("read: notes.txt")
			}
			start := time.Now()
			reply, err := s.Prompt(ctx, sess.ID, in)
			took := time.Since(start)
			if err != nil || reply.Info.Error != nil {
				b.Fatalf("prompt %d: %v %+v", i, err, reply.Info.Error)
			}
			switch {
			case i < window:
				first += took
				firstTimes = append(firstTimes, took)
			case i >= prompts-window:
				last += took
				lastTimes = append(lastTimes, took)
			}
		}
	}
	n := float64(b.N * window)
	b.ReportMetric(float64(first.Microseconds())/1e3/n, "ms/prompt-1-50")
	b.ReportMetric(float64(last.Microseconds())/1e3/n, "ms/prompt-451-500")
	b.ReportMetric(float64(last)/float64(first), "growth")
	// Medians too: on a shared machine one burst of other work moves a mean of 50 prompts.
	slices.Sort(firstTimes)
	slices.Sort(lastTimes)
	b.ReportMetric(float64(firstTimes[len(firstTimes)/2].Microseconds())/1e3, "median-ms-1-50")
	b.ReportMetric(float64(lastTimes[len(lastTimes)/2].Microseconds())/1e3, "median-ms-451-500")
}
