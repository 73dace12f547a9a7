//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
)

// limitBody is what the limit server answers GET /session with: 2 KB of JSON held in memory.
func limitBody() []byte {
	body := bytes.Repeat([]byte(" "), 2048)
	copy(body, `[{"id":"ses_limit","title":"`)
	copy(body[len(body)-3:], `"}]`)
	return body
}

// limitAnswer is what the limit answers GET /session with. With a body file it sends that file
// (a server's own answer, so that both send the same body), and with a head file too, the header
// lines that file holds as curl -D wrote them (a server's own head, so that both send the same
// answer; Date and Content-Length are the limit's own). With neither it sends 2 KB of JSON.
func limitAnswer(bodyFile, headFile string) (answer, error) {
	ans := answer{head: http.Header{"Content-Type": {"application/json"}}, body: limitBody()}
	var err error
	switch {
	case bodyFile == "" && headFile != "":
		return answer{}, fmt.Errorf("-limit-head needs -limit-body: a head without its body is not an answer")
	case bodyFile != "":
		if ans.body, err = os.ReadFile(bodyFile); err != nil {
			return answer{}, err
		}
	}
	if headFile != "" {
		if ans.head, err = readHead(headFile); err != nil {
			return answer{}, err
		}
	}
	return ans, nil
}

// answer is a response the limit replays.
type answer struct {
	head http.Header
	body []byte
}

// readHead reads a response head as curl -D writes it: a status line, header lines, a blank line.
func readHead(file string) (http.Header, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := textproto.NewReader(bufio.NewReader(f))
	status, err := r.ReadLine()
	if err != nil || !strings.HasPrefix(status, "HTTP/") {
		return nil, fmt.Errorf("%s: not a response head (curl -D FILE writes one): first line %q", file, status)
	}
	mime, err := r.ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	head := http.Header(mime)
	head.Del("Date")
	head.Del("Content-Length")
	return head, nil
}

// serveLimit runs the limit server: a bare net/http handler with no router, no auth, no storage,
// that answers /global/health, GET /session with body from memory, and streams /event,
// where every POST /session publishes one frame to every subscriber. Whatever tandem spends above
// it is tandem's own cost; what it spends is the machine's.
func serveLimit(ctx context.Context, addr string, ans answer) error {
	length := strconv.Itoa(len(ans.body))
	var mu sync.Mutex
	subscribers := map[chan []byte]struct{}{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"healthy":true,"version":"limit"}`))
	})
	mux.HandleFunc("GET /session", func(w http.ResponseWriter, _ *http.Request) {
		// Set line by line on each request, as a handler sets its own.
		h := w.Header()
		for k, v := range ans.head {
			h[k] = v
		}
		h["Content-Length"] = []string{length}
		_, _ = w.Write(ans.body)
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
