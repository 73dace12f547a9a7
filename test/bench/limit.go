//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
)

// limitBody is what the limit server answers GET /session with: 2 KB of JSON held in memory.
func limitBody() []byte {
	body := bytes.Repeat([]byte(" "), 2048)
	copy(body, `[{"id":"ses_limit","title":"`)
	copy(body[len(body)-3:], `"}]`)
	return body
}

// limitAnswer is what the limit answers GET /session with: the file's bytes (a server's own
// answer, so that both send the same body), or 2 KB of JSON when no file is named.
func limitAnswer(file string) ([]byte, error) {
	if file == "" {
		return limitBody(), nil
	}
	return os.ReadFile(file)
}

// serveLimit runs the limit server: a bare net/http handler with no router, no auth, no storage,
// that answers /global/health, GET /session with body from memory, and streams /event,
// where every POST /session publishes one frame to every subscriber. Whatever tandem spends above
// it is tandem's own cost; what it spends is the machine's.
func serveLimit(ctx context.Context, addr string, body []byte) error {
	var mu sync.Mutex
	subscribers := map[chan []byte]struct{}{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"healthy":true,"version":"limit"}`))
	})
	mux.HandleFunc("GET /session", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	var seq int
	mux.HandleFunc("POST /session", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		seq++
		frame := fmt.Appendf(nil, "data: {\"type\":\"session.created\",\"properties\":{\"info\":{\"id\":\"ses_%d\"}}}\n\n", seq)
		for c := range subscribers {
			select {
			case c <- frame:
			default:
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"ses_%d"}`, seq)
	})
	mux.HandleFunc("GET /event", func(w http.ResponseWriter, r *http.Request) {
		c := make(chan []byte, 16)
		mu.Lock()
		subscribers[c] = struct{}{}
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(subscribers, c)
			mu.Unlock()
		}()
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		_, _ = w.Write([]byte("data: {\"type\":\"server.connected\",\"properties\":{}}\n\n"))
		f.Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case frame := <-c:
				if _, err := w.Write(frame); err != nil {
					return
				}
				f.Flush()
			}
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
