//go:build linux

package integration

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// BenchmarkPromptGrowthServer sends prompts to the real binary, answered by a scripted
// OpenAI-compatible server in this process, and measures how a prompt's cost grows with its
// session's history: the server's own CPU time per prompt (its threads' scheduler time, so the
// load generator and the model do not count), the median time per prompt, and the server's RSS.
// The budget (docs/benchmarks.md) is 1.2× for CPU and RSS. Run it with -benchtime 1x.
//
//   - One session gets 500 prompts; RSS is read after prompts 100 and 500, and the CPU per prompt
//     of prompts 51–150 and 401–500 gives the sequential growth.
//   - Then a second session gets 50 prompts, and the two sessions take turns for 100 prompts each:
//     the long one's prompts 501–600 against the short one's 51–150. This is the growth the budget
//     counts: the machine's drift over the run (the sequential windows of 100 prompts moved by
//     ±15 % from run to run on an idle machine with nothing else changed) falls on both alike.
func BenchmarkPromptGrowthServer(b *testing.B) {
	const prompts, window, early = 500, 100, 50
	bin, err := sharedBinary()
	if err != nil {
		b.Fatal(err)
	}
	llm := providertest.NewOpenAI(b)
	srv := startBinaryServer(b, bin, binaryOptions{env: openAIEnv(llm)})
	type mark struct {
		cpu  time.Duration
		wall []time.Duration
	}
	var first, last, short, long mark
	var rss100, rss500 int64
	for b.Loop() {
		newSession := func() string {
			var sess struct{ ID string }
			srv.do(b, http.MethodPost, "/session", `{"title":"growth"}`, &sess)
			return sess.ID
		}
		n := map[string]int{}
		// prompt sends a session its next prompt and adds its CPU time and duration to m.
		prompt := func(sessionID string, m *mark) {
			n[sessionID]++
			llm.Add(providertest.Turn{Text: []string{"Here is a short answer of about sixty words, so that every stored reply is about as ",
				"large as a real one: the session keeps it, lists it and sends it to every client that pages through the history."}})
			cpu, start := threadsCPU(b, srv.pid), time.Now()
			srv.do(b, http.MethodPost, "/session/"+sessionID+"/message", promptBody(fmt.Sprintf("Prompt %d: say something.", n[sessionID])), nil)
			if m != nil {
				m.wall = append(m.wall, time.Since(start))
				m.cpu += threadsCPU(b, srv.pid) - cpu
			}
		}
		longID := newSession()
		for i := range prompts {
			switch {
			case i >= early && i < early+window:
				prompt(longID, &first)
			case i >= prompts-window:
				prompt(longID, &last)
			default:
				prompt(longID, nil)
			}
			switch i + 1 {
			case 100:
				rss100 = childRSS(b, srv.pid)
			case prompts:
				rss500 = childRSS(b, srv.pid)
			}
		}
		shortID := newSession()
		for range early {
			prompt(shortID, nil)
		}
		for range window {
			prompt(longID, &long)
			prompt(shortID, &short)
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	perPrompt := func(m mark) float64 { return float64(m.cpu) / float64(time.Millisecond) / window }
	b.ReportMetric(perPrompt(short), "server-cpu-ms/prompt@51-150")
	b.ReportMetric(perPrompt(long), "server-cpu-ms/prompt@501-600")
	b.ReportMetric(perPrompt(long)/perPrompt(short), "cpu-growth")
	b.ReportMetric(median(long.wall)/median(short.wall), "time-growth")
	b.ReportMetric(perPrompt(last)/perPrompt(first), "cpu-growth-sequential")
	b.ReportMetric(median(last.wall)/median(first.wall), "time-growth-sequential")
	b.ReportMetric(float64(rss100)/1e6, "rss-MB@100")
	b.ReportMetric(float64(rss500)/1e6, "rss-MB@500")
	b.ReportMetric(float64(rss500)/float64(rss100), "rss-growth")
}

// threadsCPU is the CPU time all of a process's threads have run, from the scheduler's own
// nanosecond account (/proc/PID/task/*/schedstat); threads that ended meanwhile are not counted,
// which the Go runtime's long-lived threads make negligible.
func threadsCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	var total time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		if err != nil {
			tb.Fatalf("schedstat %q: %v", raw, err)
		}
		total += time.Duration(ns)
	}
	return total
}
