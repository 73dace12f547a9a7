package routes_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/infra/terminal"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// ptyWait only bounds how long a broken test hangs; nothing asserts on time.
const ptyWait = 20 * time.Second

const allowedOrigin = "http://ide.example"

type ptyServer struct {
	base string // http://127.0.0.1:port
	m    *terminal.Manager
	dir  string
}

type ptyServerOptions struct {
	scrollback   int
	viewerQueue  int
	writeTimeout time.Duration
	now          func() time.Time
}

// startPTYServer runs the real server (auth, Origin and Host guards) with the PTY routes.
func startPTYServer(tb testing.TB, o ptyServerOptions) *ptyServer {
	tb.Helper()
	b := bus.New(bus.Options{})
	m := terminal.NewManager(terminal.Options{Bus: b, Scrollback: o.scrollback, ViewerQueue: o.viewerQueue, Now: o.now})
	api := &routes.API{Modules: []routes.Module{&routes.Ptys{Manager: m, WriteTimeout: o.writeTimeout}}}
	dir := tb.TempDir()
	srv, err := server.Listen(server.Config{
		Port: testenv.UnusedPort(tb), Directory: dir, CORS: []string{allowedOrigin},
		Auth: auth.New(auth.Credentials{Username: "tandem", Password: "secret"}), PasswordSet: true, API: api,
	})
	if err != nil {
		tb.Fatal(err)
	}
	srv.Serve()
	tb.Cleanup(func() {
		m.Close() // ends every viewer first: hijacked connections outlive http.Server.Shutdown
		ctx, cancel := context.WithTimeout(context.Background(), ptyWait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		testenv.Recv(tb, srv.Done(), "server shutdown")
		b.Close()
	})
	return &ptyServer{base: strings.TrimSuffix(srv.URL(), "/"), m: m, dir: dir}
}

func ptyBasicAuth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("tandem:secret"))
}

// call makes an authenticated JSON request and decodes the answer into out (when not nil).
func (s *ptyServer) call(tb testing.TB, method, path string, body any, out any) int {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("Authorization", ptyBasicAuth())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			tb.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

func (s *ptyServer) create(tb testing.TB, command string, args ...string) terminal.Info {
	tb.Helper()
	var info terminal.Info
	if code := s.call(tb, http.MethodPost, "/pty", map[string]any{"command": command, "args": args}, &info); code != http.StatusOK {
		tb.Fatalf("POST /pty: %d", code)
	}
	return info
}

// viewer is a real WebSocket client of /pty/{id}/connect that checks the protocol as it reads.
type ptyViewer struct {
	tb     testing.TB
	conn   *websocket.Conn
	replay []byte // text before the cursor frame
	cursor int64  // from the cursor frame
	live   bytes.Buffer
}

type ptyDialOptions struct {
	query  string
	header http.Header
	noAuth bool
}

func (s *ptyServer) dialRaw(tb testing.TB, ptyID string, o ptyDialOptions) (*websocket.Conn, *http.Response, error) {
	tb.Helper()
	h := http.Header{}
	if !o.noAuth {
		h.Set("Authorization", ptyBasicAuth())
	}
	for k, v := range o.header {
		h[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), ptyWait)
	defer cancel()
	u := "ws" + strings.TrimPrefix(s.base, "http") + "/pty/" + ptyID + "/connect"
	if o.query != "" {
		u += "?" + o.query
	}
	return websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h})
}

// dial connects and reads up to and including the cursor frame.
func (s *ptyServer) dial(tb testing.TB, ptyID string, o ptyDialOptions) *ptyViewer {
	tb.Helper()
	conn, resp, err := s.dialRaw(tb, ptyID, o)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		tb.Fatalf("dial %s: %v (HTTP %d)", ptyID, err, status)
	}
	conn.SetReadLimit(-1)
	v := &ptyViewer{tb: tb, conn: conn}
	tb.Cleanup(func() { _ = conn.CloseNow() })
	for {
		typ, data := v.read()
		if typ == websocket.MessageBinary {
			if len(data) == 0 || data[0] != 0 {
				tb.Fatalf("binary frame without the 0x00 prefix: %q", data)
			}
			var meta struct {
				Cursor *int64 `json:"cursor"`
			}
			if err := json.Unmarshal(data[1:], &meta); err != nil || meta.Cursor == nil {
				tb.Fatalf("cursor frame %q: %v", data, err)
			}
			v.cursor = *meta.Cursor
			return v
		}
		if len(data) > 64<<10 {
			tb.Errorf("replay frame of %d bytes, over 64 KiB", len(data))
		}
		v.replay = append(v.replay, data...)
	}
}

func (v *ptyViewer) read() (websocket.MessageType, []byte) {
	v.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ptyWait)
	defer cancel()
	typ, data, err := v.conn.Read(ctx)
	if err != nil {
		v.tb.Fatalf("read: %v (so far %q)", err, ptyTail(v.live.String()))
	}
	return typ, data
}

// until reads live output until it, or the replay, contains want.
func (v *ptyViewer) until(want string) string {
	v.tb.Helper()
	for !strings.Contains(string(v.replay)+v.live.String(), want) {
		typ, data := v.read()
		if typ != websocket.MessageText {
			v.tb.Fatalf("live output in a %v frame", typ)
		}
		v.live.Write(data)
	}
	return v.live.String()
}

// closed reads until the server closes and returns the close status.
func (v *ptyViewer) closed() websocket.StatusCode {
	v.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ptyWait)
	defer cancel()
	for {
		_, data, err := v.conn.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err)
		}
		v.live.Write(data)
	}
}

func (v *ptyViewer) send(text string) {
	v.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ptyWait)
	defer cancel()
	if err := v.conn.Write(ctx, websocket.MessageText, []byte(text)); err != nil {
		v.tb.Fatalf("write: %v", err)
	}
}

func ptyTail(s string) string {
	if len(s) > 300 {
		return "…" + s[len(s)-300:]
	}
	return s
}

func ptyNoLeaks(t *testing.T) {
	t.Helper()
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
}

func ptyProcessAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z'
}

func TestPTYRest(t *testing.T) {
	ptyNoLeaks(t)
	s := startPTYServer(t, ptyServerOptions{})
	info := s.create(t, "/bin/sh")
	if !strings.HasPrefix(info.ID, "pty_") || info.Status != terminal.Running || info.Cwd != s.dir || info.Pid <= 0 {
		t.Fatalf("created %+v", info)
	}

	t.Run("get returns the PTY", func(t *testing.T) {
		var got map[string]any
		if code := s.call(t, http.MethodGet, "/pty/"+info.ID, nil, &got); code != 200 || got["id"] != info.ID || got["status"] != "running" {
			t.Errorf("%d %v", code, got)
		}
		if _, has := got["exitCode"]; has {
			t.Errorf("a running PTY has an exitCode: %v", got)
		}
	})
	t.Run("a plain GET of the connect URL gets the JSON error shape", func(t *testing.T) {
		var got struct {
			Name string
			Data struct{ Message string }
		}
		if code := s.call(t, http.MethodGet, "/pty/"+info.ID+"/connect", nil, &got); code != 400 || got.Name != "BadRequest" || !strings.Contains(got.Data.Message, "WebSocket") {
			t.Errorf("%d %+v", code, got)
		}
	})
	t.Run("list holds it", func(t *testing.T) {
		var list []terminal.Info
		if code := s.call(t, http.MethodGet, "/pty", nil, &list); code != 200 || len(list) != 1 || list[0].ID != info.ID {
			t.Errorf("%d %+v", code, list)
		}
	})
	t.Run("put renames and resizes", func(t *testing.T) {
		var got terminal.Info
		code := s.call(t, http.MethodPut, "/pty/"+info.ID, map[string]any{"title": "build", "size": map[string]int{"rows": 30, "cols": 100}}, &got)
		if code != 200 || got.Title != "build" {
			t.Errorf("%d %+v", code, got)
		}
	})
	t.Run("a zero size is a bad request", func(t *testing.T) {
		var e struct{ Name string }
		if code := s.call(t, http.MethodPut, "/pty/"+info.ID, map[string]any{"size": map[string]int{"rows": 0, "cols": 100}}, &e); code != 400 {
			t.Errorf("%d %+v", code, e)
		}
	})
	t.Run("shells are listed", func(t *testing.T) {
		var shells []terminal.Shell
		if code := s.call(t, http.MethodGet, "/pty/shells", nil, &shells); code != 200 || len(shells) == 0 || shells[0].Path == "" {
			t.Errorf("%d %+v", code, shells)
		}
	})
	t.Run("a missing cwd is a bad request", func(t *testing.T) {
		var e struct {
			Name string
			Data struct{ Message string }
		}
		code := s.call(t, http.MethodPost, "/pty", map[string]any{"command": "/bin/sh", "cwd": "/no/such/dir"}, &e)
		if code != 400 || !strings.Contains(e.Data.Message, "does not exist") {
			t.Errorf("%d %+v", code, e)
		}
	})
	t.Run("a malformed ID is a bad request", func(t *testing.T) {
		if code := s.call(t, http.MethodGet, "/pty/ses_123", nil, &map[string]any{}); code != 400 {
			t.Errorf("%d", code)
		}
	})
	t.Run("no credentials is 401", func(t *testing.T) {
		resp, err := http.Get(s.base + "/pty")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%d", resp.StatusCode)
		}
	})
	t.Run("delete kills it and forgets it", func(t *testing.T) {
		var ok bool
		if code := s.call(t, http.MethodDelete, "/pty/"+info.ID, nil, &ok); code != 200 || !ok {
			t.Errorf("%d %v", code, ok)
		}
		if ptyProcessAlive(info.Pid) {
			t.Errorf("process %d survived DELETE", info.Pid)
		}
		var e struct {
			Name string
			Data map[string]any
		}
		if code := s.call(t, http.MethodGet, "/pty/"+info.ID, nil, &e); code != 404 || e.Name != "PtyNotFoundError" || e.Data["ptyID"] != info.ID {
			t.Errorf("%d %+v", code, e)
		}
	})
}

func TestPTYWebSocket(t *testing.T) {
	ptyNoLeaks(t)
	s := startPTYServer(t, ptyServerOptions{})

	t.Run("typing echo hi prints hi", func(t *testing.T) {
		info := s.create(t, "/bin/sh")
		v := s.dial(t, info.ID, ptyDialOptions{})
		v.send("echo h$((0))i\n")
		v.until("h0i")
	})
	t.Run("a resize shows in stty size", func(t *testing.T) {
		info := s.create(t, "/bin/sh")
		v := s.dial(t, info.ID, ptyDialOptions{})
		v.send("stty size\n")
		v.until("24 80")
		if code := s.call(t, http.MethodPut, "/pty/"+info.ID, map[string]any{"size": map[string]int{"rows": 40, "cols": 120}}, nil); code != 200 {
			t.Fatalf("PUT %d", code)
		}
		v.send("stty size\n")
		v.until("40 120")
	})
	t.Run("viewers report their sizes and the terminal takes the largest, which each is told", func(t *testing.T) {
		info := s.create(t, "/bin/sh")
		desk := s.dial(t, info.ID, ptyDialOptions{})
		phone := s.dial(t, info.ID, ptyDialOptions{})
		report := func(v *ptyViewer, rows, cols int) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), ptyWait)
			defer cancel()
			if err := v.conn.Write(ctx, websocket.MessageBinary, []byte(fmt.Sprintf("\x00{\"size\":{\"rows\":%d,\"cols\":%d}}", rows, cols))); err != nil {
				t.Fatal(err)
			}
		}
		told := func(v *ptyViewer, want string) {
			t.Helper()
			for {
				typ, data := v.read()
				if typ == websocket.MessageBinary && len(data) > 0 && data[0] == 0 && string(data[1:]) == want {
					return
				}
				if typ == websocket.MessageText {
					v.live.Write(data)
				}
			}
		}
		report(desk, 40, 150)
		told(desk, `{"size":{"rows":40,"cols":150}}`)
		report(phone, 50, 45)
		told(phone, `{"size":{"rows":50,"cols":150}}`)
		told(desk, `{"size":{"rows":50,"cols":150}}`)
		desk.send("stty size\n")
		desk.until("50 150")
	})
	t.Run("two viewers see the same output", func(t *testing.T) {
		info := s.create(t, "/bin/sh")
		a := s.dial(t, info.ID, ptyDialOptions{})
		b := s.dial(t, info.ID, ptyDialOptions{})
		a.send("echo from-$((6*7))\n")
		outA := string(a.replay) + a.until("from-42")
		outB := string(b.replay) + b.until("from-42")
		if !strings.HasPrefix(outA, outB) && !strings.HasPrefix(outB, outA) {
			t.Errorf("viewers disagree:\n%q\n%q", outA, outB)
		}
	})
	t.Run("a reconnect with the cursor gets only what was missed", func(t *testing.T) {
		info := s.create(t, "/bin/sh")
		first := s.dial(t, info.ID, ptyDialOptions{})
		first.send("echo one-$((1))\n")
		first.until("one-1")
		cursor := first.cursor + int64(first.live.Len())
		if err := first.conn.Close(websocket.StatusNormalClosure, ""); err != nil {
			t.Fatal(err)
		}
		// Output produced while nobody watches.
		if err := s.m.Write(context.Background(), info.ID, []byte("echo two-$((2))\n")); err != nil {
			t.Fatal(err)
		}
		watcher := s.dial(t, info.ID, ptyDialOptions{})
		watcher.until("two-2")
		again := s.dial(t, info.ID, ptyDialOptions{query: "cursor=" + strconv.FormatInt(cursor, 10)})
		seen := string(first.replay) + first.live.String()
		missed := string(again.replay)
		if strings.Contains(missed, "one-1") || !strings.Contains(missed, "two-2") {
			t.Errorf("resumed replay %q", missed)
		}
		all := s.dial(t, info.ID, ptyDialOptions{})
		if string(all.replay) != seen+missed || all.cursor != again.cursor {
			t.Errorf("seen+missed is not the whole output:\nseen+missed %q\nwhole       %q", seen+missed, all.replay)
		}
		none := s.dial(t, info.ID, ptyDialOptions{query: "cursor=-1"})
		if len(none.replay) != 0 || none.cursor != all.cursor {
			t.Errorf("cursor=-1 replayed %q, cursor %d", none.replay, none.cursor)
		}
	})
	t.Run("a 1 MiB paste arrives intact", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "paste")
		var paste strings.Builder
		for i := 0; paste.Len() < 1<<20; i++ {
			paste.WriteString("line " + strconv.Itoa(i) + " ünïcødé ✓\n")
		}
		data := paste.String()[:1<<20]
		info := s.create(t, "/bin/sh", "-c", `stty raw -echo -iexten; echo ready; head -c `+strconv.Itoa(len(data))+` > "$0"; echo done`, out)
		v := s.dial(t, info.ID, ptyDialOptions{})
		v.until("ready")
		v.send(data)
		v.until("done")
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, []byte(data)) {
			t.Errorf("the process received %d bytes, want %d identical bytes", len(got), len(data))
		}
	})
	t.Run("the exit closes with 1000 and the exit code is reported", func(t *testing.T) {
		info := s.create(t, "/bin/sh", "-c", "read line; exit 7")
		v := s.dial(t, info.ID, ptyDialOptions{})
		v.send("\n")
		if code := v.closed(); code != websocket.StatusNormalClosure {
			t.Errorf("close status %v, want 1000", code)
		}
		var got terminal.Info
		s.call(t, http.MethodGet, "/pty/"+info.ID, nil, &got)
		if got.Status != terminal.Exited || got.ExitCode == nil || *got.ExitCode != 7 {
			t.Errorf("after exit: %+v", got)
		}
		_, resp, err := s.dialRaw(t, info.ID, ptyDialOptions{})
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("connecting to an exited PTY: %v %v", err, resp)
		}
	})
	t.Run("an unknown PTY is 404 before the upgrade", func(t *testing.T) {
		_, resp, err := s.dialRaw(t, "pty_doesnotexist", ptyDialOptions{})
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("%v %v", err, resp)
		}
	})
	t.Run("a bad cursor is 400 before the upgrade", func(t *testing.T) {
		info := s.create(t, "/bin/sh")
		_, resp, err := s.dialRaw(t, info.ID, ptyDialOptions{query: "cursor=-2"})
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%v %v", err, resp)
		}
	})
}

func TestPTYSlowViewerIsDroppedAndOthersCarryOn(t *testing.T) {
	ptyNoLeaks(t)
	// The queue is deeper than the whole output, so that the reading viewer is never dropped for
	// lagging on a loaded machine; the viewer that stops reading fills its TCP buffers and is dropped
	// when a frame cannot be written within the timeout.
	const writeTimeout = time.Second
	s := startPTYServer(t, ptyServerOptions{viewerQueue: 1 << 16, writeTimeout: writeTimeout})
	const total = 16 << 20
	info := s.create(t, "/bin/sh", "-c", `stty raw -echo; echo ready; head -c 1 >/dev/null; head -c `+strconv.Itoa(total)+` /dev/zero | tr '\0' x`)
	slow := s.dial(t, info.ID, ptyDialOptions{}) // never reads
	fast := s.dial(t, info.ID, ptyDialOptions{})
	fast.until("ready")
	fast.send("g")
	if code := fast.closed(); code != websocket.StatusNormalClosure {
		t.Errorf("fast viewer closed with %v", code)
	}
	if n := bytes.Count(append(fast.replay, fast.live.Bytes()...), []byte("x")); n != total {
		t.Errorf("fast viewer got %d bytes, want %d", n, total)
	}
	// Let the server's write timeout for the stuck viewer run out before looking at what it got.
	time.Sleep(2 * writeTimeout)
	code := slow.closed()
	if got := slow.live.Len(); got >= total {
		t.Errorf("the slow viewer was never dropped: it got all %d bytes", got)
	}
	if code == websocket.StatusNormalClosure {
		t.Errorf("the slow viewer was closed as if it had seen everything")
	}
}

func TestPTYTicket(t *testing.T) {
	ptyNoLeaks(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := startPTYServer(t, ptyServerOptions{now: clock})
	info := s.create(t, "/bin/sh")
	issue := func(t *testing.T) string {
		t.Helper()
		var tk struct {
			Ticket    string `json:"ticket"`
			ExpiresIn int    `json:"expires_in"`
		}
		if code := s.call(t, http.MethodPost, "/pty/"+info.ID+"/connect-token", nil, &tk); code != 200 || tk.Ticket == "" || tk.ExpiresIn != 60 {
			t.Fatalf("%d %+v", code, tk)
		}
		return tk.Ticket
	}

	t.Run("a ticket opens the socket without credentials, once", func(t *testing.T) {
		tk := issue(t)
		v := s.dial(t, info.ID, ptyDialOptions{noAuth: true, query: "ticket=" + tk})
		v.send("echo t$((1))k\n")
		v.until("t1k")
		_, resp, err := s.dialRaw(t, info.ID, ptyDialOptions{noAuth: true, query: "ticket=" + tk})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("second use: %v %v", err, resp)
		}
	})
	t.Run("an expired ticket is refused", func(t *testing.T) {
		tk := issue(t)
		mu.Lock()
		now = now.Add(61 * time.Second)
		mu.Unlock()
		_, resp, err := s.dialRaw(t, info.ID, ptyDialOptions{noAuth: true, query: "ticket=" + tk})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%v %v", err, resp)
		}
	})
	t.Run("no credentials and no ticket is 401", func(t *testing.T) {
		_, resp, err := s.dialRaw(t, info.ID, ptyDialOptions{noAuth: true})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%v %v", err, resp)
		}
	})
	t.Run("a ticket for an unknown PTY cannot be had", func(t *testing.T) {
		if code := s.call(t, http.MethodPost, "/pty/pty_doesnotexist/connect-token", nil, &map[string]any{}); code != 404 {
			t.Errorf("%d", code)
		}
	})
}

func TestPTYOrigin(t *testing.T) {
	ptyNoLeaks(t)
	s := startPTYServer(t, ptyServerOptions{})
	info := s.create(t, "/bin/sh")
	tests := []struct {
		name   string
		origin string
		want   int // 0: the upgrade succeeds
	}{
		{"a foreign origin is refused", "http://evil.example", http.StatusForbidden},
		{"the server's own origin is accepted", s.base, 0},
		{"an origin allowed with --cors is accepted", allowedOrigin, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, resp, err := s.dialRaw(t, info.ID, ptyDialOptions{header: http.Header{"Origin": {tt.origin}}})
			if tt.want == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				_ = conn.CloseNow()
				return
			}
			if err == nil || resp == nil || resp.StatusCode != tt.want {
				t.Errorf("%v %v", err, resp)
			}
		})
	}

}

func TestPTYShutdownClosesViewersWith1001(t *testing.T) {
	ptyNoLeaks(t)
	s := startPTYServer(t, ptyServerOptions{})
	var viewers []*ptyViewer
	var pids []int
	for range 2 {
		info := s.create(t, "/bin/sh", "-c", "sleep 300 & wait")
		viewers = append(viewers, s.dial(t, info.ID, ptyDialOptions{}))
		pids = append(pids, info.Pid)
	}
	s.m.Close()
	for i, v := range viewers {
		if code := v.closed(); code != websocket.StatusGoingAway {
			t.Errorf("viewer %d closed with %v, want 1001", i, code)
		}
		if ptyProcessAlive(pids[i]) {
			t.Errorf("process %d survived shutdown", pids[i])
		}
	}
	if err := syscall.Kill(pids[0], 0); err == nil && ptyProcessAlive(pids[0]) {
		t.Errorf("process %d still exists", pids[0])
	}
}

// BenchmarkPTYCat measures output throughput: a program writes a large file to the terminal and a
// WebSocket viewer receives all of it (MB/s).
func BenchmarkPTYCat(b *testing.B) {
	s := startPTYServer(b, ptyServerOptions{})
	const size = 16 << 20
	file := filepath.Join(b.TempDir(), "big")
	if err := os.WriteFile(file, bytes.Repeat([]byte("0123456789abcdef"), size/16), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		info := s.create(b, "/bin/sh", "-c", `stty raw -echo; echo ready; head -c 1 >/dev/null; cat "$0"`, file)
		v := s.dial(b, info.ID, ptyDialOptions{})
		v.until("ready\n")
		v.live.Reset()
		v.replay = nil
		b.StartTimer()
		v.send("g")
		if code := v.closed(); code != websocket.StatusNormalClosure {
			b.Fatalf("closed with %v", code)
		}
		b.StopTimer()
		if n := len(v.replay) + v.live.Len(); n != size {
			b.Fatalf("received %d bytes, want %d", n, size)
		}
		_ = s.m.Remove(info.ID)
		b.StartTimer()
	}
}

// BenchmarkKeystrokeEcho measures one keystroke's round trip: typed into the WebSocket, through the
// terminal and back (ns/op is the latency).
func BenchmarkKeystrokeEcho(b *testing.B) {
	s := startPTYServer(b, ptyServerOptions{})
	info := s.create(b, "/bin/sh", "-c", "stty raw -echo; cat")
	v := s.dial(b, info.ID, ptyDialOptions{})
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if err := v.conn.Write(ctx, websocket.MessageText, []byte("k")); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < 1; {
			_, data, err := v.conn.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			got += bytes.Count(data, []byte("k"))
		}
	}
}

func TestPTYOperationsAreDocumented(t *testing.T) {
	api := &routes.API{Modules: []routes.Module{&routes.Ptys{}}}
	body, err := api.Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // OpenCode's operation IDs
		"get /pty/shells":                 "pty.shells",
		"get /pty":                        "pty.list",
		"post /pty":                       "pty.create",
		"get /pty/{ptyID}":                "pty.get",
		"put /pty/{ptyID}":                "pty.update",
		"delete /pty/{ptyID}":             "pty.remove",
		"post /pty/{ptyID}/connect-token": "pty.connectToken",
		"get /pty/{ptyID}/connect":        "pty.connect",
	}
	for key, opID := range want {
		method, path, _ := strings.Cut(key, " ")
		if got := doc.Paths[path][method].OperationID; got != opID {
			t.Errorf("%s: operationId %q, want %q", key, got, opID)
		}
	}
}
