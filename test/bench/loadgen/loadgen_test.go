package loadgen

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadResponseReadsExactlyOneResponse(t *testing.T) {
	const next = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"a 200 sized by Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", ""},
		{"a 200 in chunks", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n", ""},
		{"header names in any case", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi", ""},
		{"anything but a 200 fails", "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", `status "HTTP/1.1 401 Unauthorized"`},
		{"a response with neither a length nor chunks fails", "HTTP/1.1 200 OK\r\n\r\n", "neither a length nor chunks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tt.in + next))
			err := ReadResponse(r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := ReadResponse(r); err != nil {
				t.Fatalf("the next response: %v (the first one was not read to its end)", err)
			}
		})
	}
}

func TestRunSendsOverKeepAliveConnections(t *testing.T) {
	var requests, conns atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "Basic x" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`[]`))
	}))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	host := strings.TrimPrefix(s.URL, "http://")

	t.Run("a count per connection sends exactly that many", func(t *testing.T) {
		requests.Store(0)
		conns.Store(0)
		n, err := Run(t.Context(), host, Get(host, "/", "Basic x"), 3, 50, time.Now().Add(time.Minute))
		if err != nil || n != 150 || requests.Load() != 150 || conns.Load() != 3 {
			t.Fatalf("n %d err %v; the server saw %d requests on %d connections, want 150 on 3", n, err, requests.Load(), conns.Load())
		}
	})
	t.Run("without a count it runs until the deadline", func(t *testing.T) {
		n, err := Run(t.Context(), host, Get(host, "/", "Basic x"), 2, 0, time.Now().Add(50*time.Millisecond))
		if err != nil || n == 0 {
			t.Fatalf("n %d err %v", n, err)
		}
	})
	t.Run("a refused request fails the run", func(t *testing.T) {
		_, err := Run(t.Context(), host, Get(host, "/", ""), 2, 5, time.Now().Add(time.Minute))
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("err = %v, want the 401", err)
		}
	})
}
