//go:build linux

package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/shelljudge"
)

// These tests drive the real binary (`tandem acp`) over stdio with the ACP Go SDK's client side,
// the way an editor does, while the same server's REST API answers what the editor is also asked.

// acpEditor is the client side of one `tandem acp` process: what it was sent, and how it answers.
type acpEditor struct {
	conn *acp.ClientSideConnection
	rest *client.Client // the same process's HTTP API
	url  string

	mu      sync.Mutex
	updates []acp.SessionUpdate
	changed chan struct{}
	// answer decides a session/request_permission; nil answers "cancelled".
	answer func(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
	asked  []acp.RequestPermissionRequest
	// buffers are the editor's unsaved files, when it declares the fs capabilities: reads are
	// served from them (else from the disk) and writes go only to them.
	buffers map[string]string
	reads   []string
	// terminals are the commands the editor ran for the agent (when it declares terminals).
	terminals map[string]*editorTerminal
	// close disconnects the editor (closes tandem acp's stdin) and waits for tandem acp to exit.
	close func()
}

// editorTerminal is one command the test editor runs in a "terminal" of its own.
type editorTerminal struct {
	cmd  *exec.Cmd
	out  *strings.Builder
	done chan struct{}
	mu   sync.Mutex
}

func (e *acpEditor) terminal(id string) (*editorTerminal, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if term := e.terminals[id]; term != nil {
		return term, nil
	}
	return nil, errors.New("no terminal " + id)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var _ acp.Client = (*acpEditor)(nil)

func (e *acpEditor) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	e.mu.Lock()
	e.updates = append(e.updates, n.Update)
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	return nil
}

func (e *acpEditor) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, p)
	answer := e.answer
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	if answer == nil {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
	}
	return answer(ctx, p)
}

func (e *acpEditor) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.buffers == nil {
		return acp.ReadTextFileResponse{}, errors.New("not declared")
	}
	e.reads = append(e.reads, p.Path)
	if text, ok := e.buffers[p.Path]; ok {
		return acp.ReadTextFileResponse{Content: text}, nil
	}
	b, err := os.ReadFile(p.Path)
	return acp.ReadTextFileResponse{Content: string(b)}, err
}

func (e *acpEditor) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.buffers == nil {
		return acp.WriteTextFileResponse{}, errors.New("not declared")
	}
	e.buffers[p.Path] = p.Content
	return acp.WriteTextFileResponse{}, nil
}

func (e *acpEditor) CreateTerminal(_ context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.terminals == nil {
		return acp.CreateTerminalResponse{}, errors.New("not declared")
	}
	term := &editorTerminal{cmd: exec.Command(p.Command, p.Args...), out: &strings.Builder{}, done: make(chan struct{})}
	if p.Cwd != nil {
		term.cmd.Dir = *p.Cwd
	}
	term.cmd.Stdout = lockedWriter{&term.mu, term.out}
	term.cmd.Stderr = term.cmd.Stdout
	if err := term.cmd.Start(); err != nil {
		return acp.CreateTerminalResponse{}, err
	}
	go func() { _ = term.cmd.Wait(); close(term.done) }()
	id := fmt.Sprintf("term-%d", len(e.terminals)+1)
	e.terminals[id] = term
	return acp.CreateTerminalResponse{TerminalId: id}, nil
}

func (e *acpEditor) KillTerminal(_ context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	term, err := e.terminal(p.TerminalId)
	if err == nil {
		_ = term.cmd.Process.Kill()
		<-term.done
	}
	return acp.KillTerminalResponse{}, err
}

func (e *acpEditor) TerminalOutput(_ context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	term, err := e.terminal(p.TerminalId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	term.mu.Lock()
	res := acp.TerminalOutputResponse{Output: term.out.String()}
	term.mu.Unlock()
	select {
	case <-term.done:
		code := term.cmd.ProcessState.ExitCode()
		res.ExitStatus = &acp.TerminalExitStatus{ExitCode: &code}
	default:
	}
	return res, nil
}

func (e *acpEditor) ReleaseTerminal(_ context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	_, err := e.terminal(p.TerminalId)
	return acp.ReleaseTerminalResponse{}, err
}

func (e *acpEditor) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	term, err := e.terminal(p.TerminalId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-term.done:
		code := term.cmd.ProcessState.ExitCode()
		return acp.WaitForTerminalExitResponse{ExitCode: &code}, nil
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, ctx.Err()
	}
}

func (e *acpEditor) setAnswer(f func(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)) {
	e.mu.Lock()
	e.answer = f
	e.mu.Unlock()
}

// mark is the number of updates so far; since returns the ones after it.
func (e *acpEditor) mark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.updates)
}

func (e *acpEditor) since(i int) []acp.SessionUpdate {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]acp.SessionUpdate(nil), e.updates[i:]...)
}

// waitFor waits until pred holds for the editor's state.
func (e *acpEditor) waitFor(t *testing.T, what string, pred func() bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		e.mu.Lock()
		ch := e.changed
		e.mu.Unlock()
		if pred() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waited %s for %s", waitLimit, what)
		}
	}
}

// startACP runs `tandem acp` (args after it) and connects an editor to its stdio.
func startACP(t *testing.T, env []string, args ...string) *acpEditor {
	t.Helper()
	return startACPWith(t, acp.ClientCapabilities{}, nil, env, args...)
}

// startACPWith starts `tandem acp` for an editor declaring caps, with these unsaved buffers.
func startACPWith(t *testing.T, caps acp.ClientCapabilities, buffers map[string]string, env []string, args ...string) *acpEditor {
	t.Helper()
	cmd := exec.Command(builtBinary(t), append([]string{"acp"}, args...)...)
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
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "tandem acp: HTTP server on "); ok {
				found <- strings.TrimSuffix(url, "/")
			}
			// Beside a running server, the agent uses that one.
			if _, rest, ok := strings.Cut(sc.Text(), "tandem acp: using the tandem server at "); ok {
				url, _, _ := strings.Cut(rest, " ")
				found <- strings.TrimSuffix(url, "/")
			}
		}
	}()
	e := &acpEditor{changed: make(chan struct{}), buffers: buffers}
	if caps.Terminal {
		e.terminals = map[string]*editorTerminal{}
	}
	e.conn = acp.NewClientSideConnection(e, stdin, stdout)
	var closing sync.Once
	e.close = func() {
		closing.Do(func() {
			stdin.Close() // the agent ends with its client
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(waitLimit):
				_ = cmd.Process.Kill()
				<-done
				t.Error("tandem acp did not exit when its stdin closed")
			}
		})
	}
	t.Cleanup(e.close)
	if !slicesContains(args, "--attach") {
		select {
		case e.url = <-found:
		case <-time.After(waitLimit):
			t.Fatal("tandem acp did not print its HTTP URL")
		}
		e.rest = client.New(e.url, "tandem", testPassword)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	init, err := e.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: "acp-go-test", Version: "1"}, ClientCapabilities: caps})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if init.ProtocolVersion != 1 || !init.AgentCapabilities.LoadSession || !init.AgentCapabilities.McpCapabilities.Http {
		t.Fatalf("initialize: %+v", init)
	}
	return e
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// agentText is the agent's streamed message text in updates.
func agentText(updates []acp.SessionUpdate) string {
	var b strings.Builder
	for _, u := range updates {
		if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil {
			b.WriteString(c.Content.Text.Text)
		}
	}
	return b.String()
}

func prompt(t *testing.T, e *acpEditor, sid acp.SessionId, text string) acp.StopReason {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	res, err := e.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return res.StopReason
}

// promptAsync sends a prompt without waiting for its turn to end; the channel gets its stop reason.
func promptAsync(t *testing.T, e *acpEditor, sid acp.SessionId, text string) <-chan acp.StopReason {
	t.Helper()
	done := make(chan acp.StopReason, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		res, err := e.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		if err != nil {
			t.Errorf("prompt %q: %v", text, err)
		}
		done <- res.StopReason
	}()
	return done
}

// awaitStop waits, with a deadline, for what ends the prompt and checks its stop reason.
func awaitStop(t *testing.T, done <-chan acp.StopReason, want acp.StopReason, what string) {
	t.Helper()
	select {
	case stop := <-done:
		if stop != want {
			t.Fatalf("%s: stop reason %q, want %q", what, stop, want)
		}
	case <-time.After(waitLimit):
		t.Fatalf("%s did not end within %s", what, waitLimit)
	}
}

func newACPSession(t *testing.T, e *acpEditor, cwd string) acp.NewSessionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	s, err := e.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	return s
}

func choose(key string) func(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return func(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: acp.PermissionOptionId(key)}}}, nil
	}
}

// toolUpdates are the tool_call and tool_call_update notifications, as (kind, status, content) views.
type toolSeen struct {
	id      string
	kind    acp.ToolKind
	status  acp.ToolCallStatus
	content []acp.ToolCallContent
	paths   []string
}

func toolsIn(updates []acp.SessionUpdate) map[string]*toolSeen {
	out := map[string]*toolSeen{}
	for _, u := range updates {
		switch {
		case u.ToolCall != nil:
			tc := u.ToolCall
			s := &toolSeen{id: string(tc.ToolCallId), kind: tc.Kind, status: tc.Status, content: tc.Content}
			for _, l := range tc.Locations {
				s.paths = append(s.paths, l.Path)
			}
			out[s.id] = s
		case u.ToolCallUpdate != nil:
			tu := u.ToolCallUpdate
			s := out[string(tu.ToolCallId)]
			if s == nil {
				continue
			}
			if tu.Status != nil {
				s.status = *tu.Status
			}
			if tu.Kind != nil {
				s.kind = *tu.Kind
			}
			if tu.Content != nil {
				s.content = tu.Content
			}
		}
	}
	return out
}

func TestACPOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	data, project := t.TempDir(), t.TempDir()
	// The data of the editor's MCP server (another tandem, a child of this one): it lives until
	// tandem acp ends, so its directory is removed after that.
	inner := t.TempDir()
	env := []string{"TANDEM_SERVER_PASSWORD=" + testPassword, "XDG_STATE_HOME=" + data, "XDG_CONFIG_HOME=" + data, "HOME=" + data}
	e := startACP(t, env, "--port", "0", "--dir", project, "--data-dir", data)

	var firstSession acp.SessionId
	t.Run("a new session offers the build and plan agents as modes and streams an answer", func(t *testing.T) {
		s := newACPSession(t, e, project)
		firstSession = s.SessionId
		if s.Modes == nil || s.Modes.CurrentModeId != "build" {
			t.Fatalf("modes: %+v", s.Modes)
		}
		var ids []string
		for _, m := range s.Modes.AvailableModes {
			ids = append(ids, string(m.Id))
		}
		if !slicesContains(ids, "build") || !slicesContains(ids, "plan") {
			t.Fatalf("modes offered: %v", ids)
		}
		if len(s.ConfigOptions) != 2 || s.ConfigOptions[1].Select == nil || s.ConfigOptions[1].Select.Id != "model" || s.ConfigOptions[1].Select.CurrentValue == "" {
			t.Fatalf("config options %+v: want the agent and the model, the current model set", s.ConfigOptions)
		}
		from := e.mark()
		if stop := prompt(t, e, s.SessionId, "hello over acp"); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
		if got := agentText(e.since(from)); got != "You said: hello over acp" {
			t.Fatalf("streamed answer %q", got)
		}
	})

	t.Run("a write asks through session/request_permission with the request's decisions and shows its diff", func(t *testing.T) {
		s := newACPSession(t, e, project)
		e.setAnswer(choose("once"))
		from, asked := e.mark(), len(e.asked)
		if stop := prompt(t, e, s.SessionId, "write: notes.txt\nfrom the editor\n"); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
		e.mu.Lock()
		if len(e.asked) != asked+1 {
			e.mu.Unlock()
			t.Fatalf("asked %d times, want once", len(e.asked)-asked)
		}
		req := e.asked[asked]
		e.mu.Unlock()
		pending := waitPermissionOptions(t, req)
		if pending != "once:allow_once session:allow_always always:allow_always reject:reject_once deny-always:reject_always" {
			t.Fatalf("options %s", pending)
		}
		got, err := os.ReadFile(filepath.Join(project, "notes.txt"))
		if err != nil || string(got) != "from the editor\n" {
			t.Fatalf("notes.txt: %q %v", got, err)
		}
		var diff *acp.ToolCallContentDiff
		for _, tc := range toolsIn(e.since(from)) {
			if tc.kind != acp.ToolKindEdit || tc.status != acp.ToolCallStatusCompleted {
				t.Fatalf("tool call %+v", tc)
			}
			for _, c := range tc.content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		}
		if diff == nil || diff.Path != filepath.Join(project, "notes.txt") || diff.NewText != "from the editor\n" {
			t.Fatalf("diff %+v", diff)
		}
	})

	t.Run("a rejection through ACP stops the command and the turn goes on", func(t *testing.T) {
		s := newACPSession(t, e, project)
		e.setAnswer(choose("reject"))
		from := e.mark()
		if stop := prompt(t, e, s.SessionId, "run: echo never-printed"); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
		tools := toolsIn(e.since(from))
		if len(tools) != 1 {
			t.Fatalf("%d tool calls", len(tools))
		}
		for _, tc := range tools {
			if tc.kind != acp.ToolKindExecute || tc.status != acp.ToolCallStatusFailed {
				t.Fatalf("rejected command: %+v", tc)
			}
		}
		if strings.Contains(agentText(e.since(from)), "never-printed\n") {
			t.Fatal("the rejected command ran")
		}
	})

	t.Run("an approval answered first over REST withdraws the editor's prompt", func(t *testing.T) {
		s := newACPSession(t, e, project)
		withdrawn := make(chan struct{})
		e.setAnswer(func(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			<-ctx.Done() // the editor's person never answers: $/cancel_request ends this
			close(withdrawn)
			return acp.RequestPermissionResponse{}, ctx.Err()
		})
		from := e.mark()
		done := promptAsync(t, e, s.SessionId, "run: echo answered-over-rest")
		e.waitFor(t, "the editor to be asked", func() bool {
			e.mu.Lock()
			defer e.mu.Unlock()
			return len(e.asked) > 0 && string(e.asked[len(e.asked)-1].SessionId) == string(s.SessionId)
		})
		var req permission.Request
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		list, err := e.rest.Permissions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			if r.SessionID == string(s.SessionId) {
				req = r
			}
		}
		if req.ID == "" {
			t.Fatalf("the request the editor shows is not in GET /permission: %+v", list)
		}
		if err := e.rest.ReplyPermission(ctx, req.ID, permission.Once, ""); err != nil {
			t.Fatal(err)
		}
		select {
		case <-withdrawn:
		case <-time.After(waitLimit):
			t.Fatal("the editor's prompt was not withdrawn")
		}
		awaitStop(t, done, acp.StopReasonEndTurn, "the prompt answered over REST")
		if got := agentText(e.since(from)); !strings.Contains(got, "answered-over-rest") {
			t.Fatalf("the command allowed over REST did not run: %q", got)
		}
	})

	t.Run("a question from the agent is put as a permission request whose options are the answers", func(t *testing.T) {
		s := newACPSession(t, e, project)
		var offered []string
		e.setAnswer(func(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			var pick acp.PermissionOptionId
			for _, o := range p.Options {
				offered = append(offered, o.Name+":"+string(o.Kind))
				if o.Name == "SQLite" {
					pick = o.OptionId
				}
			}
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: pick}}}, nil
		})
		from := e.mark()
		if stop := prompt(t, e, s.SessionId, "ask: Which database? | Postgres | SQLite"); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
		if got := strings.Join(offered, ", "); got != "Postgres:allow_once, SQLite:allow_once, Dismiss the question:reject_once" {
			t.Fatalf("options %s", got)
		}
		if got := agentText(e.since(from)); !strings.Contains(got, "SQLite") {
			t.Fatalf("the answer did not reach the model: %q", got)
		}
	})

	t.Run("the editor's MCP servers are connected for the session and their tools are offered", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		// Another tandem, as an MCP server over stdio, is the editor's MCP server here.
		s, err := e.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: project, McpServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{
			Name: "inner", Command: builtBinary(t), Args: []string{"mcp", "--port", "0", "--data-dir", inner, "--dir", project},
			Env: []acp.EnvVariable{{Name: "HOME", Value: inner}, {Name: "XDG_STATE_HOME", Value: inner}, {Name: "XDG_CONFIG_HOME", Value: inner},
				{Name: "TANDEM_SERVER_PASSWORD", Value: "inner"}},
		}}}})
		if err != nil {
			t.Fatalf("session/new with an MCP server: %v", err)
		}
		// The server is the session's alone: listed under its name and the session's, with the
		// session's ID, and absent from the project's servers.
		key := string("inner@" + s.SessionId)
		status := waitMCPStatus(t, e.rest, "the editor's server connected for its session", func(st map[string]mcpclient.Status) bool {
			return st[key].Status == "connected"
		})
		if status[key].SessionID != string(s.SessionId) {
			t.Fatalf("GET /mcp: %+v", status)
		}
		if _, ok := status["inner"]; ok {
			t.Fatalf("the editor's server is one of the project's: %+v", status)
		}
		e.setAnswer(choose("once"))
		from := e.mark()
		if stop := prompt(t, e, s.SessionId, "mcp: inner tandem-sessions {}"); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
		if got := agentText(e.since(from)); !strings.Contains(got, "`inner_tandem-sessions` returned:\n{\"sessions\":") {
			t.Fatalf("the MCP tool's answer: %q", got)
		}

		// Another session of the same editor, opened without MCP servers, is not offered the tool.
		other := newACPSession(t, e, project)
		from = e.mark()
		if stop := prompt(t, e, other.SessionId, "mcp: inner tandem-sessions {}"); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
		if got := agentText(e.since(from)); !strings.Contains(got, "`inner_tandem-sessions` tool, but it is not available in this session") {
			t.Fatalf("another session's answer: %q", got)
		}
	})

	t.Run("session/cancel stops a running turn and the prompt answers cancelled", func(t *testing.T) {
		s := newACPSession(t, e, project)
		from := e.mark()
		done := promptAsync(t, e, s.SessionId, "slow: one two three four five six seven eight nine ten eleven twelve")
		e.waitFor(t, "the first words", func() bool { return agentText(e.since(from)) != "" })
		if err := e.conn.Cancel(t.Context(), acp.CancelNotification{SessionId: s.SessionId}); err != nil {
			t.Fatal(err)
		}
		awaitStop(t, done, acp.StopReasonCancelled, "the prompt after session/cancel")
		if got := agentText(e.since(from)); strings.Contains(got, "twelve") {
			t.Fatalf("the whole answer streamed despite the cancel: %q", got)
		}
	})

	t.Run("another editor attached to the server loads a stored session's history", func(t *testing.T) {
		other := startACP(t, append(env, "TANDEM_SERVER_PASSWORD="+testPassword), "--attach", e.url, "--data-dir", data)
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		res, err := other.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: firstSession, Cwd: project, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatalf("session/load: %v", err)
		}
		if res.Modes == nil || res.Modes.CurrentModeId != "build" {
			t.Fatalf("modes after load: %+v", res.Modes)
		}
		updates := other.since(0)
		var user string
		for _, u := range updates {
			if c := u.UserMessageChunk; c != nil && c.Content.Text != nil {
				user += c.Content.Text.Text
			}
		}
		if user != "hello over acp" || agentText(updates) != "You said: hello over acp" {
			t.Fatalf("replayed user %q, agent %q", user, agentText(updates))
		}
		if stop := prompt(t, other, firstSession, "and once more"); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
	})

	t.Run("the MCP servers an attached editor added go when it disconnects, and its session stays", func(t *testing.T) {
		innerData := t.TempDir() // removed after the editor's MCP server has ended
		other := startACP(t, env, "--attach", e.url, "--data-dir", data)
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		s, err := other.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: project, McpServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{
			Name: "inner", Command: builtBinary(t), Args: []string{"mcp", "--port", "0", "--data-dir", innerData, "--dir", project},
			Env: []acp.EnvVariable{{Name: "HOME", Value: innerData}, {Name: "XDG_STATE_HOME", Value: innerData}, {Name: "XDG_CONFIG_HOME", Value: innerData},
				{Name: "TANDEM_SERVER_PASSWORD", Value: "inner"}},
		}}}})
		if err != nil {
			t.Fatalf("session/new with an MCP server: %v", err)
		}
		key := string("inner@" + s.SessionId)
		waitMCPStatus(t, e.rest, "the attached editor's server connected", func(st map[string]mcpclient.Status) bool {
			return st[key].Status == "connected" && st[key].SessionID == string(s.SessionId)
		})
		other.close()
		waitMCPStatus(t, e.rest, "the attached editor's server removed", func(st map[string]mcpclient.Status) bool {
			_, ok := st[key]
			return !ok
		})
		if _, err := e.rest.Session(ctx, string(s.SessionId)); err != nil {
			t.Fatalf("the session went with the editor: %v", err)
		}
	})

	t.Run("an editor's server named like a project server is refused and leaves no session behind", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		if err := e.rest.AddMCP(ctx, "projectwide", map[string]any{"type": "local", "command": []string{"/nonexistent"}, "enabled": false}); err != nil {
			t.Fatal(err)
		}
		before, err := e.rest.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: project, McpServers: []acp.McpServer{{Http: &acp.McpServerHttpInline{
			Name: "projectwide", Type: "http", Url: "http://127.0.0.1:1/mcp", Headers: []acp.HttpHeader{}}}}})
		var re *acp.RequestError
		if !errors.As(err, &re) || !strings.Contains(fmt.Sprint(re.Data), "MCP server projectwide is a server of the project") {
			t.Fatalf("session/new = %v, want the name clash", err)
		}
		after, err := e.rest.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("sessions before %d, after %d", len(before), len(after))
		}
		if err := e.rest.RemoveMCP(ctx, "projectwide"); err != nil {
			t.Fatal(err)
		}
	})
}

// waitMCPStatus polls GET /mcp until ok holds.
func waitMCPStatus(t *testing.T, c *client.Client, what string, ok func(map[string]mcpclient.Status) bool) map[string]mcpclient.Status {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(100 * time.Millisecond) {
		st, err := c.MCPStatus(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: GET /mcp = %+v", waitLimit, what, st)
		}
	}
}

// waitPermissionOptions renders a request's options as "id:kind" pairs.
func waitPermissionOptions(t *testing.T, req acp.RequestPermissionRequest) string {
	t.Helper()
	var out []string
	for _, o := range req.Options {
		out = append(out, string(o.OptionId)+":"+string(o.Kind))
	}
	return strings.Join(out, " ")
}

func TestACPEditorBuffersAndTerminals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	data, project := t.TempDir(), t.TempDir()
	notes := filepath.Join(project, "notes.txt")
	if err := os.WriteFile(notes, []byte("saved on disk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TANDEM_SERVER_PASSWORD=" + testPassword, "XDG_STATE_HOME=" + data, "XDG_CONFIG_HOME=" + data, "HOME=" + data}
	e := startACPWith(t, acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true},
		map[string]string{notes: "unsaved in the editor\n"}, env, "--port", "0", "--dir", project, "--data-dir", data)
	s := newACPSession(t, e, project)
	e.setAnswer(choose("once"))

	t.Run("a read sees the editor's unsaved buffer", func(t *testing.T) {
		from := e.mark()
		prompt(t, e, s.SessionId, "read: notes.txt")
		if got := agentText(e.since(from)); !strings.Contains(got, "unsaved in the editor") || strings.Contains(got, "saved on disk") {
			t.Fatalf("the read returned %q", got)
		}
	})
	t.Run("an edit applies to the buffer and its result goes to the editor, not the disk", func(t *testing.T) {
		prompt(t, e, s.SessionId, "edit: notes.txt\nunsaved\n---\nedited")
		e.mu.Lock()
		buffer := e.buffers[notes]
		e.mu.Unlock()
		if buffer != "edited in the editor\n" {
			t.Fatalf("the editor's buffer: %q", buffer)
		}
		if b, _ := os.ReadFile(notes); string(b) != "saved on disk\n" {
			t.Fatalf("tandem wrote the disk itself: %q", b)
		}
	})
	t.Run("a command runs in the editor's terminal, which the tool call embeds", func(t *testing.T) {
		from := e.mark()
		prompt(t, e, s.SessionId, "run: echo from-the-editor-terminal")
		e.mu.Lock()
		var ran []string
		for _, term := range e.terminals {
			ran = append(ran, strings.Join(term.cmd.Args[1:], " "))
		}
		e.mu.Unlock()
		// The same shell, dialect and flags as tandem's own runs.
		if want := strings.Join(shelljudge.FindShell().Args("echo from-the-editor-terminal"), " "); len(ran) != 1 || ran[0] != want {
			t.Fatalf("the editor's terminals ran %q", ran)
		}
		var embedded string
		for _, tc := range toolsIn(e.since(from)) {
			for _, c := range tc.content {
				if c.Terminal != nil {
					embedded = c.Terminal.TerminalId
				}
			}
		}
		if embedded != "term-1" {
			t.Fatalf("the tool call embeds terminal %q", embedded)
		}
		if got := agentText(e.since(from)); !strings.Contains(got, "from-the-editor-terminal") {
			t.Fatalf("the command's output did not reach the model: %q", got)
		}
	})
}

// TestACPOverHTTPRemovesTheEditorsMCPServersWithItsConnection drives /acp of a running server as a
// remote editor would: the MCP server it names in session/new (here the same tandem's own MCP
// endpoint) is the session's, and it goes when the editor ends its connection with DELETE /acp.
func TestACPOverHTTPRemovesTheEditorsMCPServersWithItsConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, builtBinary(t), data, project)
	rest := client.New(srv.url, "tandem", srv.pass)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	send := func(method, conn, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.url+"/acp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("tandem", srv.pass)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Accept", "text/event-stream")
		}
		if conn != "" {
			req.Header.Set("Acp-Connection-Id", conn)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := send(http.MethodPost, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	conn := res.Header.Get("Acp-Connection-Id")
	if res.StatusCode != http.StatusOK || conn == "" {
		t.Fatalf("initialize: %d, connection %q", res.StatusCode, conn)
	}
	stream := send(http.MethodGet, conn, "")
	defer stream.Body.Close()

	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("tandem:"+srv.pass))
	newSession, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{
		"cwd": project, "mcpServers": []map[string]any{{"type": "http", "name": "self", "url": srv.url + "/mcp-server",
			"headers": []map[string]string{{"name": "Authorization", "value": auth}}}}}})
	if res := send(http.MethodPost, conn, string(newSession)); res.StatusCode != http.StatusAccepted {
		t.Fatalf("session/new: %d", res.StatusCode)
	} else {
		res.Body.Close()
	}
	var sid string
	sc := bufio.NewScanner(stream.Body)
	for sid == "" && sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			ID     *int `json:"id"`
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatal(err)
		}
		if msg.ID != nil && *msg.ID == 1 {
			if msg.Error != nil || msg.Result.SessionID == "" {
				t.Fatalf("session/new answered %s", line)
			}
			sid = msg.Result.SessionID
		}
	}
	if sid == "" {
		t.Fatalf("the stream ended before session/new was answered: %v", sc.Err())
	}

	key := "self@" + sid
	st := waitMCPStatus(t, rest, "the remote editor's server connected for its session", func(st map[string]mcpclient.Status) bool {
		return st[key].Status == "connected"
	})
	if st[key].SessionID != sid {
		t.Fatalf("GET /mcp: %+v", st)
	}
	if res := send(http.MethodDelete, conn, ""); res.StatusCode != http.StatusAccepted {
		t.Fatalf("DELETE /acp: %d", res.StatusCode)
	} else {
		res.Body.Close()
	}
	waitMCPStatus(t, rest, "the remote editor's server removed", func(st map[string]mcpclient.Status) bool {
		_, ok := st[key]
		return !ok
	})
	if _, err := rest.Session(ctx, sid); err != nil {
		t.Fatalf("the session went with the connection: %v", err)
	}
}
