package integration

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSSEServerRSS runs tandem in a child process, connects 1000 SSE clients to it from this
// process and reports what they cost the server's resident memory, and the time from sending
// POST /session (which publishes session.created) until all 1000 clients have read that event.
func BenchmarkSSEServerRSS(b *testing.B) {
	const clients = 1000
	td := newTandem(b, setup{noLeak: true})
	c := td.startChild(b)
	pid := c.cmd.Process.Pid
	host := strings.TrimPrefix(td.base, "http://")
	creds := base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPassword))

	td.call(b, http.MethodGet, "/session", "", http.StatusOK, nil) // warm up
	time.Sleep(500 * time.Millisecond)
	rssBefore := childRSS(b, pid)

	got := make(chan struct{}, clients)
	connected := make(chan struct{}, clients)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, conn)
		fmt.Fprintf(conn, "GET /event HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\n\r\n", host, creds)
		go func() {
			r := bufio.NewReaderSize(conn, 4096)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				switch {
				case !bytes.HasPrefix(line, []byte("data: ")):
				case bytes.Contains(line, []byte(`"type":"server.connected"`)):
					connected <- struct{}{}
				case bytes.Contains(line, []byte(`"type":"session.created"`)):
					got <- struct{}{}
				}
			}
		}()
	}
	for i := range clients {
		select {
		case <-connected:
		case <-time.After(60 * time.Second):
			b.Fatalf("only %d of %d clients connected", i, clients)
		}
	}
	time.Sleep(500 * time.Millisecond)
	rssAfter := childRSS(b, pid)

	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		td.call(b, http.MethodPost, "/session", `{"title":"fan-out"}`, http.StatusOK, nil)
		for range clients {
			select {
			case <-got:
			case <-time.After(30 * time.Second):
				b.Fatal("not every client read session.created")
			}
		}
		times = append(times, time.Since(start))
	}
	// Reported after the loop: b.Loop resets the timer, which clears metrics reported before it.
	b.ReportMetric(float64(rssAfter-rssBefore)/1e6, "server-rss-MB/1000conns")
	b.ReportMetric(float64(rssAfter)/1e6, "server-rss-MB")
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1e3, "median-fanout-ms(incl-POST)")
}

func childRSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}
