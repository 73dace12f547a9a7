package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// The credentials every test server is started with (through Options.Env, never the process env).
const (
	testUser     = "tandem"
	testPassword = "harness-password"
)

// waitLimit bounds every wait for an event or a state. It is a hang guard, not a timing assertion.
const waitLimit = 60 * time.Second

// setup describes a tandem server to start.
type setup struct {
	config string            // written to <project>/tandem.json when non-empty
	env    map[string]string // the server's environment (Options.Env); nothing leaks in from the process
	noLeak bool              // skip the goroutine leak check (benchmarks)
	// untrusted leaves the project untrusted: its config can only tighten the user's rules.
	untrusted bool
	// log, when set, receives the server's log at debug level (it must be safe for concurrent use).
	log io.Writer
}

// tandem is a real server (Start: listener, routes, SQLite in a temp data dir) and a client for it.
type tandem struct {
	project string
	data    string
	env     map[string]string
	m       *app.Main // nil when the server runs in another process
	log     io.Writer
	base    string // http://127.0.0.1:port, no trailing slash
	client  *http.Client
}

// startTandem starts a server the way the CLI does and stops it when the test ends.
func startTandem(tb testing.TB, s setup) *tandem {
	tb.Helper()
	td := newTandem(tb, s)
	td.start(tb)
	tb.Cleanup(func() { td.stop(tb) })
	return td
}

// newTandem prepares the directories and the environment without starting anything. Unless
// s.noLeak, the test fails if goroutines started from here on outlive it.
func newTandem(tb testing.TB, s setup) *tandem {
	tb.Helper()
	if !s.noLeak {
		ignore := goleak.IgnoreCurrent()
		tb.Cleanup(func() { goleak.VerifyNone(tb, ignore) })
	}
	td := &tandem{project: tb.TempDir(), data: tb.TempDir(), env: map[string]string{"TANDEM_SERVER_PASSWORD": testPassword},
		// The header timeout also covers /event, whose body streams for the whole test.
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, ResponseHeaderTimeout: waitLimit}}}
	td.log = s.log
	td.env["XDG_CONFIG_HOME"] = filepath.Join(td.data, "xdg")
	maps.Copy(td.env, s.env)
	if s.config != "" {
		if err := os.WriteFile(filepath.Join(td.project, "tandem.json"), []byte(s.config), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	// The harness's project is the user's own, trusted unless a test says otherwise.
	if !s.untrusted {
		if _, err := config.Trust(func(k string) string { return td.env[k] }, td.project); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(td.client.CloseIdleConnections)
	return td
}

func (td *tandem) start(tb testing.TB) {
	tb.Helper()
	logger := debugLogger()
	if td.log != nil {
		logger = slog.New(slog.NewTextHandler(td.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m, err := app.Start(context.Background(), app.Options{
		Hostname: "127.0.0.1", Port: testenv.UnusedPort(tb), Directory: td.project,
		Paths: app.Paths{Data: td.data, State: td.data, Config: td.data},
		Env:   func(k string) string { return td.env[k] }, Heartbeat: time.Hour, Logger: logger,
	})
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	td.m, td.base = m, strings.TrimSuffix(m.URL(), "/")
}

// stop closes the server gracefully (running turns stop as in a crash, for the next start to
// recover); it is idempotent.
func (td *tandem) stop(tb testing.TB) {
	tb.Helper()
	if td.m == nil {
		return
	}
	if err := td.m.Close(); err != nil {
		tb.Errorf("Close: %v", err)
	}
	td.m = nil
	td.client.CloseIdleConnections()
}

// restart closes the server and starts a new one on the same project and data directories.
func (td *tandem) restart(tb testing.TB) {
	tb.Helper()
	td.stop(tb)
	td.start(tb)
}

// try sends an authenticated request and never fails the test: for goroutines other than the
// test's own, which must not call t.Fatal.
func (td *tandem) try(method, path, body string, headers ...string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	// A request that never answers fails after waitLimit instead of hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, td.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.SetBasicAuth(testUser, testPassword)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := td.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// request sends an authenticated request. A non-empty body is JSON unless a Content-Type header is
// given; headers are name, value pairs.
// answerAs POSTs an answer as another client does, named by its User-Agent, and requires a 200.
func (td *tandem) answerAs(tb testing.TB, userAgent, path, body string) {
	tb.Helper()
	if status, b := td.request(tb, http.MethodPost, path, body, "User-Agent", userAgent); status != http.StatusOK {
		tb.Fatalf("POST %s as %s: %d %s", path, userAgent, status, b)
	}
}

func (td *tandem) request(tb testing.TB, method, path, body string, headers ...string) (int, []byte) {
	tb.Helper()
	status, b, err := td.try(method, path, body, headers...)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	return status, b
}

// call sends a JSON request, requires the status and decodes the answer into out (when not nil).
func (td *tandem) call(tb testing.TB, method, path, body string, want int, out any) {
	tb.Helper()
	status, b := td.request(tb, method, path, body)
	if status != want {
		tb.Fatalf("%s %s %s: status %d, want %d; body %s", method, path, body, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

func (td *tandem) newSession(tb testing.TB) string {
	tb.Helper()
	var s session.Session
	td.call(tb, http.MethodPost, "/session", "{}", http.StatusOK, &s)
	return s.ID
}

// promptBody is the JSON of a one-text-part prompt.
func promptBody(text string) string {
	b, _ := json.Marshal(map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}}})
	return string(b)
}

// prompt runs one turn synchronously and returns the reply.
func (td *tandem) prompt(tb testing.TB, sid, text string) session.WithParts {
	tb.Helper()
	var reply session.WithParts
	td.call(tb, http.MethodPost, "/session/"+sid+"/message", promptBody(text), http.StatusOK, &reply)
	return reply
}

// promptAsync queues a turn and returns once the user message is stored.
func (td *tandem) promptAsync(tb testing.TB, sid, text string) {
	tb.Helper()
	td.call(tb, http.MethodPost, "/session/"+sid+"/prompt_async", promptBody(text), http.StatusNoContent, nil)
}

func (td *tandem) messages(tb testing.TB, sid string) []session.WithParts {
	tb.Helper()
	var out []session.WithParts
	td.call(tb, http.MethodGet, "/session/"+sid+"/message", "", http.StatusOK, &out)
	return out
}

// pending lists the waiting permission requests of a session ("" for all).
func (td *tandem) pending(tb testing.TB, sid string) []permissionRequest {
	tb.Helper()
	var out []permissionRequest
	path := "/permission"
	if sid != "" {
		path += "?sessionID=" + sid
	}
	td.call(tb, http.MethodGet, path, "", http.StatusOK, &out)
	return out
}

// reply answers a permission request and requires 200 true.
func (td *tandem) reply(tb testing.TB, requestID, reply, message string) {
	tb.Helper()
	body, _ := json.Marshal(map[string]string{"reply": reply, "message": message})
	var ok bool
	td.call(tb, http.MethodPost, "/permission/"+requestID+"/reply", string(body), http.StatusOK, &ok)
	if !ok {
		tb.Fatalf("reply %s: answered false", requestID)
	}
}

// statuses is GET /session/status: busy and retrying sessions.
func (td *tandem) statuses(tb testing.TB) map[string]session.Status {
	tb.Helper()
	out := map[string]session.Status{}
	td.call(tb, http.MethodGet, "/session/status", "", http.StatusOK, &out)
	return out
}

// permissionRequest is the wire shape of a pending request (decoded independently of the server's type).
type permissionRequest struct {
	ID         string         `json:"id"`
	SessionID  string         `json:"sessionID"`
	Permission string         `json:"permission"`
	Patterns   []string       `json:"patterns"`
	Metadata   map[string]any `json:"metadata"`
	Always     []string       `json:"always"`
	Decisions  []struct {
		Key      string   `json:"key"`
		Label    string   `json:"label"`
		Patterns []string `json:"patterns"`
		Message  bool     `json:"message"`
	} `json:"decisions"`
	Tool *struct {
		MessageID string `json:"messageID"`
		CallID    string `json:"callID"`
	} `json:"tool"`
}

// errorBody is tandem's one error shape.
type errorBody struct {
	Name string         `json:"name"`
	Data map[string]any `json:"data"`
}

// event is one frame of /event.
type event struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	at         time.Time       // when the client read it
	cursor     string          // the frame's `id:` line (a Last-Event-ID to resume after it); "" when it had none
	wire       int             // bytes of /event since the previous event's data line, this one's included
}

// sessionID is properties.sessionID, when there is one.
func (e event) sessionID() string {
	var p struct {
		SessionID string `json:"sessionID"`
	}
	_ = json.Unmarshal(e.Properties, &p)
	return p.SessionID
}

// part decodes message.part.updated; ok is false for other events.
func (e event) part() (session.Part, bool) {
	if e.Type != "message.part.updated" {
		return session.Part{}, false
	}
	var p struct {
		Part session.Part `json:"part"`
	}
	if json.Unmarshal(e.Properties, &p) != nil {
		return session.Part{}, false
	}
	return p.Part, true
}

// message decodes message.updated; ok is false for other events.
func (e event) message() (session.Message, bool) {
	if e.Type != "message.updated" {
		return session.Message{}, false
	}
	var p struct {
		Info session.Message `json:"info"`
	}
	if json.Unmarshal(e.Properties, &p) != nil {
		return session.Message{}, false
	}
	return p.Info, true
}

func (e event) status() session.Status {
	var p struct {
		Status session.Status `json:"status"`
	}
	_ = json.Unmarshal(e.Properties, &p)
	return p.Status
}

func (e event) permission() permissionRequest {
	var p permissionRequest
	_ = json.Unmarshal(e.Properties, &p)
	return p
}

// replied decodes permission.replied.
func (e event) replied() (requestID, reply string) {
	var p struct {
		RequestID string `json:"requestID"`
		Reply     string `json:"reply"`
	}
	_ = json.Unmarshal(e.Properties, &p)
	return p.RequestID, p.Reply
}

// stream is a real SSE client on /event that keeps every frame it reads.
type stream struct {
	tb     testing.TB
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	events  []event
	changed chan struct{} // closed and replaced on every new event
	err     error
	pos     int // the next event waitFor looks at
}

// subscribe connects to /event and returns once server.connected arrived; it disconnects when the
// test ends.
func (td *tandem) subscribe(tb testing.TB) *stream {
	tb.Helper()
	return td.subscribeAfter(tb, "")
}

// subscribeAfter is subscribe with a Last-Event-ID, as a client that reconnects sends it.
func (td *tandem) subscribeAfter(tb testing.TB, lastEventID string) *stream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, td.base+"/event", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.SetBasicAuth(testUser, testPassword)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := td.client.Do(req)
	if err != nil {
		cancel()
		tb.Fatalf("GET /event: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		res.Body.Close()
		tb.Fatalf("GET /event: status %d", res.StatusCode)
	}
	s := &stream{tb: tb, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	go s.read(res.Body)
	tb.Cleanup(s.close)
	s.waitFor(tb, "server.connected", func(e event) bool { return e.Type == "server.connected" })
	return s
}

func (s *stream) read(body io.ReadCloser) {
	defer close(s.done)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	cursor, wire := "", 0
	for sc.Scan() {
		wire += len(sc.Bytes()) + 1
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			cursor = id
			continue
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e event
		err := json.Unmarshal([]byte(data), &e)
		e.at, e.cursor, e.wire, cursor, wire = time.Now(), cursor, wire, "", 0
		s.mu.Lock()
		if err != nil {
			s.err = fmt.Errorf("undecodable frame %q: %w", data, err)
		} else {
			s.events = append(s.events, e)
		}
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = sc.Err()
		if s.err == nil {
			s.err = io.EOF
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *stream) close() {
	s.cancel()
	testenv.Recv(s.tb, s.done, "the event stream's reader ending")
}

// waitFor returns the first event after the previous match that satisfies pred, and moves past it.
func (s *stream) waitFor(tb testing.TB, what string, pred func(event) bool) event {
	tb.Helper()
	e, err := s.next(what, pred)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// next is waitFor for goroutines other than the test's own, which must not call t.Fatal: it
// returns an error instead.
func (s *stream) next(what string, pred func(event) bool) (event, error) {
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i := s.pos; i < len(s.events); i++ {
			if pred(s.events[i]) {
				s.pos = i + 1
				e := s.events[i]
				s.mu.Unlock()
				return e, nil
			}
		}
		changed, err := s.changed, s.err
		s.mu.Unlock()
		if err != nil {
			return event{}, fmt.Errorf("waiting for %s: the event stream ended: %w", what, err)
		}
		select {
		case <-changed:
		case <-deadline.C:
			return event{}, fmt.Errorf("waiting for %s: nothing after %s; events since the last match:\n%s", what, waitLimit, s.dump(s.pos))
		}
	}
}

// since returns the events from index i on.
func (s *stream) since(i int) []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.events[min(i, len(s.events)):]...)
}

// mark is the index of the next event to arrive, for since.
func (s *stream) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

func (s *stream) dump(from int) string {
	var b strings.Builder
	for _, e := range s.since(from) {
		p := string(e.Properties)
		if len(p) > 300 {
			p = p[:300] + "…"
		}
		fmt.Fprintf(&b, "  %s %s\n", e.Type, p)
	}
	return b.String()
}

// Predicates for waitFor.

func ofType(typ, sid string) func(event) bool {
	return func(e event) bool { return e.Type == typ && (sid == "" || e.sessionID() == sid) }
}

func toolIn(sid, status string) func(event) bool {
	return func(e event) bool {
		p, ok := e.part()
		return ok && p.SessionID == sid && p.Type == "tool" && p.State != nil && p.State.Status == status
	}
}

func idle(sid string) func(event) bool { return ofType("session.idle", sid) }

// openAIEnv points the built-in openai provider at a scripted server and makes it the default.
func openAIEnv(srv *providertest.Server) map[string]string {
	return map[string]string{"OPENAI_BASE_URL": srv.BaseURL, "OPENAI_API_KEY": "sk-test", "TANDEM_MODEL": "openai/gpt-scripted"}
}

// anthropicEnv does the same for the built-in anthropic provider.
func anthropicEnv(srv *providertest.Server) map[string]string {
	return map[string]string{"ANTHROPIC_BASE_URL": srv.BaseURL, "ANTHROPIC_API_KEY": "sk-ant-test", "TANDEM_MODEL": "anthropic/claude-scripted"}
}

// requestContains reports whether any string inside the JSON request body contains s.
func requestContains(r providertest.Request, s string) bool {
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		return false
	}
	return jsonContains(v, s)
}

func jsonContains(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, x := range v {
			if jsonContains(x, s) {
				return true
			}
		}
	case map[string]any:
		for _, x := range v {
			if jsonContains(x, s) {
				return true
			}
		}
	}
	return false
}

// toolParts returns every tool part of the messages, in order.
func toolParts(msgs []session.WithParts) []session.Part {
	var out []session.Part
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == "tool" {
				out = append(out, p)
			}
		}
	}
	return out
}

// textOf joins the text parts of a message.
func textOf(m session.WithParts) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" && p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// commandOf is the bash command of a tool part.
func commandOf(p session.Part) string {
	var in struct {
		Command string `json:"command"`
	}
	if p.State != nil {
		_ = json.Unmarshal(p.State.Input, &in)
	}
	return in.Command
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	rest := stat[strings.LastIndexByte(string(stat), ')')+1:]
	fields := strings.Fields(string(rest))
	return len(fields) == 0 || (fields[0] != "Z" && fields[0] != "X")
}

// readPID waits for a command to write its pid file and returns the pid.
func readPID(tb testing.TB, path string) int {
	tb.Helper()
	var pid int
	testenv.Eventually(tb, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// sleepCommand starts a long sleep whose pid lands in pidFile, and waits for it, as a model would
// start a slow build.
func sleepCommand(pidFile string) string {
	return "sleep 300 & echo $! > " + pidFile + "; wait"
}

// Helper process: a tandem server in a child process, so a test can SIGKILL it mid-turn.

const childEnv = "TANDEM_TEST_CHILD_SERVER"

// TestHelperServer is not a test: it is the body of the child process startChild runs.
func TestHelperServer(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("helper process for the crash tests; runs only when started by startChild")
	}
	m, err := app.Start(context.Background(), app.Options{
		Hostname: "127.0.0.1", Port: testenv.UnusedPort(t), Directory: os.Getenv("CHILD_PROJECT"),
		Paths: app.Paths{Data: os.Getenv("CHILD_DATA"), State: os.Getenv("CHILD_DATA"), Config: os.Getenv("CHILD_DATA")},
		Env:   os.Getenv, Heartbeat: time.Hour,
	})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Println("URL", strings.TrimSuffix(m.URL(), "/"))
	select {} // until SIGKILL
}

// child is a tandem server process the test can kill.
type child struct {
	tb   testing.TB
	cmd  *exec.Cmd
	done chan struct{}
}

// startChild runs TestHelperServer in a new process on td's directories and points td at it.
func (td *tandem) startChild(tb testing.TB) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1", "CHILD_PROJECT="+td.project, "CHILD_DATA="+td.data)
	// Nothing of the developer's own setup reaches the child: the test's env alone configures it.
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "TANDEM_MODEL"} {
		cmd.Env = append(cmd.Env, k+"=")
	}
	for k, v := range td.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &child{tb: tb, cmd: cmd, done: make(chan struct{})}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "URL "); ok {
			td.base = u
			break
		}
		if strings.HasPrefix(lines.Text(), "ERROR") {
			tb.Fatalf("child server: %s", lines.Text())
		}
	}
	if td.base == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tb.Fatal("child server printed no URL")
	}
	go func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(c.done)
	}()
	tb.Cleanup(c.kill)
	return c
}

// kill ends the child with SIGKILL: no shutdown code runs, as in a crash or OOM kill.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	testenv.Recv(c.tb, c.done, "the killed child exiting")
}

func debugLogger() *slog.Logger {
	if os.Getenv("TANDEM_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
