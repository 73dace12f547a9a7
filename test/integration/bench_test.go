package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// BenchmarkToolTurn is the server's cost of one tool-calling turn: POST /session/{id}/message with
// `run: true` through the instant demo model (bash allowed by config), measured end to end over
// HTTP. It includes two model steps, the permission evaluation, forking `true`, every store write
// and every event. Each iteration uses a fresh session, created outside the timer.
func BenchmarkToolTurn(b *testing.B) {
	td := startTandem(b, setup{config: `{"permission": {"bash": "allow", "edit": "allow"}}`, noLeak: true})
	benchTurns(b, td, "run: true")
}

// BenchmarkReadTurn is the same turn with the read tool (allowed by default) instead of bash, so
// no process is started: the difference to BenchmarkToolTurn is the cost of running `true`.
func BenchmarkReadTurn(b *testing.B) {
	td := startTandem(b, setup{noLeak: true})
	if err := os.WriteFile(filepath.Join(td.project, "README.md"), []byte("# bench\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	benchTurns(b, td, "read: README.md")
}

// BenchmarkToolTurnOpenAI is the same turn against a scripted OpenAI-compatible server on
// loopback, so the provider client's streaming and parsing are included.
func BenchmarkToolTurnOpenAI(b *testing.B) {
	llm := providertest.NewOpenAI(b)
	td := startTandem(b, setup{env: openAIEnv(llm), config: `{"permission": {"bash": "allow", "edit": "allow"}}`, noLeak: true})
	for range b.N {
		llm.Add(providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_true", Name: "bash", Arguments: `{"command":"true","description":"nothing"}`}}},
			providertest.Turn{Text: []string{"done"}})
	}
	benchTurns(b, td, "Run true")
}

func benchTurns(b *testing.B, td *tandem, prompt string) {
	b.Helper()
	body := promptBody(prompt)
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		sid := td.newSession(b)
		b.StartTimer()
		start := time.Now()
		status, reply := td.request(b, http.MethodPost, "/session/"+sid+"/message", body)
		durations = append(durations, time.Since(start))
		if status != http.StatusOK {
			b.Fatalf("prompt: %d %s", status, reply)
		}
	}
	b.StopTimer()
	reportMillis(b, durations)
}

// BenchmarkPermissionRoundTrip measures, per approval, the time from the SSE client reading
// permission.asked to the same client reading the tool part `running` with the command started
// (the bash tool's first progress update, which it sends right after the process starts), with the
// reply POST in between.
func BenchmarkPermissionRoundTrip(b *testing.B) {
	td := startTandem(b, setup{noLeak: true})
	events := td.subscribe(b)
	sid := td.newSession(b)
	durations := make([]time.Duration, 0, b.N)
	replies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		command := fmt.Sprintf("echo round-trip-%d", i)
		td.promptAsync(b, sid, "run: "+command)
		asked := events.waitFor(b, "permission.asked", ofType("permission.asked", sid))
		b.StartTimer()

		status, body := td.request(b, http.MethodPost, "/permission/"+asked.permission().ID+"/reply", `{"reply":"once"}`)
		if status != http.StatusOK {
			b.Fatalf("reply: %d %s", status, body)
		}
		replies = append(replies, time.Since(asked.at))
		started := events.waitFor(b, "the command started", func(e event) bool {
			p, ok := e.part()
			return ok && p.SessionID == sid && p.Type == "tool" && p.State.Status == "running" && p.State.Title == command
		})

		b.StopTimer()
		durations = append(durations, started.at.Sub(asked.at))
		events.waitFor(b, "session.idle", idle(sid))
	}
	reportMillis(b, durations)
	slices.Sort(replies)
	b.ReportMetric(float64(replies[len(replies)/2])/float64(time.Millisecond), "ms-median-until-POST-answered")
}

// reportMillis adds the median and the 95th percentile in milliseconds.
func reportMillis(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	b.ReportMetric(ms(d[len(d)/2]), "ms-median")
	b.ReportMetric(ms(d[len(d)*95/100]), "ms-p95")
}

// BenchmarkPromptGrowthOpenAI sends 500 prompts to one session, each answered by a scripted
// OpenAI-compatible server over loopback HTTP, and reports the median time of prompts 1–50 and
// 451–500: every call sends the whole history, so this is what encoding it costs as it grows.
// Run it with -benchtime 1x.
func BenchmarkPromptGrowthOpenAI(b *testing.B) {
	const prompts, window = 500, 50
	llm := providertest.NewOpenAI(b)
	td := startTandem(b, setup{env: openAIEnv(llm), noLeak: true})
	var first, last []time.Duration
	for b.Loop() {
		sid := td.newSession(b)
		for i := range prompts {
			llm.Add(providertest.Turn{Text: []string{"Here is a short answer of about sixty words, so that every stored reply is about as ",
				"large as a real one: the session keeps it, lists it and sends it to every client that pages through the history."}})
			start := time.Now()
			status, body := td.request(b, http.MethodPost, "/session/"+sid+"/message", promptBody(fmt.Sprintf("Prompt %d: say something.", i+1)))
			took := time.Since(start)
			if status != http.StatusOK {
				b.Fatalf("prompt %d: %d %s", i+1, status, body)
			}
			switch {
			case i < window:
				first = append(first, took)
			case i >= prompts-window:
				last = append(last, took)
			}
		}
	}
	slices.Sort(first)
	slices.Sort(last)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(first[len(first)/2]), "median-ms-1-50")
	b.ReportMetric(ms(last[len(last)/2]), "median-ms-451-500")
	b.ReportMetric(ms(last[len(last)/2])/ms(first[len(first)/2]), "growth")
}
