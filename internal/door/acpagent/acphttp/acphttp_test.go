package acphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/client"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 30 * time.Second

func newServer(t *testing.T, idle time.Duration) *httptest.Server {
	t.Helper()
	srv, _ := newHandler(t, idle)
	return srv
}

func newHandler(t *testing.T, idle time.Duration) (*httptest.Server, *Handler) {
	t.Helper()
	// The agents' tandem server is unreachable: initialize needs none, other calls answer errors.
	h := New(t.Context(), Options{Idle: idle, Client: func() *client.Client { return client.New("http://127.0.0.1:1", "tandem", "") }})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return srv, h
}

func post(t *testing.T, srv *httptest.Server, conn, body string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if conn != "" {
		req.Header.Set(HeaderConnection, conn)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`

func open(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	res := post(t, srv, "", initialize)
	var body struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion int `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK || body.Result.ProtocolVersion != 1 {
		t.Fatalf("initialize: %d %+v %v", res.StatusCode, body, err)
	}
	id := res.Header.Get(HeaderConnection)
	if id == "" {
		t.Fatal("initialize answered without " + HeaderConnection)
	}
	return id
}

func TestStreamableHTTP(t *testing.T) {
	t.Run("a response arrives on the connection's stream", func(t *testing.T) {
		srv := newServer(t, time.Minute)
		conn := open(t, srv)
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(HeaderConnection, conn)
		stream, err := srv.Client().Do(req)
		if err != nil || stream.StatusCode != http.StatusOK {
			t.Fatalf("GET: %v %v", stream, err)
		}
		defer stream.Body.Close()
		if res := post(t, srv, conn, `{"jsonrpc":"2.0","id":7,"method":"session/list","params":{}}`); res.StatusCode != http.StatusAccepted {
			t.Fatalf("POST: %d", res.StatusCode)
		}
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var msg struct {
				ID    int             `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(data), &msg); err != nil || msg.ID != 7 || msg.Error == nil {
				t.Fatalf("on the stream: %s", data)
			}
			return
		}
		t.Fatalf("the stream ended: %v", sc.Err())
	})
	t.Run("a message without a connection, or for an unknown one, is refused", func(t *testing.T) {
		srv := newServer(t, time.Minute)
		if res := post(t, srv, "", `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("no connection: %d", res.StatusCode)
		}
		if res := post(t, srv, "nope", `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`); res.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown connection: %d", res.StatusCode)
		}
	})
	t.Run("DELETE ends the connection", func(t *testing.T) {
		srv := newServer(t, time.Minute)
		conn := open(t, srv)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, srv.URL, nil)
		req.Header.Set(HeaderConnection, conn)
		res, err := srv.Client().Do(req)
		if err != nil || res.StatusCode != http.StatusAccepted {
			t.Fatalf("DELETE: %v %v", res, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res := post(t, srv, conn, `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`); res.StatusCode != http.StatusNotFound {
			t.Fatalf("after DELETE: %d", res.StatusCode)
		}
	})
	t.Run("a connection nobody reads or writes is ended after the idle time", func(t *testing.T) {
		srv, h := newHandler(t, 200*time.Millisecond)
		conn := open(t, srv)
		deadline := time.Now().Add(waitLimit)
		for {
			time.Sleep(50 * time.Millisecond)
			h.mu.Lock()
			n := len(h.conns)
			h.mu.Unlock()
			if n == 0 {
				if res := post(t, srv, conn, `{"jsonrpc":"2.0","method":"$/ping"}`); res.StatusCode != http.StatusNotFound {
					t.Fatalf("after the reaper: %d", res.StatusCode)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the idle connection is still there")
			}
		}
	})
}
