package routes_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// medianOf reports the median of per-operation durations as a benchmark metric; the budgets in
// DESIGN.md §10 are medians.
func medianOf(b *testing.B, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "median-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// chainRequest is a request the full middleware chain accepts: right Host, Basic credentials.
func (s *apiServer) chainRequest(method, path, body string) *http.Request {
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Host = s.srv.Addr().String()
	req.SetBasicAuth(apiUser, apiPassword)
	return req
}

// sink is a ResponseWriter that keeps the status, the body's length and its header map across
// requests, so that what a benchmark counts per request is the handler chain's own work, not a
// recorder's (net/http's own response costs are the limit's too).
type sink struct {
	h       http.Header
	code, n int
}

func (s *sink) Header() http.Header { return s.h }

func (s *sink) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}

func (s *sink) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	s.n += len(p)
	return len(p), nil
}

func (s *sink) reset() {
	clear(s.h)
	s.code, s.n = 0, 0
}

// BenchmarkSessionList measures GET /session through the server's whole handler chain (request ID,
// Host and Origin checks, directory scoping, auth, router, list cache) without the network; the
// page of 10 with a next page is the request of the throughput budget (docs/benchmarks.md). The
// request is built once and the response goes to a sink, so allocs/op are the chain's alone.
func BenchmarkSessionList(b *testing.B) {
	for _, tc := range []struct {
		n    int
		path string
	}{{6, "/session"}, {100, "/session"}, {100, "/session?limit=10"}} {
		b.Run(fmt.Sprintf("sessions=%d %s", tc.n, tc.path), func(b *testing.B) {
			n := tc.n
			s := startAPIServer(b, apiOptions{noLeakCheck: true})
			for i := range n {
				s.createSession(b, fmt.Sprintf(`{"title":"bench %d"}`, i))
			}
			h := s.srv.Handler()
			req := s.chainRequest(http.MethodGet, tc.path, "")
			w := &sink{h: http.Header{}}
			var times []time.Duration
			for b.Loop() {
				w.reset()
				start := time.Now()
				h.ServeHTTP(w, req)
				times = append(times, time.Since(start))
				if w.code != http.StatusOK || w.n == 0 {
					b.Fatalf("status %d, %d bytes", w.code, w.n)
				}
			}
			medianOf(b, times)
		})
	}
}

// BenchmarkSessionCreate measures POST /session through the whole handler chain, SQLite write included.
func BenchmarkSessionCreate(b *testing.B) {
	s := startAPIServer(b, apiOptions{noLeakCheck: true})
	h := s.srv.Handler()
	var times []time.Duration
	for b.Loop() {
		w := httptest.NewRecorder()
		req := s.chainRequest(http.MethodPost, "/session", `{"title":"bench"}`)
		start := time.Now()
		h.ServeHTTP(w, req)
		times = append(times, time.Since(start))
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	medianOf(b, times)
}

// BenchmarkSessionHTTP is the same two operations as a client sees them: keep-alive HTTP over loopback.
func BenchmarkSessionHTTP(b *testing.B) {
	s := startAPIServer(b, apiOptions{noLeakCheck: true})
	for i := range 6 {
		s.createSession(b, fmt.Sprintf(`{"title":"bench %d"}`, i))
	}
	for _, tc := range []struct{ name, method, body string }{
		{"GET /session", http.MethodGet, ""},
		{"POST /session", http.MethodPost, `{"title":"bench"}`},
	} {
		b.Run(strings.ReplaceAll(tc.name, "/", ""), func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				req := s.newRequest(b, tc.method, "/session", tc.body)
				start := time.Now()
				status, _, _ := s.send(b, req)
				times = append(times, time.Since(start))
				if status != http.StatusOK {
					b.Fatal(status)
				}
			}
			medianOf(b, times)
		})
	}
}

// BenchmarkSSEFanout1000 connects 1000 real TCP clients to GET /event and measures the time from
// Publish until every client has read the frame. It also reports the memory 1000 connections cost
// this process; the clients live in the same process, so that figure is an upper bound of the
// server's share (test/integration's BenchmarkSSEServerRSS measures a server process alone).
func BenchmarkSSEFanout1000(b *testing.B) {
	const clients = 1000
	s := startAPIServer(b, apiOptions{noLeakCheck: true})
	host := strings.TrimPrefix(s.base, "http://")
	creds := base64.StdEncoding.EncodeToString([]byte(apiUser + ":" + apiPassword))
	got := make(chan struct{}, clients)

	runtime.GC()
	heapBefore, rssBefore := heapInUse(), rssBytes()
	var conns []net.Conn
	for range clients {
		c, err := net.Dial("tcp", host)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /event HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\n\r\n", host, creds)
		go func() {
			r := bufio.NewReaderSize(c, 4096)
			marker := []byte(`"type":"bench.tick"`)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if bytes.HasPrefix(line, []byte("data: ")) && bytes.Contains(line, marker) {
					got <- struct{}{}
				}
			}
		}()
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for s.bus.Subscribers() < clients {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d clients subscribed", s.bus.Subscribers(), clients)
		}
		time.Sleep(5 * time.Millisecond)
	}
	runtime.GC()
	// Reported after the loop: b.Loop resets the timer, which clears metrics reported before it.
	heapMB, rssMB := float64(heapInUse()-heapBefore)/1e6, float64(rssBytes()-rssBefore)/1e6

	var times []time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		if err := s.bus.Publish("", "bench.tick", map[string]int{"n": n}); err != nil {
			b.Fatal(err)
		}
		for range clients {
			select {
			case <-got:
			case <-time.After(30 * time.Second):
				b.Fatalf("tick %d: not every client read it", n)
			}
		}
		times = append(times, time.Since(start))
		n++
	}
	if s.bus.Subscribers() != clients {
		b.Errorf("%d clients were dropped", clients-s.bus.Subscribers())
	}
	medianOf(b, times)
	b.ReportMetric(heapMB, "heap-MB/1000conns")
	b.ReportMetric(rssMB, "rss-MB/1000conns")
}

func heapInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// rssBytes is this process's resident set size from /proc (0 where /proc does not exist).
func rssBytes() int64 { return procRSS("self") }

func procRSS(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
