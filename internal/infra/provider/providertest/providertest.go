// Package providertest runs scripted LLM servers on 127.0.0.1 that speak the real streaming wire
// formats of OpenAI Chat Completions and Anthropic Messages. Tests point a real provider client at
// them, so the code under test is the code that talks to the real APIs.
//
// A script is a list of turns, one per request: text and reasoning chunks, tool calls, usage, an
// HTTP error, an error in the middle of the stream, or a hang. The server records every request.
package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/provider"
)

// ToolCall is a call the scripted model makes. Arguments is the JSON text, sent in fragments.
type ToolCall struct {
	ID, Name, Arguments string
}

// Usage is what the server reports. Input excludes CacheRead and CacheWrite on the Anthropic wire
// and includes CacheRead on the OpenAI wire (prompt_tokens), as the real APIs do.
type Usage struct {
	Input, Output, Reasoning, CacheRead, CacheWrite int64
}

// Turn is the scripted answer to one request.
type Turn struct {
	Reasoning []string   // reasoning chunks, streamed first
	Text      []string   // text chunks, streamed in order
	ToolCalls []ToolCall // streamed after the text, arguments split into small fragments
	// WholeToolCalls sends each tool call complete in one chunk, every one at index 0, the way
	// Ollama does (OpenAI wire only).
	WholeToolCalls bool
	// WholeToolCallIndex is the index those whole calls carry (some servers send -1).
	WholeToolCallIndex int
	Usage              Usage
	// UsageOf, when set, reports the usage it computes from the request body instead of Usage
	// (an AnthropicCache's bill, say).
	UsageOf func(body []byte) Usage
	Finish  string // the wire's finish_reason / stop_reason; derived when empty

	Status int               // when non-zero, refuse the request with this HTTP status
	Body   string            // the error body for Status; a realistic envelope when empty
	Header map[string]string // extra response headers (Retry-After, ...)

	// StreamError ends the stream after the chunks with an in-stream error event of this type
	// ("overloaded_error", "server_error", ...).
	StreamError string
	// Hang sends the response headers and the chunks, then nothing more until the client leaves.
	Hang bool
	// Truncate ends the response after the chunks without finishing it, as a dropped
	// connection or a crashed server does.
	Truncate bool
}

// Request is one request the server received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Decode unmarshals the request body.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// Server is a scripted provider endpoint.
type Server struct {
	// URL is the server's root; BaseURL is what a provider's baseURL option should be.
	URL, BaseURL string

	t        testing.TB
	srv      *httptest.Server
	wire     wire
	done     chan struct{}
	mu       sync.Mutex
	turns    []Turn
	next     int
	requests []Request
	titles   []Request
}

// Title is what the server answers a title call with (see provider.TitleSystem).
const Title = "Scripted title"

// titleMarker finds a title call in a request body of either wire: the system prompt's first words.
var titleMarker = []byte(provider.TitleSystem[:60])

// Titles returns the title calls received so far. They are answered with Title, and are neither
// scripted turns nor listed by Requests: a script stays about the turns of the conversation.
func (s *Server) Titles() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.titles...)
}

type wire interface {
	path() string
	refuse(w http.ResponseWriter, turn Turn)
	stream(s *sseWriter, turn Turn, req map[string]any)
}

// NewOpenAI starts an OpenAI-compatible server (POST /v1/chat/completions). It stops when the
// test ends.
func NewOpenAI(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := start(t, openaiWire{}, turns)
	s.BaseURL = s.URL + "/v1"
	return s
}

// NewAnthropic starts an Anthropic Messages server (POST /v1/messages). It stops when the test
// ends.
func NewAnthropic(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := start(t, anthropicWire{}, turns)
	s.BaseURL = s.URL
	return s
}

func start(t testing.TB, w wire, turns []Turn) *Server {
	s := &Server{t: t, wire: w, done: make(chan struct{}), turns: append([]Turn(nil), turns...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.done) // releases hanging handlers, so Close does not wait for them
		s.srv.Close()
	})
	return s
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodPost && r.URL.Path == s.wire.path() && bytes.Contains(body, titleMarker) {
		s.mu.Lock()
		s.titles = append(s.titles, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		sw := &sseWriter{w: w}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		s.wire.stream(sw, Turn{Text: []string{Title}}, req)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n := len(s.requests)
	var turn Turn
	ok := s.next < len(s.turns)
	if ok {
		turn = s.turns[s.next]
		s.next++
	}
	s.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != s.wire.path() {
		http.Error(w, fmt.Sprintf("providertest: unexpected %s %s", r.Method, r.URL.Path), http.StatusNotFound)
		return
	}
	if !ok {
		s.t.Errorf("providertest: request %d has no scripted turn", n)
		http.Error(w, fmt.Sprintf("providertest: no scripted turn left for request %d", n), http.StatusInternalServerError)
		return
	}
	for k, v := range turn.Header {
		w.Header().Set(k, v)
	}
	if turn.UsageOf != nil {
		turn.Usage = turn.UsageOf(body)
	}
	if turn.Status != 0 {
		s.wire.refuse(w, turn)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "providertest: the request body is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	sw := &sseWriter{w: w}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw.flush()
	s.wire.stream(sw, turn, req)
	if turn.Hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
	}
}

// sseWriter writes Server-Sent Events and flushes each one, so the client sees them as they come.
type sseWriter struct {
	w http.ResponseWriter
}

func (s *sseWriter) event(name string, data any) {
	var b strings.Builder
	if name != "" {
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	var payload []byte
	switch d := data.(type) {
	case string:
		payload = []byte(d)
	default:
		payload, _ = json.Marshal(d)
	}
	fmt.Fprintf(&b, "data: %s\n\n", payload)
	_, _ = io.WriteString(s.w, b.String())
	s.flush()
}

func (s *sseWriter) flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Fragments splits s into pieces of at most n bytes, the way APIs stream tool arguments.
func Fragments(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

const fragmentSize = 7

func writeErrorBody(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
