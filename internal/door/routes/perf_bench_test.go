package routes_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/test/bench/loadgen"
)

// fillSession stores n messages in one session the way turns store them: user messages with one
// text part, assistant messages with step-start, text, a completed tool call (every other one) and
// step-finish. It returns the session's ID.
func fillSession(tb testing.TB, s *apiServer, n int) string {
	tb.Helper()
	sess := s.createSession(tb, `{"title":"paging"}`)
	ids := id.NewSource()
	ctx := context.Background()
	put := func(q store.Tx, v any, row func([]byte) error) {
		data, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		if err := row(data); err != nil {
			tb.Fatal(err)
		}
	}
	err := s.db.Tx(ctx, func(q store.Tx) error {
		created := time.Now().UnixMilli() - int64(n)
		parent := ""
		for i := range n {
			created++
			m := session.Message{ID: ids.New(id.Message), SessionID: sess.ID, Role: session.RoleUser, Agent: "build",
				Time: session.MessageTime{Created: created}}
			var parts []session.Part
			part := func(p session.Part) {
				p.ID, p.SessionID, p.MessageID = ids.New(id.Part), sess.ID, m.ID
				parts = append(parts, p)
			}
			text := fmt.Sprintf("message %d: a few words of text, about as long as a short prompt or answer is", i)
			if i%2 == 0 {
				m.Model = &session.MessageModel{ProviderID: "demo", ModelID: "demo"}
				m.Summary = &session.MessageSummary{Diffs: []session.FileDiff{}}
				parent = m.ID
				part(session.Part{Type: "text", Text: &text})
			} else {
				cost := 0.0
				m.Role, m.ParentID, m.ModelID, m.ProviderID, m.Mode = session.RoleAssistant, parent, "demo", "demo", "build"
				m.Path = &session.MessagePath{Cwd: s.dir, Root: s.dir}
				m.Cost, m.Tokens, m.Finish = &cost, &session.Tokens{Input: 120, Output: 30}, "stop"
				m.Time.Completed = created
				part(session.Part{Type: "step-start"})
				part(session.Part{Type: "text", Text: &text, Time: &session.PartTime{Start: created, End: created}})
				if i%4 == 1 {
					out := strings.Repeat("line of tool output\n", 10)
					part(session.Part{Type: "tool", CallID: "call_" + strconv.Itoa(i), Tool: "read", State: &session.ToolState{
						Status: "completed", Input: json.RawMessage(`{"filePath":"notes.txt"}`), Output: &out, Title: "notes.txt",
						Metadata: map[string]any{"preview": "line of tool output"}, Time: &session.PartTime{Start: created, End: created},
					}})
				}
				part(session.Part{Type: "step-finish", Reason: "stop", Cost: &cost, Tokens: &session.Tokens{Input: 120, Output: 30}})
			}
			put(q, m, func(data []byte) error {
				return q.PutMessage(ctx, store.Message{ID: m.ID, SessionID: m.SessionID, Created: m.Time.Created, Data: data})
			})
			for _, p := range parts {
				put(q, p, func(data []byte) error {
					return q.PutPart(ctx, store.Part{ID: p.ID, MessageID: p.MessageID, SessionID: p.SessionID, Data: data})
				})
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sess.ID
}

// BenchmarkMessagePage measures GET /session/{id}/message on a 1,000-message session as a client
// sees it (keep-alive HTTP over loopback, the whole middleware chain, SQLite): a page of the newest
// 100 and all 1,000.
func BenchmarkMessagePage(b *testing.B) {
	s := startAPIServer(b, apiOptions{noLeakCheck: true})
	sid := fillSession(b, s, 1000)
	for _, tc := range []struct {
		name, query string
		want        int
	}{
		{"limit=100", "?limit=100", 100},
		{"all=1000", "", 1000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var times []time.Duration
			var size int
			for b.Loop() {
				req := s.newRequest(b, http.MethodGet, "/session/"+sid+"/message"+tc.query, "")
				start := time.Now()
				status, _, body := s.send(b, req)
				times = append(times, time.Since(start))
				if status != http.StatusOK {
					b.Fatalf("%d %s", status, body)
				}
				size = len(body)
			}
			var page []json.RawMessage
			req := s.newRequest(b, http.MethodGet, "/session/"+sid+"/message"+tc.query, "")
			if _, _, body := s.send(b, req); json.Unmarshal(body, &page) != nil || len(page) != tc.want {
				b.Fatalf("got %d messages, want %d", len(page), tc.want)
			}
			medianOf(b, times)
			b.ReportMetric(float64(size), "bytes/response")
		})
	}
}

// BenchmarkListThroughput is a wrk-like load (4 keep-alive connections, each sending its next
// request as soon as the previous response is read) against GET /session?limit=10 of the real
// server, and against a bare net/http handler replaying tandem's own answer (its header lines and
// its body) from memory, the machine's limit, in the same run. It reports both rates and tandem's
// as a percentage of the limit.
func BenchmarkListThroughput(b *testing.B) {
	const conns = 4
	s := startAPIServer(b, apiOptions{noLeakCheck: true})
	for i := range 100 {
		s.createSession(b, fmt.Sprintf(`{"title":"bench %d"}`, i))
	}
	status, limitHead, limitBody := s.send(b, s.newRequest(b, http.MethodGet, "/session?limit=10", ""))
	if status != http.StatusOK || !json.Valid(limitBody) {
		b.Fatalf("%d %s", status, limitBody)
	}
	limitHead.Del("Date") // the limit's own, as net/http adds it
	limitHead.Set("Content-Length", strconv.Itoa(len(limitBody)))
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range limitHead {
			h[k] = v
		}
		_, _ = w.Write(limitBody)
	}))
	defer bare.Close()
	creds := base64.StdEncoding.EncodeToString([]byte(apiUser + ":" + apiPassword))
	tandemHost := strings.TrimPrefix(s.base, "http://")
	tandemReq := loadgen.Get(tandemHost, "/session?limit=10", "Basic "+creds)
	limitHost := strings.TrimPrefix(bare.URL, "http://")
	limitReq := loadgen.Get(limitHost, "/session?limit=10", "")

	var tandem, limit loadResult
	rounds := 0
	for b.Loop() {
		// Alternate which server goes first, so neither always meets a warmer or cooler machine.
		if rounds%2 == 0 {
			limit.add(load(b, limitHost, limitReq, conns, 2000))
			tandem.add(load(b, tandemHost, tandemReq, conns, 2000))
		} else {
			tandem.add(load(b, tandemHost, tandemReq, conns, 2000))
			limit.add(load(b, limitHost, limitReq, conns, 2000))
		}
		rounds++
	}
	b.ReportMetric(tandem.rate(), "tandem-req/s")
	b.ReportMetric(limit.rate(), "limit-req/s")
	b.ReportMetric(100*tandem.rate()/limit.rate(), "%-of-limit")
	// On a machine that other work shares, the rates swing with its load; the CPU time this process
	// (server and load generator) spends per request does much less, and at saturation on two cores
	// its ratio is the ratio of the rates an idle machine would show.
	b.ReportMetric(tandem.cpuPerRequest(), "tandem-cpu-µs/req")
	b.ReportMetric(limit.cpuPerRequest(), "limit-cpu-µs/req")
	b.ReportMetric(100*limit.cpuPerRequest()/tandem.cpuPerRequest(), "%-of-limit-by-cpu")
}

// loadResult sums the load runs against one server.
type loadResult struct {
	requests  int
	wall, cpu time.Duration
}

func (r *loadResult) add(o loadResult) {
	r.requests += o.requests
	r.wall += o.wall
	r.cpu += o.cpu
}

func (r loadResult) rate() float64 { return float64(r.requests) / r.wall.Seconds() }

func (r loadResult) cpuPerRequest() float64 {
	return float64(r.cpu.Nanoseconds()) / 1e3 / float64(r.requests)
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// load sends n requests over each of conns keep-alive connections and returns how long that took
// and the CPU time it cost. Every response must be a 200.
func load(b *testing.B, host, request string, conns, n int) loadResult {
	b.Helper()
	start, cpuStart := time.Now(), cpuTime(b)
	if _, err := loadgen.Run(b.Context(), host, request, conns, n, start.Add(2*time.Minute)); err != nil {
		b.Fatal(err)
	}
	return loadResult{requests: conns * n, wall: time.Since(start), cpu: cpuTime(b) - cpuStart}
}
