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

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/testenv"
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
	return s.openStreamAs(t, path, lastEventID, streamOptions{})
}

// streamOptions shape a test client's stream.
type streamOptions struct {
	userAgent string                    // sent instead of Go's own
	body      func(io.Reader) io.Reader // reads the response body through this (a slow reader)
}

func (s *apiServer) openStreamAs(t *testing.T, path, lastEventID string, o streamOptions) *sseClient {
	t.Helper()
	req := s.newRequest(t, http.MethodGet, path, "")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if o.userAgent != "" {
		req.Header.Set("User-Agent", o.userAgent)
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
	var body io.Reader = res.Body
	if o.body != nil {
		body = o.body(body)
	}
	go func() {
		defer close(c.done)
		defer close(c.frames)
		readFrames(body, c.frames)
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
			// OpenCode's clients reload their state on server.instance.disposed.
			if _, e := again.next(); e.Type != "server.instance.disposed" || e.Properties["directory"] != s.dir {
				t.Fatalf("after a resync came %s %v, want server.instance.disposed of %s", e.Type, e.Properties, s.dir)
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

// TestSSEStuckClientIsDroppedAndResumesWhereItWasCut connects a real TCP client that never reads:
// its socket buffers fill, more than its budget waits, and it is cut off, while a reading client gets
// every event. Reconnecting without a cursor (as OpenCode's SDK does), it resumes where it was cut.
func TestSSEStuckClientIsDroppedAndResumesWhereItWasCut(t *testing.T) {
	s := startAPIServer(t, apiOptions{maxQueued: 256 << 10, writeTimeout: time.Second})
	host := strings.TrimPrefix(s.base, "http://")
	stuck, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	creds := base64.StdEncoding.EncodeToString([]byte(apiUser + ":" + apiPassword))
	if _, err := fmt.Fprintf(stuck, "GET /event HTTP/1.1\r\nHost: %s\r\nUser-Agent: stuck-client\r\nAuthorization: Basic %s\r\n\r\n", host, creds); err != nil {
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

	// The client wakes up and reads what its connection still holds, up to the end the server wrote.
	_ = stuck.SetReadDeadline(time.Now().Add(testenv.Patience))
	res, err := http.ReadResponse(bufio.NewReader(stuck), nil)
	if err != nil {
		t.Fatal(err)
	}
	frames := make(chan sseFrame, 4096)
	readFrames(res.Body, frames)
	close(frames)
	lastSeen := -1
	for f := range frames {
		var e eventEnvelope
		if json.Unmarshal([]byte(f.Data), &e) == nil && e.Type == "test.blob" {
			lastSeen = int(e.Properties["n"].(float64))
		}
	}
	t.Logf("the cut connection delivered blobs up to %d", lastSeen)

	// It comes back without a cursor, as OpenCode's SDK does: it gets what it never received, in
	// order and once, then what was published after the cut.
	back := s.openStreamAs(t, "/event", "", streamOptions{userAgent: "stuck-client"})
	if _, hi := back.connected(); hi.Properties["resync"] != nil {
		t.Fatalf("server.connected = %+v, want a plain resume", hi)
	}
	for n := lastSeen + 1; n < published; n++ {
		if _, e := back.next(); e.Type != "test.blob" || e.Properties["n"] != float64(n) {
			t.Fatalf("resumed frame %s %v, want blob %d", e.Type, e.Properties["n"], n)
		}
	}
	for i := range 20 {
		if _, e := back.next(); e.Type != "test.after" || e.Properties["n"] != float64(i) {
			t.Fatalf("resumed frame %s %v, want test.after %d", e.Type, e.Properties["n"], i)
		}
	}
	// A cut stream is resumed once: the next connection of that client starts fresh.
	fresh := s.openStreamAs(t, "/event", "", streamOptions{userAgent: "stuck-client"})
	fresh.connected()
	fresh.quiet()
}

// TestSSEBurstReachesEveryReaderIncludingASlowOne publishes 10,000 updates as fast as the bus takes
// them to three readers, one of which reads slowly but steadily: nobody is dropped and every reader
// ends with the same events in the same order.
func TestSSEBurstReachesEveryReaderIncludingASlowOne(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	readers := []*sseClient{
		s.openStream(t, "/event", ""),
		s.openStream(t, "/global/event", ""),
		s.openStreamAs(t, "/event", "", streamOptions{body: func(r io.Reader) io.Reader { return &slowReader{r: r, pause: time.Millisecond} }}),
	}
	for _, r := range readers {
		r.connected()
	}
	testenv.Eventually(t, "three subscribers", func() bool { return s.bus.Subscribers() == 3 })
	const updates = 10000
	for i := range updates {
		part := map[string]any{"id": fmt.Sprintf("prt_%d", i%16), "text": strings.Repeat("y", i%200), "n": i}
		if err := s.bus.Publish("", "message.part.updated", map[string]any{"part": part}); err != nil {
			t.Fatal(err)
		}
	}
	for k, r := range readers {
		final := map[string]float64{}
		for i := range updates {
			_, e := r.nextOfType("message.part.updated")
			p := e.Properties["part"].(map[string]any)
			if p["n"] != float64(i) {
				t.Fatalf("reader %d: update %d carries n=%v", k, i, p["n"])
			}
			final[p["id"].(string)] = p["n"].(float64)
		}
		if len(final) != 16 || final["prt_15"] != updates-1 {
			t.Errorf("reader %d ended with %v", k, final)
		}
	}
	if n := s.bus.Subscribers(); n != 3 {
		t.Fatalf("%d readers still subscribed after the burst, want 3", n)
	}
}

// slowReader reads at most 4 KiB at a time with a pause before each read: a healthy but slow client.
type slowReader struct {
	r     io.Reader
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.pause)
	return s.r.Read(p[:min(len(p), 4<<10)])
}

// TestSSEOverHTTP10IsCloseDelimited: an HTTP/1.0 client (nginx's default towards an upstream) gets
// the stream as a body that ends with the connection: no Transfer-Encoding, which HTTP/1.0 does not
// have (RFC 9112 forbids sending it), and frames as they are, not chunk-framed.
func TestSSEOverHTTP10IsCloseDelimited(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	host := strings.TrimPrefix(s.base, "http://")
	creds := base64.StdEncoding.EncodeToString([]byte(apiUser + ":" + apiPassword))
	for _, path := range []string{"/event", "/global/event"} {
		t.Run(path+" streams events with no chunked encoding", func(t *testing.T) {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			_ = conn.SetDeadline(time.Now().Add(testenv.Patience))
			if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\nAuthorization: Basic %s\r\n\r\n", path, host, creds); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			var head []string
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("reading the response head %q: %v", head, err)
				}
				line = strings.TrimRight(line, "\r\n")
				if line == "" {
					break
				}
				head = append(head, line)
			}
			if !strings.HasPrefix(head[0], "HTTP/1.") || !strings.Contains(head[0], " 200 ") {
				t.Fatalf("status line %q", head[0])
			}
			joined := strings.ToLower(strings.Join(head, "\n"))
			if strings.Contains(joined, "transfer-encoding") || !strings.Contains(joined, "connection: close") || !strings.Contains(joined, "content-type: text/event-stream") {
				t.Fatalf("response head for HTTP/1.0:\n%s\nwant no Transfer-Encoding, Connection: close and the event-stream type", strings.Join(head, "\n"))
			}
			if first, err := br.Peek(4); err != nil || (string(first) != "id: " && string(first) != "data") {
				t.Fatalf("the body begins %q (%v), want a frame, not a chunk size", first, err)
			}
			frames := make(chan sseFrame, 16)
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer close(frames)
				readFrames(br, frames)
			}()
			defer func() { conn.Close(); testenv.Recv(t, done, "the HTTP/1.0 reader ending") }()
			c := &sseClient{t: t, global: strings.HasPrefix(path, "/global"), body: conn, frames: frames, done: done}
			c.connected() // written after the stream subscribed
			if err := s.bus.Publish("", "test.http10", map[string]any{"n": 1}); err != nil {
				t.Fatal(err)
			}
			if _, e := c.nextOfType("test.http10"); e.Properties["n"] != float64(1) {
				t.Fatalf("event %+v", e)
			}
		})
	}
}
