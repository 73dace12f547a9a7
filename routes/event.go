package routes

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"tandem/bus"
)

// Events serves the two SSE streams.
type Events struct {
	Bus *bus.Bus
	// Heartbeat is the interval of server.heartbeat frames (10 s, as OpenCode).
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a client; a client that cannot take a frame in time is dropped.
	WriteTimeout time.Duration
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

func (e *Events) stream(w http.ResponseWriter, r *http.Request, global bool, filter bus.Filter) {
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("lastEventID")
	}
	sub, resume, err := e.Bus.Subscribe(last, filter)
	if err != nil {
		writeError(w, r, unavailable("the server is shutting down"))
		return
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)

	sw := &sseWriter{w: w, rc: rc, bus: e.Bus, global: global, timeout: e.writeTimeout()}
	connected := map[string]any{}
	if resume.Resync {
		connected["resync"] = true
	}
	sw.synthetic(resume.Cursor, "server.connected", connected)
	for _, ev := range resume.Replay {
		sw.event(e.Bus, ev)
	}
	if sw.flush() != nil {
		return
	}

	heartbeat := time.NewTicker(e.heartbeat())
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-heartbeat.C:
			sw.synthetic("", "server.heartbeat", map[string]any{})
		case ev, ok := <-sub.Events():
			if !ok {
				if errors.Is(sub.Err(), bus.ErrClosed) {
					sw.synthetic("", "server.shutdown", map[string]any{"reason": "the server is shutting down"})
					_ = sw.flush()
				}
				return
			}
			sw.event(e.Bus, ev)
			// Drain what is already queued before flushing, so bursts cost one write.
			for drained := false; !drained; {
				select {
				case ev, ok := <-sub.Events():
					if !ok {
						drained = true
						continue
					}
					sw.event(e.Bus, ev)
				default:
					drained = true
				}
			}
		}
		if sw.flush() != nil {
			return
		}
	}
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

// sseWriter frames events; errors are sticky so a dead client costs one failed write.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	bus     *bus.Bus
	global  bool
	timeout time.Duration
	buf     []byte
	err     error
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

func (s *sseWriter) event(b *bus.Bus, ev *bus.Event) {
	data := ev.Payload
	if s.global {
		data = ev.Global
	}
	s.frame(b.CursorOf(ev), data)
}

// synthetic writes a per-connection event that is not on the bus (connected, heartbeat, shutdown).
func (s *sseWriter) synthetic(cursor, typ string, props map[string]any) {
	p, _ := json.Marshal(props)
	payload := []byte(`{"id":"` + s.bus.NewEventID() + `","type":"` + typ + `","properties":` + string(p) + `}`)
	if s.global {
		payload = append(append([]byte(`{"payload":`), payload...), '}')
	}
	s.frame(cursor, payload)
}

func (s *sseWriter) flush() error {
	if s.err != nil {
		return s.err
	}
	if len(s.buf) == 0 {
		return nil
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(s.buf); err != nil {
		s.err = err
		return err
	}
	s.buf = s.buf[:0]
	s.err = s.rc.Flush()
	return s.err
}
