// Package acphttp serves tandem's ACP agent over the protocol's Streamable HTTP transport (the
// RFD the official TypeScript SDK's experimental http client speaks): POST /acp carries client
// messages (initialize opens a connection and answers with its Acp-Connection-Id), GET /acp opens
// the connection's SSE stream or, with Acp-Session-Id, one session's, and DELETE /acp ends the
// connection. Each connection runs one acpagent agent over in-memory pipes.
package acphttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/door/acpagent"
)

// The transport's headers.
const (
	HeaderConnection = "Acp-Connection-Id"
	HeaderSession    = "Acp-Session-Id"
)

// maxMessage bounds one client message.
const maxMessage = 16 << 20

// initializeLimit bounds how long initialize waits for the agent's answer.
const initializeLimit = 30 * time.Second

// DefaultIdle is how long a connection lives without a stream attached or a message posted.
const DefaultIdle = 10 * time.Minute

// Options configure the handler.
type Options struct {
	// Idle ends a connection that has had no GET stream attached and no POST for this long (a client
	// that went away without DELETE); DefaultIdle when zero.
	Idle time.Duration
	// Client returns a client of the tandem server the agents drive (called per connection, so it
	// may be built after the handler, once the listener's URL is known).
	Client  func() *client.Client
	Version string
	Logger  *slog.Logger
}

// Handler serves ACP over Streamable HTTP; Close ends every connection.
type Handler struct {
	ctx    context.Context
	cancel context.CancelFunc
	o      Options

	mu     sync.Mutex
	conns  map[string]*conn
	wg     sync.WaitGroup
	reaper sync.Once
}

// New returns a handler whose connections live at most as long as ctx.
func New(ctx context.Context, o Options) *Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Handler{ctx: ctx, cancel: cancel, o: o, conns: map[string]*conn{}}
}

// startReaper runs reap from the first connection on: a handler nobody uses starts nothing.
func (h *Handler) startReaper() {
	h.reaper.Do(func() {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.reap()
		}()
	})
}

// reap ends the connections idle for longer than o.Idle until the handler closes.
func (h *Handler) reap() {
	tick := time.NewTicker(h.o.Idle / 4)
	defer tick.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case now := <-tick.C:
			h.mu.Lock()
			var idle []*conn
			for _, c := range h.conns {
				if c.idleSince(now) > h.o.Idle {
					idle = append(idle, c)
				}
			}
			h.mu.Unlock()
			for _, c := range idle {
				h.o.Logger.Info("acp http: connection idle, closed", "connection", c.id)
				h.remove(c)
			}
		}
	}
}

// Close ends every connection and waits for their agents.
func (h *Handler) Close() {
	h.cancel()
	h.mu.Lock()
	conns := make([]*conn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	h.wg.Wait()
}

// conn is one ACP connection: an agent and the streams its messages are routed to.
type conn struct {
	id     string
	in     *io.PipeWriter // client -> agent
	cancel context.CancelFunc

	mu      sync.Mutex
	streams map[string]*outbox     // "" is the connection's stream; else a session's
	routes  map[string]string      // the client's request ID -> the stream its response goes to
	initial map[string]chan []byte // the initialize request's ID -> its response
	closed  chan struct{}
	once    sync.Once
	active  time.Time // the last POST, or the end of the last GET
	readers int       // GET streams attached now
}

// idleSince is how long the connection has had neither a stream attached nor a message posted.
func (c *conn) idleSince(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readers > 0 {
		return 0
	}
	return now.Sub(c.active)
}

func (c *conn) touch() {
	c.mu.Lock()
	c.active = time.Now()
	c.mu.Unlock()
}

// outbox queues one stream's messages until a GET takes them.
type outbox struct {
	queue  [][]byte
	wake   chan struct{}
	reader bool // a GET is attached
}

func (c *conn) box(id string) *outbox {
	b := c.streams[id]
	if b == nil {
		b = &outbox{wake: make(chan struct{}, 1)}
		c.streams[id] = b
	}
	return b
}

func (c *conn) close() {
	c.once.Do(func() {
		c.cancel()
		_ = c.in.Close()
		close(c.closed)
	})
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params struct {
		SessionID string `json:"sessionId"`
	} `json:"params"`
}

func (m message) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }
func (m message) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// idKey is a JSON-RPC ID as a map key (its compact JSON).
func idKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ServeHTTP dispatches POST, GET and DELETE.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) *conn {
	id := r.Header.Get(HeaderConnection)
	if id == "" {
		http.Error(w, "Missing "+HeaderConnection, http.StatusBadRequest)
		return nil
	}
	h.mu.Lock()
	c := h.conns[id]
	h.mu.Unlock()
	if c == nil {
		http.Error(w, "Unknown "+HeaderConnection, http.StatusNotFound)
	}
	return c
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+1))
	if err != nil {
		http.Error(w, "read: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxMessage {
		http.Error(w, "message too large", http.StatusRequestEntityTooLarge)
		return
	}
	var msg message
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, "Invalid JSON-RPC message", http.StatusBadRequest)
		return
	}
	if msg.Method == "initialize" {
		if r.Header.Get(HeaderConnection) != "" {
			http.Error(w, "Initialize not allowed on existing connection", http.StatusBadRequest)
			return
		}
		h.initialize(w, r, msg, body)
		return
	}
	c := h.lookup(w, r)
	if c == nil {
		return
	}
	c.touch()
	session := r.Header.Get(HeaderSession)
	if msg.Params.SessionID != "" && session != "" && session != msg.Params.SessionID {
		http.Error(w, "Mismatched "+HeaderSession, http.StatusBadRequest)
		return
	}
	if session == "" {
		session = msg.Params.SessionID
	}
	if msg.isRequest() {
		route := session
		if msg.Method == "session/load" {
			route = ""
		}
		c.mu.Lock()
		c.routes[idKey(msg.ID)] = route
		c.mu.Unlock()
	}
	if err := c.write(body); err != nil {
		http.Error(w, "connection closed", http.StatusGone)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// write hands one message to the agent.
func (c *conn) write(body []byte) error {
	line := append(bytes.TrimSpace(body), '\n')
	_, err := c.in.Write(line)
	return err
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// initialize opens a connection: it starts an agent, and answers with the agent's initialize
// response and the connection's ID.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, msg message, body []byte) {
	if !msg.isRequest() {
		http.Error(w, "Initialize request must include an ID", http.StatusBadRequest)
		return
	}
	h.startReaper()
	ctx, cancel := context.WithCancel(h.ctx)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &conn{id: newID(), in: inW, cancel: cancel, streams: map[string]*outbox{}, routes: map[string]string{},
		initial: map[string]chan []byte{}, closed: make(chan struct{}), active: time.Now()}
	c.box("")
	answer := make(chan []byte, 1)
	c.initial[idKey(msg.ID)] = answer
	h.mu.Lock()
	h.conns[c.id] = c
	h.mu.Unlock()
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		defer outW.Close()
		if err := acpagent.Serve(ctx, acpagent.Options{Client: h.o.Client(), Version: h.o.Version, Logger: h.o.Logger}, outW, inR); err != nil {
			h.o.Logger.Error("acp http: agent", "connection", c.id, "err", err)
		}
		_ = inR.Close()
	}()
	go func() {
		defer h.wg.Done()
		defer h.remove(c)
		c.route(outR)
	}()
	if err := c.write(body); err != nil {
		h.remove(c)
		http.Error(w, "agent: "+err.Error(), http.StatusInternalServerError)
		return
	}
	t := time.NewTimer(initializeLimit)
	defer t.Stop()
	select {
	case res := <-answer:
		w.Header().Set(HeaderConnection, c.id)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(res)
	case <-r.Context().Done():
		h.remove(c)
	case <-t.C:
		h.remove(c)
		http.Error(w, "the agent did not answer initialize", http.StatusGatewayTimeout)
	case <-c.closed:
		http.Error(w, "the agent ended", http.StatusInternalServerError)
	}
}

func (h *Handler) remove(c *conn) {
	h.mu.Lock()
	delete(h.conns, c.id)
	h.mu.Unlock()
	c.close()
}

// route reads the agent's messages and queues each on its stream: a response where its request
// came from, a session's notifications and requests on that session's stream, the rest on the
// connection's.
func (c *conn) route(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), maxMessage)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		var msg message
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		stream := ""
		c.mu.Lock()
		switch {
		case msg.isResponse():
			key := idKey(msg.ID)
			if ch, ok := c.initial[key]; ok {
				delete(c.initial, key)
				c.mu.Unlock()
				ch <- line
				continue
			}
			stream = c.routes[key]
			delete(c.routes, key)
		default:
			stream = msg.Params.SessionID
		}
		b := c.box(stream)
		b.queue = append(b.queue, line)
		select {
		case b.wake <- struct{}{}:
		default:
		}
		c.mu.Unlock()
	}
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	c := h.lookup(w, r)
	if c == nil {
		return
	}
	session := r.Header.Get(HeaderSession)
	c.mu.Lock()
	b := c.box(session)
	if b.reader {
		c.mu.Unlock()
		http.Error(w, "Outbound stream already has an active receiver", http.StatusConflict)
		return
	}
	b.reader = true
	c.readers++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		b.reader = false
		c.readers--
		c.active = time.Now()
		c.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		c.mu.Lock()
		queued := b.queue
		b.queue = nil
		c.mu.Unlock()
		for _, m := range queued {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", m); err != nil {
				return
			}
		}
		if len(queued) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
		select {
		case <-b.wake:
		case <-keepalive.C:
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-c.closed:
			return
		}
	}
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	c := h.lookup(w, r)
	if c == nil {
		return
	}
	h.remove(c)
	w.WriteHeader(http.StatusAccepted)
}
