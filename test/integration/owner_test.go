//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/door/run"
	"github.com/tandem-dev/tandem/internal/infra/lease"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// These tests run the real binary twice on one data directory: the first process owns it, and
// every later one is either refused (serve, web) or uses the owner (mcp, acp, run).

// ownerEnv is what a second process beside startBinary's server adds to the environment: a state
// directory of its own and no password, so that it can find the owner of the data directory it is
// given only through the directory's lease.
func ownerEnv(t *testing.T) []string {
	elsewhere := t.TempDir()
	return []string{"XDG_STATE_HOME=" + elsewhere, "XDG_CONFIG_HOME=" + elsewhere, "HOME=" + elsewhere, "TANDEM_SERVER_PASSWORD="}
}

// pendingIDs is the first server's GET /permission, as IDs.
func (s *liveServer) pendingIDs() []string {
	s.t.Helper()
	var list []permissionRequest
	s.get("/permission", &list)
	var ids []string
	for _, r := range list {
		ids = append(ids, r.ID)
	}
	return ids
}

// toolStatus is the status of the last tool part of a session on the first server.
func (s *liveServer) toolStatus(sid string) string {
	s.t.Helper()
	var msgs []session.WithParts
	s.get("/session/"+sid+"/message", &msgs)
	tools := toolParts(msgs)
	if len(tools) == 0 || tools[len(tools)-1].State == nil {
		return ""
	}
	return tools[len(tools)-1].State.Status
}

func TestASecondServerOnTheDataDirectoryIsRefusedAndChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	// The user's own config (XDG_CONFIG_HOME is the data dir for startBinary) allows the sleep.
	if err := os.MkdirAll(filepath.Join(data, "tandem"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tandem", "tandem.json"), []byte(`{"permission": {"bash": {"sleep *": "allow"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startBinary(t, bin, data, project)

	// The first server's live work: an approval waiting, and a turn running a command.
	var asks, runs struct{ ID string }
	srv.post("/session", map[string]any{}, &asks)
	srv.post("/session/"+asks.ID+"/prompt_async", map[string]any{"parts": []map[string]string{{"type": "text", "text": "run: touch approved-later"}}}, nil)
	testenv.Eventually(t, "the approval is pending", func() bool { return len(srv.pendingIDs()) == 1 })
	pending := srv.pendingIDs()
	srv.post("/session", map[string]any{}, &runs)
	srv.post("/session/"+runs.ID+"/prompt_async", map[string]any{"parts": []map[string]string{{"type": "text", "text": "run: sleep 30"}}}, nil)
	testenv.Eventually(t, "the command is running", func() bool { return srv.toolStatus(runs.ID) == "running" })

	statePath := filepath.Join(data, "tandem", "server.json")
	state, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, door := range []string{"serve", "web"} {
		t.Run("a second `tandem "+door+"` exits 1 naming the owner's PID and URL", func(t *testing.T) {
			args := []string{door, "--port", "0", "--data-dir", data, "--dir", t.TempDir()}
			if door == "web" {
				args = append(args, "--no-open")
			}
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "TANDEM_SERVER_PASSWORD=other", "XDG_STATE_HOME="+data, "XDG_CONFIG_HOME="+data, "HOME="+data)
			out, err := cmd.CombinedOutput()
			want := fmt.Sprintf("is in use by tandem (PID %d, %s/)", srv.cmd.Process.Pid, srv.url)
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), want) {
				t.Fatalf("exit %v, output %q; want status 1 and %q", err, out, want)
			}
			if strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
				t.Fatalf("the refusal is more than one line: %q", out)
			}
		})
	}
	t.Run("the first server's pending approval, running turn and state file are untouched", func(t *testing.T) {
		if got := srv.pendingIDs(); len(got) != 1 || got[0] != pending[0] {
			t.Fatalf("pending %v, want %v", got, pending)
		}
		var statuses map[string]session.Status
		srv.get("/session/status", &statuses)
		if statuses[runs.ID].Type != "busy" || srv.toolStatus(runs.ID) != "running" {
			t.Fatalf("the running turn: status %+v, tool %q", statuses[runs.ID], srv.toolStatus(runs.ID))
		}
		if now, err := os.ReadFile(statePath); err != nil || !bytes.Equal(now, state) {
			t.Fatalf("server.json changed: %v\n%s\nwas\n%s", err, now, state)
		}
		if o := lease.ReadOwner(data); o.PID != srv.cmd.Process.Pid || o.URL != srv.url+"/" {
			t.Fatalf("the lease names %+v", o)
		}
	})
	t.Run("answering the approval on the first server still completes its turn", func(t *testing.T) {
		srv.post("/permission/"+pending[0]+"/reply", map[string]string{"reply": "once"}, nil)
		testenv.Eventually(t, "the approved command ran", func() bool { return srv.toolStatus(asks.ID) == "completed" })
		if _, err := os.Stat(filepath.Join(project, "approved-later")); err != nil {
			t.Fatal(err)
		}
		srv.post("/session/"+runs.ID+"/abort", map[string]any{}, nil)
	})
}

func TestServersStartedAtOnceOnOneDataDirectoryLeaveExactlyOneRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	type outcome struct {
		listening bool
		code      int
		out       string
	}
	const n = 3
	results := make(chan outcome, n)
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command(bin, "serve", "--port", "0", "--data-dir", data, "--dir", project, "--print-logs")
		cmd.Env = append(os.Environ(), "TANDEM_SERVER_PASSWORD=race", "XDG_STATE_HOME="+data, "XDG_CONFIG_HOME="+data, "HOME="+data)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmds = append(cmds, cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.Contains(sc.Text(), " listening on ") {
					results <- outcome{listening: true}
					_ = cmd.Process.Signal(os.Interrupt)
				}
			}
			_ = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				results <- outcome{code: code, out: stderr.String()}
			}
		}()
	}
	defer func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
		}
	}()
	listening, refused := 0, 0
	for range n {
		r, _ := testenv.Recv(t, results, "a racing server's outcome")
		switch {
		case r.listening:
			listening++
		case r.code == 1 && strings.Contains(r.out, "is in use by"):
			refused++
		default:
			t.Errorf("a racing server exited %d: %s", r.code, r.out)
		}
	}
	if listening != 1 || refused != n-1 {
		t.Fatalf("%d listened and %d were refused, want 1 and %d", listening, refused, n-1)
	}
}

// mcpBeside starts `tandem mcp` on srv's data directory and in project dir, with no --attach, and
// connects a client.
func mcpBeside(t *testing.T, bin, data, dir string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--data-dir", data, "--dir", dir)
	cmd.Env = append(os.Environ(), ownerEnv(t)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "beside-test", Version: "1"}, opts).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestMCPAndACPStartedBesideAServerUseIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, bin, data, project)
	sessions := func() map[string]bool {
		var list []session.Session
		srv.get("/session", &list)
		ids := map[string]bool{}
		for _, s := range list {
			ids[s.ID] = true
		}
		return ids
	}
	// answerOnTheServer answers the one pending approval over the first server's REST API, as a
	// person at the web UI would, while the door's own client leaves it unanswered.
	answerOnTheServer := func(t *testing.T) string {
		t.Helper()
		testenv.Eventually(t, "the door's approval is listed by the first server", func() bool { return len(srv.pendingIDs()) == 1 })
		id := srv.pendingIDs()[0]
		srv.post("/permission/"+id+"/reply", map[string]string{"reply": "once"}, nil)
		return id
	}

	t.Run("tandem mcp: its session and approval are the server's, and answering there completes the call", func(t *testing.T) {
		answered := make(chan struct{})
		cs := mcpBeside(t, bin, data, project, &mcp.ClientOptions{
			// The client can be asked, but nobody answers here: the person answers on the server.
			// Under 2025-11-25 the server then withdraws the form (ctx ends); under 2026-07-28 the
			// form is the client's until it returns, as a person closing it would.
			ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-answered:
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}
			},
		})
		done := make(chan map[string]any, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: touch made-through-mcp"}})
			if err != nil {
				t.Errorf("tandem: %v", err)
				done <- nil
				return
			}
			out, _ := res.StructuredContent.(map[string]any)
			done <- out
		}()
		answerOnTheServer(t)
		close(answered)
		out, _ := testenv.Recv(t, done, "the MCP call's result")
		sid, _ := out["sessionId"].(string)
		if out["status"] != "completed" || !sessions()[sid] {
			t.Fatalf("the call %+v; the server's sessions %v", out, sessions())
		}
		if srv.toolStatus(sid) != "completed" {
			t.Fatalf("the command's tool part: %q", srv.toolStatus(sid))
		}
		if _, err := os.Stat(filepath.Join(project, "made-through-mcp")); err != nil {
			t.Fatalf("the command did not run: %v", err)
		}
	})
	t.Run("tandem acp: its session and approval are the server's, and answering there completes the prompt", func(t *testing.T) {
		e := startACP(t, ownerEnv(t), "--data-dir", data, "--dir", t.TempDir())
		if e.url != srv.url {
			t.Fatalf("tandem acp says it uses %s, want %s", e.url, srv.url)
		}
		// The editor shows the approval, but nobody answers there: the person answers on the server.
		answered := make(chan struct{})
		e.setAnswer(func(ctx context.Context, _ acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			select {
			case <-answered:
			case <-ctx.Done():
			}
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
		})
		defer close(answered)
		s := newACPSession(t, e, project)
		if !sessions()[string(s.SessionId)] {
			t.Fatalf("the editor's session %s is not in the server's list %v", s.SessionId, sessions())
		}
		done := promptAsync(t, e, s.SessionId, "run: touch made-through-acp")
		answerOnTheServer(t)
		awaitStop(t, done, acp.StopReasonEndTurn, "the editor's prompt")
		if _, err := os.Stat(filepath.Join(project, "made-through-acp")); err != nil {
			t.Fatalf("the command did not run: %v", err)
		}
	})
	t.Run("tandem run: its session is the server's", func(t *testing.T) {
		before := len(sessions())
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "--data-dir", data, "via the owner")
		if code != 0 || out != "You said: via the owner\n" || !strings.Contains(errOut, "using the tandem server at "+srv.url+"/ (PID") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if after := len(sessions()); after != before+1 {
			t.Fatalf("the server has %d sessions, want %d", after, before+1)
		}
	})
}

func TestRunAttachedToNoServerSaysSoInOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	url := "http://127.0.0.1:" + strconv.Itoa(testenv.UnusedPort(t))
	out, errOut, code := runCLI(t, builtBinary(t), t.TempDir(), t.TempDir(), nil, "--attach", url, "hello?")
	want := "tandem: --attach: no tandem server answers at " + url + " (connection refused)\n"
	if code != run.ExitFailed || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want status 1 and %q", code, out, errOut, want)
	}
}

// TestRacingRepliesAcrossTwoDoorsRunTheCommandOnce answers one approval twenty times at once, through
// the owner's REST API and through `tandem mcp` started beside it: the command runs once, and one
// answer wins.
func TestRacingRepliesAcrossTwoDoorsRunTheCommandOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, bin, data, project)
	counter := filepath.Join(project, "ran")

	go1 := make(chan struct{})
	// The door works in a directory of its own, as an editor's would: its tasks start there.
	dir := t.TempDir()
	cs := mcpBeside(t, bin, data, dir, &mcp.ClientOptions{
		// The MCP door's answer waits for the starting gun, then races the REST answers.
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-go1:
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	done := make(chan map[string]any, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: echo once >> " + counter}})
		if err != nil {
			t.Errorf("tandem: %v", err)
			done <- nil
			return
		}
		out, _ := res.StructuredContent.(map[string]any)
		done <- out
	}()
	testenv.Eventually(t, "the approval is pending", func() bool { return len(srv.pendingIDs()) == 1 })
	id := srv.pendingIDs()[0]

	const restReplies = 19 // and the MCP door's: twenty
	var wg sync.WaitGroup
	codes := make(chan int, restReplies)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: restReplies}}
	defer hc.CloseIdleConnections()
	for range restReplies {
		wg.Go(func() {
			<-go1
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url+"/permission/"+id+"/reply", strings.NewReader(`{"reply":"once"}`))
			req.Header.Set("Content-Type", "application/json")
			req.SetBasicAuth("tandem", srv.pass)
			res, err := hc.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			codes <- res.StatusCode
		})
	}
	close(go1)
	wg.Wait()
	close(codes)
	won := map[int]int{}
	for c := range codes {
		won[c]++
	}
	out, _ := testenv.Recv(t, done, "the MCP call's result")
	if out["status"] != "completed" {
		t.Fatalf("the call ended %+v", out)
	}
	var sess session.Session
	srv.get("/session/"+out["sessionId"].(string), &sess)
	if sess.Directory != dir {
		t.Fatalf("the door's session runs in %q, want its --dir %q", sess.Directory, dir)
	}
	if won[http.StatusOK] > 1 || won[http.StatusOK]+won[http.StatusConflict] != restReplies {
		t.Fatalf("REST answers by status %v: at most one 200, the rest 409", won)
	}
	b, err := os.ReadFile(counter)
	if err != nil || strings.Count(string(b), "once\n") != 1 {
		t.Fatalf("the command ran %d times (%q, %v)", strings.Count(string(b), "once\n"), b, err)
	}
}
