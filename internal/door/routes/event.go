package routes

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/cluster"
)

// Events serves the two SSE streams.
//
// A stream takes its connection over from net/http (Hijack) and is written by one small goroutine:
// net/http's per-connection read and write buffers, its background reader and the handler's deep
// stack would otherwise cost more than the stream itself, and a server is expected to hold a
// thousand idle clients cheaply. Where the connection cannot be taken (HTTP/2, a ResponseRecorder)
// the stream runs inside the handler instead.
type Events struct {
	Bus *bus.Bus
	// Heartbeat is the interval of server.heartbeat frames (10 s, as OpenCode).
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a client; a client that cannot take a frame in time is dropped.
	WriteTimeout time.Duration

	// RefreshUntil: until then, a connection without a cursor is told to reload its state, as after
	// a resync. Set at start, before serving, when the server restarts (a crash or a graceful stop):
	// the clients attached before reconnect without a cursor this process can honour, holding a
	// state the restart may have changed.
	RefreshUntil time.Time

	streams sync.WaitGroup
	cut     cutStreams
}

// EventStreamQuery documents the stream's resume parameter.
type EventStreamQuery struct {
	LastEventID string `header:"Last-Event-ID" description:"Resume after this cursor: missed events are replayed, or server.connected carries resync:true when they are gone."`
}

// Ops declares GET /event and GET /global/event.
func (e *Events) Ops() []Op {
	return []Op{
		raw(http.MethodGet, "/event", "event.subscribe", "Subscribe to events", &EventStreamQuery{}, "", "text/event-stream",
			func(w http.ResponseWriter, r *http.Request) {
				dir := DirectoryOf(r.Context())
				e.stream(w, r, false, func(ev *bus.Event) bool { return ev.Directory == "" || ev.Directory == dir })
			}).doc("Server-sent events for one directory. Frames are `id: <cursor>` + `data: {id,type,properties}`; " +
			"the first is server.connected, then server.heartbeat every 10 s. Send Last-Event-ID to resume."),
		raw(http.MethodGet, "/global/event", "global.event", "Subscribe to global events", &EventStreamQuery{}, "", "text/event-stream",
			func(w http.ResponseWriter, r *http.Request) { e.stream(w, r, true, nil) }).
			doc("Server-sent events for every directory, each as {directory, payload:{id,type,properties}}. Same cursors and replay as /event."),
	}
}

// Wait blocks until every stream has ended (after the bus is closed, each writes its final event).
func (e *Events) Wait() { e.streams.Wait() }

var sseHeaders = map[string]string{
	"Content-Type":           "text/event-stream",
	"Cache-Control":          "no-cache, no-transform",
	"X-Accel-Buffering":      "no",
	"X-Content-Type-Options": "nosniff",
}

func (e *Events) stream(w http.ResponseWriter, r *http.Request, global bool, filter bus.Filter) {
	// The signals nodes send one another through the shared log are no client's business.
	shown := func(ev *bus.Event) bool { return !cluster.Internal(ev.Type) && (filter == nil || filter(ev)) }
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("lastEventID")
	}
	// A client the server cut off reconnects without a cursor when it cannot send one (OpenCode's
	// SDK never does): it resumes where its cut stream stopped, as if it had sent Last-Event-ID.
	who := streamClient(r, global)
	if last == "" {
		last = e.cut.take(who, time.Now())
	}
	sub, resume, err := e.Bus.SubscribeContext(r.Context(), last, shown)
	if err != nil {
		writeError(w, r, unavailable("the server is shutting down"))
		return
	}
	for k, v := range sseHeaders {
		w.Header().Set(k, v)
	}
	sw := &sseWriter{bus: e.Bus, global: global, timeout: e.writeTimeout()}
	connected := api.ServerConnected{Resync: resume.Resync}
	// With a replay to follow, server.connected repeats the client's own cursor: were the stream cut
	// right after it, the client would resume from there and miss nothing. Each replayed frame then
	// carries its own id, oldest first.
	cursor := resume.Cursor
	if len(resume.Replay) > 0 {
		cursor = last
	}
	sw.synthetic(cursor, api.EventServerConnected, connected)
	if resume.Resync || (last == "" && time.Now().Before(e.RefreshUntil)) {
		// What the client missed is gone. OpenCode's clients reload their state (sessions, statuses,
		// agents, providers) when told that the instance was disposed, and ignore resync:true.
		sw.synthetic("", api.EventInstanceDisposed, api.InstanceDisposed{Directory: DirectoryOf(r.Context())})
	}
	for _, ev := range resume.Replay {
		sw.event(ev)
	}
	st := &stream{sw: sw, sub: sub, who: who, cursor: resume.Cursor}

	if r.ProtoMajor == 1 {
		if conn, brw, err := http.NewResponseController(w).Hijack(); err == nil {
			sw.conn = conn
			sw.chunked = r.ProtoAtLeast(1, 1)
			sw.header = responseHead(w.Header(), sw.chunked)
			e.streams.Add(1)
			go func() {
				defer e.streams.Done()
				defer conn.Close()
				e.pump(st, nil)
			}()
			_ = brw // its buffers go with the handler; the stream never reads the connection again
			return
		}
	}
	// In-handler fallback: net/http frames the body; the request context says when the client left.
	sw.w, sw.rc = w, http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	e.streams.Add(1)
	defer e.streams.Done()
	e.pump(st, r.Context().Done())
}

// stream is one client's SSE connection while it is written.
type stream struct {
	sw     *sseWriter
	sub    *bus.Subscription
	who    string // streamClient of the request
	cursor string // the newest event written to the connection
}

// pump writes the stream until the client is gone, it falls behind, or the bus closes.
func (e *Events) pump(st *stream, gone <-chan struct{}) {
	sw, sub := st.sw, st.sub
	defer sub.Close()
	if sw.flush() != nil {
		return
	}
	heartbeat := time.NewTicker(e.heartbeat())
	defer heartbeat.Stop()
	var batch []*bus.Event
	for {
		var ended error
		select {
		case <-gone:
			return
		case <-heartbeat.C:
			sw.synthetic("", api.EventServerHeartbeat, api.Heartbeat{})
		case <-sub.Ready():
			// Everything queued goes out in one write, however long the burst.
			batch, ended = sub.Take(batch[:0])
			for _, ev := range batch {
				sw.event(ev)
			}
		}
		if errors.Is(ended, bus.ErrClosed) {
			// The last frame says why and asks for a reconnection within a second (the retry field);
			// then the connection is dropped without the body's terminating chunk. OpenCode's SDK
			// reconnects only after an error, never after a clean end, and a server that stops is
			// most often one that restarts: its clients come back with their cursor and are told to
			// reload (resync), as after any restart.
			sw.retry(shutdownRetry)
			sw.synthetic("", api.EventServerShutdown, api.ServerShutdown{Reason: "the server is shutting down"})
			_ = sw.flush()
			return
		}
		if ended != nil {
			// Cut off for falling behind: what it had not taken is gone from its queue but still in
			// the ring, so its reconnection resumes after the last event it was written.
			e.cut.put(st.who, st.cursor, time.Now())
			return
		}
		if err := sw.flush(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				e.cut.put(st.who, st.cursor, time.Now()) // the connection took nothing in time
			}
			return
		}
		if len(batch) > 0 {
			st.cursor = e.Bus.CursorOf(batch[len(batch)-1])
		}
	}
}

// streamClient identifies a client across its reconnections well enough to resume a stream the
// server cut: the same address, credentials, user agent and stream.
func streamClient(r *http.Request, global bool) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	h := sha256.New()
	for _, part := range []string{host, r.UserAgent(), r.Header.Get("Authorization"), r.Header.Get("Cookie"),
		r.URL.Query().Get("auth_token"), strconv.FormatBool(global), DirectoryOf(r.Context())} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return string(h.Sum(nil))
}

// cutStreams remembers, for a while, where the streams the server cut off stopped, so that their
// clients resume there when they reconnect without a cursor.
type cutStreams struct {
	mu     sync.Mutex
	cursor map[string]cutStream
}

type cutStream struct {
	cursor string
	at     time.Time
}

// cutMemory is how long a cut stream's cursor is kept: OpenCode's clients reconnect within seconds.
const cutMemory = 2 * time.Minute

func (c *cutStreams) put(who, cursor string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cursor == nil {
		c.cursor = map[string]cutStream{}
	}
	for k, v := range c.cursor {
		if now.Sub(v.at) > cutMemory {
			delete(c.cursor, k)
		}
	}
	c.cursor[who] = cutStream{cursor: cursor, at: now}
}

// take returns and forgets the cursor of a recently cut stream of this client, or "".
func (c *cutStreams) take(who string, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.cursor[who]
	if !ok {
		return ""
	}
	delete(c.cursor, who)
	if now.Sub(v.at) > cutMemory {
		return ""
	}
	return v.cursor
}

// shutdownRetry is the reconnection delay a stream asks of its client when the server stops.
const shutdownRetry = time.Second

// responseHead is the status line and headers of a hijacked stream. For HTTP/1.1 the body is
// chunked, as net/http would send it, and without "Connection: close": clients (undici, the OpenCode
// SDK) then tell a dropped connection, after which they reconnect and replay, from a clean end (the
// terminating chunk), after which they stop. A stream is never ended cleanly: it is dropped when the
// server stops, so that its client comes back. HTTP/1.0 has no chunked encoding (RFC 9112 forbids
// it): there the body ends when the connection closes, as nginx's default proxy_http_version 1.0
// expects.
func responseHead(h http.Header, chunked bool) []byte {
	var b []byte
	b = append(b, "HTTP/1.1 200 OK\r\n"...)
	for k, vs := range h {
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if chunked {
		return append(b, "Transfer-Encoding: chunked\r\n\r\n"...)
	}
	return append(b, "Connection: close\r\n\r\n"...)
}

func (e *Events) heartbeat() time.Duration {
	if e.Heartbeat > 0 {
		return e.Heartbeat
	}
	return 10 * time.Second
}

func (e *Events) writeTimeout() time.Duration {
	if e.WriteTimeout > 0 {
		return e.WriteTimeout
	}
	return 15 * time.Second
}

// sseWriter frames events into a buffer and writes it either to a hijacked connection or through
// the ResponseWriter. Errors are sticky, so a dead client costs one failed write.
type sseWriter struct {
	bus     *bus.Bus
	global  bool
	timeout time.Duration

	conn    net.Conn // hijacked
	chunked bool     // the hijacked body is chunked (HTTP/1.1); else it ends with the connection
	header  []byte   // the response head, written with the first frames

	w  http.ResponseWriter // fallback
	rc *http.ResponseController

	buf []byte
	err error
}

func (s *sseWriter) frame(cursor string, data []byte) {
	if cursor != "" {
		s.buf = append(s.buf, "id: "...)
		s.buf = append(s.buf, cursor...)
		s.buf = append(s.buf, '\n')
	}
	s.buf = append(s.buf, "data: "...)
	s.buf = append(s.buf, data...)
	s.buf = append(s.buf, '\n', '\n')
}

func (s *sseWriter) event(ev *bus.Event) {
	data := ev.Payload
	if s.global {
		data = ev.Global
	}
	s.frame(s.bus.CursorOf(ev), data)
}

// synthetic writes a per-connection event that is not on the bus (connected, heartbeat, shutdown):
// props is the event's payload type of package api, which always encodes.
func (s *sseWriter) synthetic(cursor, typ string, props any) {
	p, _ := json.Marshal(props)
	payload := []byte(`{"id":"` + s.bus.NewEventID() + `","type":"` + typ + `","properties":` + string(p) + `}`)
	if s.global {
		payload = append(append([]byte(`{"payload":`), payload...), '}')
	}
	s.frame(cursor, payload)
}

// retry writes the SSE retry field: the client's reconnection delay from then on.
func (s *sseWriter) retry(d time.Duration) {
	s.buf = append(s.buf, "retry: "...)
	s.buf = strconv.AppendInt(s.buf, d.Milliseconds(), 10)
	s.buf = append(s.buf, '\n')
}

func (s *sseWriter) flush() error {
	if s.err != nil {
		return s.err
	}
	if len(s.buf) == 0 && s.header == nil {
		return nil
	}
	deadline := time.Now().Add(s.timeout)
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(deadline)
		out := make([]byte, 0, len(s.header)+len(s.buf)+16)
		out = append(out, s.header...)
		s.header = nil
		if !s.chunked {
			out = append(out, s.buf...)
		} else if len(s.buf) > 0 {
			out = strconv.AppendInt(out, int64(len(s.buf)), 16)
			out = append(out, "\r\n"...)
			out = append(out, s.buf...)
			out = append(out, "\r\n"...)
		}
		_, s.err = s.conn.Write(out)
	} else {
		_ = s.rc.SetWriteDeadline(deadline)
		if _, s.err = s.w.Write(s.buf); s.err == nil {
			s.err = s.rc.Flush()
		}
	}
	// Keep a small buffer between bursts; drop a large one so an idle stream holds little.
	if cap(s.buf) > 16<<10 {
		s.buf = nil
	} else {
		s.buf = s.buf[:0]
	}
	return s.err
}
