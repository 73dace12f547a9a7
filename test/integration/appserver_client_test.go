package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// appClient is a Codex app-server client of `tandem app-server`, over stdio or a WebSocket. It
// keeps every message both ways, for the schema check.
type appClient struct {
	t    *testing.T
	send func([]byte) error

	mu     sync.Mutex
	msgs   []wireMessage // both ways, in order
	in     []json.RawMessage
	grew   chan struct{}
	closed bool
	nextID int
}

func newAppClient(t *testing.T, send func([]byte) error) *appClient {
	return &appClient{t: t, send: send, grew: make(chan struct{})}
}

// received records one message from tandem.
func (c *appClient) received(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, wireMessage{Dir: "<<", Msg: append(json.RawMessage(nil), b...)})
	c.in = append(c.in, append(json.RawMessage(nil), b...))
	close(c.grew)
	c.grew = make(chan struct{})
}

func (c *appClient) gone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	close(c.grew)
	c.grew = make(chan struct{})
}

func (c *appClient) write(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.msgs = append(c.msgs, wireMessage{Dir: ">>", Msg: b})
	c.mu.Unlock()
	if err := c.send(b); err != nil {
		c.t.Fatalf("send %s: %v", b, err)
	}
}

// conversation is every message so far, both ways.
func (c *appClient) conversation() []wireMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wireMessage(nil), c.msgs...)
}

// mark is the position of the next message from tandem.
func (c *appClient) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.in)
}

// rpcMsg is a message from tandem, decoded.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (m rpcMsg) param(path ...string) any {
	var v any
	_ = json.Unmarshal(m.Params, &v)
	for _, p := range path {
		o, _ := v.(map[string]any)
		v = o[p]
	}
	return v
}

func (m rpcMsg) str(path ...string) string { s, _ := m.param(path...).(string); return s }

// waitFor waits for a message from tandem at or after from that pred accepts.
func (c *appClient) waitFor(from int, what string, pred func(rpcMsg) bool) rpcMsg {
	c.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for i := from; ; {
		c.mu.Lock()
		for ; i < len(c.in); i++ {
			var m rpcMsg
			if json.Unmarshal(c.in[i], &m) == nil && pred(m) {
				c.mu.Unlock()
				return m
			}
		}
		grew, closed := c.grew, c.closed
		c.mu.Unlock()
		if closed {
			c.t.Fatalf("waiting for %s: the connection closed", what)
		}
		select {
		case <-grew:
		case <-deadline.C:
			c.t.Fatalf("waiting for %s; tandem sent:\n%s", what, c.dump(from))
		}
	}
}

func (c *appClient) dump(from int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, m := range c.in[from:] {
		fmt.Fprintf(&b, "  %s\n", truncate(string(m), 400))
	}
	return b.String()
}

// call sends a request and waits for its response.
func (c *appClient) call(method string, params any) rpcMsg {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	from := c.mark()
	c.write(map[string]any{"id": id, "method": method, "params": params})
	want := fmt.Sprint(id)
	return c.waitFor(from, "the response to "+method, func(m rpcMsg) bool { return m.Method == "" && string(m.ID) == want })
}

// result calls and decodes a successful result into out (nil: discarded).
func (c *appClient) result(method string, params, out any) {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: %v in %s", method, err, m.Result)
		}
	}
}

// notified waits for a notification of method after from whose params satisfy pred (nil: any).
func (c *appClient) notified(from int, method string, pred func(rpcMsg) bool) rpcMsg {
	c.t.Helper()
	return c.waitFor(from, method, func(m rpcMsg) bool {
		return m.Method == method && len(m.ID) == 0 && (pred == nil || pred(m))
	})
}

// asked waits for a request of tandem's of method after from.
func (c *appClient) asked(from int, method string) rpcMsg {
	c.t.Helper()
	return c.waitFor(from, "the request "+method, func(m rpcMsg) bool { return m.Method == method && len(m.ID) > 0 })
}

// answer responds to one of tandem's requests.
func (c *appClient) answer(req rpcMsg, result any) {
	c.t.Helper()
	c.write(map[string]any{"id": req.ID, "result": result})
}

// initialize does the handshake as the Codex TUI does.
func (c *appClient) initialize() {
	c.t.Helper()
	c.result("initialize", map[string]any{"clientInfo": map[string]any{"name": "codex-tui", "title": nil, "version": "0.171.0"},
		"capabilities": map[string]any{"requiredHumanApproval": true, "experimentalApi": true, "requestAttestation": false, "optOutNotificationMethods": nil}}, nil)
	c.write(map[string]any{"method": "initialized"})
}

// startThread starts a thread in dir and returns its ID.
func (c *appClient) startThread(dir string) string {
	c.t.Helper()
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	c.result("thread/start", map[string]any{"cwd": dir, "sandbox": "workspace-write", "config": map[string]any{}}, &res)
	return res.Thread.ID
}

// turn sends a prompt and returns the turn's ID and where its messages start.
func (c *appClient) turn(threadID, text string) (turnID string, from int) {
	c.t.Helper()
	from = c.mark()
	var res struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"turn"`
	}
	c.result("turn/start", map[string]any{"threadId": threadID, "input": []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}}, &res)
	if res.Turn.Status != "inProgress" {
		c.t.Fatalf("turn/start: status %q, want inProgress", res.Turn.Status)
	}
	return res.Turn.ID, from
}

// completed waits for the turn's turn/completed and returns its status.
func (c *appClient) completed(from int, turnID string) string {
	c.t.Helper()
	m := c.notified(from, "turn/completed", func(m rpcMsg) bool { return m.str("turn", "id") == turnID })
	return m.str("turn", "status")
}

// appServerProcess is `tandem app-server` running from the built binary; url is its HTTP API.
type appServerProcess struct {
	cmd    *exec.Cmd
	url    string
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *strings.Builder
	mu     *sync.Mutex
	stop   func(*testing.T) // ends the process (as Ctrl+C does) and waits for it; idempotent
}

// startAppServer runs `tandem app-server args...` with env; it waits for the HTTP server's URL (or,
// with --listen, for the listener too) and stops the process when the test ends.
func startAppServer(t *testing.T, env []string, args ...string) *appServerProcess {
	t.Helper()
	cmd := exec.Command(builtBinary(t), append([]string{"app-server"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &appServerProcess{cmd: cmd, stdin: stdin, stdout: stdout, stderr: &strings.Builder{}, mu: &sync.Mutex{}}
	listen := false
	for _, a := range args {
		listen = listen || a == "--listen"
	}
	ready := make(chan string, 2)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if _, url, ok := strings.Cut(line, "tandem app-server: HTTP server on "); ok {
				ready <- "http " + strings.TrimSuffix(url, "/")
			}
			if strings.Contains(line, "tandem app-server: listening on ") {
				ready <- "ws"
			}
		}
	}()
	var once sync.Once
	p.stop = func(*testing.T) {
		once.Do(func() {
			_ = stdin.Close()
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(waitLimit):
				_ = cmd.Process.Kill()
				<-done
			}
			<-logDone
		})
	}
	t.Cleanup(func() {
		p.stop(t)
		p.mu.Lock()
		raced := strings.Contains(p.stderr.String(), "WARNING: DATA RACE") // a binary built with -race
		p.mu.Unlock()
		if raced {
			t.Error("tandem app-server reported a data race")
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("tandem app-server's stderr:\n%s", p.stderr.String())
			p.mu.Unlock()
		}
	})
	need := 1
	if listen {
		need = 2
	}
	for range need {
		select {
		case r := <-ready:
			if url, ok := strings.CutPrefix(r, "http "); ok {
				p.url = url
			}
		case <-time.After(waitLimit):
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("tandem app-server did not start:\n%s", p.stderr.String())
		}
	}
	return p
}

// stdioClient speaks to the process over its stdin and stdout.
func (p *appServerProcess) stdioClient(t *testing.T) *appClient {
	t.Helper()
	c := newAppClient(t, func(b []byte) error {
		_, err := p.stdin.Write(append(b, '\n'))
		return err
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(p.stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			c.received(sc.Bytes())
		}
		c.gone()
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		<-done
	})
	return c
}

// dialApp opens a WebSocket to a --listen address with these headers.
func dialApp(ctx context.Context, addr string, header http.Header) (*websocket.Conn, *http.Response, error) {
	return websocket.Dial(ctx, "ws://"+addr, &websocket.DialOptions{HTTPHeader: header})
}

// wsClient speaks over a WebSocket to addr with the bearer token.
func wsClient(t *testing.T, addr, token string) *appClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, _, err := dialApp(ctx, addr, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		cancel()
		t.Fatalf("dial %s: %v", addr, err)
	}
	conn.SetReadLimit(64 << 20)
	c := newAppClient(t, func(b []byte) error { return conn.Write(ctx, websocket.MessageText, b) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				c.gone()
				return
			}
			c.received(b)
		}
	}()
	t.Cleanup(func() {
		_ = conn.Close(websocket.StatusNormalClosure, "")
		cancel()
		<-done
	})
	return c
}
