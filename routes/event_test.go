package routes_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"tandem/bus"
	"tandem/testenv"
)

// sseFrame is one server-sent event as the wire carries it.
type sseFrame struct {
	ID   string
	Data string
}

// eventEnvelope is what the frames carry; /global/event wraps it in {directory, payload}.
type eventEnvelope struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties"`
}

// sseClient reads one real SSE connection in the background.
type sseClient struct {
	t      *testing.T
	global bool
	body   io.Closer
	frames chan sseFrame
	done   chan struct{}
}

func (s *apiServer) openStream(t *testing.T, path, lastEventID string) *sseClient {
	t.Helper()
	req := s.newRequest(t, http.MethodGet, path, "")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("GET %s: %d %s %s", path, res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	c := &sseClient{t: t, global: strings.HasPrefix(path, "/global"), body: res.Body, frames: make(chan sseFrame, 4096), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer close(c.frames)
		readFrames(res.Body, c.frames)
	}()
	t.Cleanup(c.close)
	return c
}

// readFrames parses SSE frames until the stream ends.
func readFrames(r io.Reader, out chan<- sseFrame) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var f sseFrame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out <- f
			f = sseFrame{}
		case strings.HasPrefix(line, "id: "):
			f.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			f.Data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func (c *sseClient) close() {
	c.body.Close()
	testenv.Recv(c.t, c.done, "the stream's reader ending")
}

// next returns the next frame and its decoded envelope, failing after a generous wait.
func (c *sseClient) next() (sseFrame, eventEnvelope) {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.t.Fatal("the stream ended")
		}
		data := f.Data
		if c.global {
			var g struct {
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal([]byte(data), &g); err != nil {
				c.t.Fatalf("global frame %s: %v", data, err)
			}
			data = string(g.Payload)
		}
		var e eventEnvelope
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			c.t.Fatalf("frame %q: %v", f.Data, err)
		}
		return f, e
	case <-time.After(10 * time.Second):
		c.t.Fatal("no frame within 10 s")
		return sseFrame{}, eventEnvelope{}
	}
}

// nextOfType skips frames of other types (heartbeats) until one of typ arrives.
func (c *sseClient) nextOfType(typ string) (sseFrame, eventEnvelope) {
	c.t.Helper()
	for {
		f, e := c.next()
		if e.Type == typ {
			return f, e
		}
	}
}

// quiet checks that no further frame arrives within a short look.
func (c *sseClient) quiet() {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		if ok {
			c.t.Errorf("unexpected extra frame %+v", f)
		}
	case <-time.After(200 * time.Millisecond):
	}
}

func (c *sseClient) connected() (sseFrame, eventEnvelope) {
	c.t.Helper()
	f, e := c.next()
	if e.Type != "server.connected" {
		c.t.Fatalf("first frame %s, want server.connected", e.Type)
	}
	return f, e
}

func TestSSEReconnectWithLastEventIDReceivesExactlyTheMissedEvents(t *testing.T) {
	for _, path := range []string{"/event", "/global/event"} {
		t.Run("on "+path, func(t *testing.T) {
			s := startAPIServer(t, apiOptions{})
			c := s.openStream(t, path, "")
			hello, _ := c.connected()
			if hello.ID == "" {
				t.Fatal("server.connected carries no cursor")
			}
			var last string
			for i := range 3 {
				sess := s.createSession(t, fmt.Sprintf(`{"title":"before %d"}`, i))
				f, e := c.nextOfType("session.created")
				if e.Properties["sessionID"] != sess.ID || f.ID == "" {
					t.Fatalf("live event %d: %+v", i, e)
				}
				last = f.ID
			}
			c.close()

			var missed []string
			for i := range 4 {
				missed = append(missed, s.createSession(t, fmt.Sprintf(`{"title":"missed %d"}`, i)).ID)
			}
			again := s.openStream(t, path, last)
			hiFrame, hi := again.connected()
			if hiFrame.ID != last {
				t.Fatalf("server.connected before a replay carries %q, want the client's own cursor %q", hiFrame.ID, last)
			}
			if hi.Properties["resync"] != nil {
				t.Fatalf("a cursor inside the ring asked for a resync: %+v", hi)
			}
			seen := map[string]bool{}
			for i, want := range missed {
				f, e := again.next()
				if e.Type != "session.created" || e.Properties["sessionID"] != want {
					t.Fatalf("replayed frame %d: %s %v, want session.created of %s", i, e.Type, e.Properties["sessionID"], want)
				}
				if seen[f.ID] {
					t.Fatalf("cursor %s delivered twice", f.ID)
				}
				seen[f.ID] = true
			}
			after := s.createSession(t, `{"title":"after"}`)
			if _, e := again.next(); e.Properties["sessionID"] != after.ID {
				t.Fatalf("after the replay came %+v, want the live session.created of %s", e, after.ID)
			}
			again.quiet()
		})
	}
}

func TestSSEStaleCursorGetsResync(t *testing.T) {
	tests := []struct {
		name   string
		cursor func(s *apiServer, first string) string
	}{
		{"a cursor from another boot", func(*apiServer, string) string {
			other := bus.New(bus.Options{})
			defer other.Close()
			return other.Cursor()
		}},
		{"a cursor older than the ring", func(_ *apiServer, first string) string { return first }},
		{"a cursor that is not one", func(*apiServer, string) string { return "rubbish" }},
	}
	for _, tt := range tests {
		t.Run(tt.name+" gets server.connected with resync:true", func(t *testing.T) {
			s := startAPIServer(t, apiOptions{replay: 4})
			c := s.openStream(t, "/event", "")
			c.connected()
			s.createSession(t, "")
			first, _ := c.nextOfType("session.created")
			for range 6 {
				s.createSession(t, "")
			}
			c.close()

			again := s.openStream(t, "/event", tt.cursor(s, first.ID))
			_, hi := again.connected()
			if hi.Properties["resync"] != true {
				t.Fatalf("server.connected = %+v, want resync:true", hi)
			}
			// Nothing is replayed: the next frame is the next live event.
			live := s.createSession(t, `{"title":"live"}`)
			if _, e := again.next(); e.Properties["sessionID"] != live.ID {
				t.Fatalf("after a resync came %+v, want the live event", e)
			}
		})
	}
}

func TestSSEEventStreamIsScopedToItsDirectory(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	other := t.TempDir()
	here := s.openStream(t, "/event", "")
	here.connected()
	global := s.openStream(t, "/global/event", "")
	global.connected()

	var elsewhere struct{ ID string }
	s.call(t, http.MethodPost, "/session?directory="+other, `{}`, http.StatusOK, &elsewhere)
	mine := s.createSession(t, `{}`)
	if _, e := here.nextOfType("session.created"); e.Properties["sessionID"] != mine.ID {
		t.Errorf("/event delivered %v, another directory's event", e.Properties["sessionID"])
	}
	for _, want := range []string{elsewhere.ID, mine.ID} {
		if _, e := global.nextOfType("session.created"); e.Properties["sessionID"] != want {
			t.Errorf("/global/event delivered %v, want %s", e.Properties["sessionID"], want)
		}
	}
}

// TestSSESlowSubscriberIsDroppedWhileAnotherKeepsReceiving connects a real TCP client that never
// reads: its socket buffers fill, its queue overflows and it is cut off, while a reading client gets
// every event.
func TestSSESlowSubscriberIsDroppedWhileAnotherKeepsReceiving(t *testing.T) {
	s := startAPIServer(t, apiOptions{queue: 8, writeTimeout: time.Second})
	host := strings.TrimPrefix(s.base, "http://")
	stuck, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	creds := base64.StdEncoding.EncodeToString([]byte(apiUser + ":" + apiPassword))
	if _, err := fmt.Fprintf(stuck, "GET /event HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\n\r\n", host, creds); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the silent client to subscribe", func() bool { return s.bus.Subscribers() == 1 })

	reader := s.openStream(t, "/event", "")
	reader.connected()
	testenv.Eventually(t, "the reader to subscribe", func() bool { return s.bus.Subscribers() == 2 })

	blob := strings.Repeat("x", 64<<10)
	published := 0
	for s.bus.Subscribers() == 2 {
		if published == 2000 {
			t.Fatalf("after %d events of 64 KiB the silent client is still subscribed", published)
		}
		if err := s.bus.Publish("", "test.blob", map[string]any{"n": published, "blob": blob}); err != nil {
			t.Fatal(err)
		}
		if _, e := reader.next(); e.Properties["n"] != float64(published) {
			t.Fatalf("the reader got event %v, want %d", e.Properties["n"], published)
		}
		published++
	}
	for i := range 20 {
		if err := s.bus.Publish("", "test.after", map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
		if _, e := reader.next(); e.Type != "test.after" || e.Properties["n"] != float64(i) {
			t.Fatalf("after the drop the reader got %s %v", e.Type, e.Properties["n"])
		}
	}
	t.Logf("the silent client was dropped after %d events of 64 KiB", published)
}
