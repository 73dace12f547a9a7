//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/door/run"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// cliRun is `tandem run` from the built binary, started in an isolated home with stdin not a
// terminal and no controlling terminal either (its own session), as in CI.
type cliRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	cancel context.CancelFunc
	out    bytes.Buffer
	mu     sync.Mutex
	errb   bytes.Buffer
}

func (r *cliRun) Write(p []byte) (int, error) { // stderr, read while it runs
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errb.Write(p)
}

func (r *cliRun) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errb.String()
}

func startRun(t *testing.T, bin, home, dir string, env []string, args ...string) *cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	r := &cliRun{t: t, cancel: cancel}
	r.cmd = exec.CommandContext(ctx, bin, append([]string{"run"}, args...)...)
	r.cmd.Dir = dir
	r.cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home, "TANDEM_SERVER_PASSWORD=")
	r.cmd.Env = append(r.cmd.Env, env...)
	r.cmd.Stdin = strings.NewReader("")
	r.cmd.Stdout, r.cmd.Stderr = &r.out, r
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := r.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = r.cmd.Wait()
	})
	return r
}

// wait returns what the run printed and its exit status.
func (r *cliRun) wait() (stdout, stderr string, code int) {
	r.t.Helper()
	defer r.cancel()
	err := r.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("tandem run: %v", err)
	}
	return r.out.String(), r.stderr(), code
}

// waitForStderr waits until the run has printed want on stderr.
func (r *cliRun) waitForStderr(want string) {
	r.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(r.stderr(), want) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the run did not print %q within %s:\n%s", want, waitLimit, r.stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runCLI runs `tandem run` to its end.
func runCLI(t *testing.T, bin, home, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return startRun(t, bin, home, dir, env, args...).wait()
}

// runLine is one line of --format json.
type runLine struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	// the result line
	SessionID string         `json:"sessionID"`
	Status    string         `json:"status"`
	ExitCode  *int           `json:"exitCode"`
	Text      string         `json:"text"`
	Error     string         `json:"error"`
	Cost      float64        `json:"cost"`
	Tokens    session.Tokens `json:"tokens"`
	Approvals []struct {
		RequestID, Permission, Decision, Reply, Cause, By string
		Patterns                                          []string
	} `json:"approvals"`
}

// jsonLines parses --format json output: every line one JSON object, the last one the result.
func jsonLines(t *testing.T, stdout string) (events []runLine, result runLine) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 16<<20)
	var lines []runLine
	for sc.Scan() {
		var l runLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 || lines[len(lines)-1].Type != "result" || lines[len(lines)-1].ExitCode == nil {
		t.Fatalf("no result line last:\n%s", stdout)
	}
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func TestRunPrintsTheAnswerOfOnePrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)

	t.Run("in-process, the answer goes to stdout and nothing else does", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "hello", "there")
		if code != 0 || out != "You said: hello there\n" || !strings.Contains(errOut, "session ses_") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("--format json prints the turn's events, one per line, then the result", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "--format", "json", "hello json")
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		events, res := jsonLines(t, out)
		if res.Status != "completed" || *res.ExitCode != 0 || res.Text != "You said: hello json" || !strings.HasPrefix(res.SessionID, "ses_") || len(res.Approvals) != 0 {
			t.Fatalf("result %+v", res)
		}
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
			if got := run.EventSession(e.Properties); got != res.SessionID {
				t.Fatalf("an event of another session (%q) on stdout: %s %s", got, e.Type, e.Properties)
			}
		}
		for _, want := range []string{"session.created", "message.updated", "message.part.updated", "message.part.delta", "session.idle"} {
			if !slices.Contains(types, want) {
				t.Fatalf("no %s among the events %v", want, types)
			}
		}
		if types[len(types)-1] != "session.idle" {
			t.Fatalf("the last event is %s, want session.idle", types[len(types)-1])
		}
	})
	t.Run("--format json reports what the turn's model calls used and cost", func(t *testing.T) {
		server := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"Priced."},
			Usage: providertest.Usage{Input: 1000, Output: 100, CacheRead: 3000}})
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, "tandem"), 0o700); err != nil {
			t.Fatal(err)
		}
		cfg, _ := json.Marshal(map[string]any{"model": "openai/gpt-4.1",
			"provider": map[string]any{"openai": map[string]any{"options": map[string]any{"apiKey": "sk-test", "baseURL": server.BaseURL}}}})
		if err := os.WriteFile(filepath.Join(home, "tandem", "tandem.json"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, bin, home, t.TempDir(), nil, "--format", "json", "what does it cost?")
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		_, res := jsonLines(t, out)
		if res.Text != "Priced." {
			t.Fatalf("result %+v", res)
		}
		want := session.Tokens{Total: 1100, Input: 1000, Output: 100, Cache: session.TokensCache{Read: 3000}}
		// GPT-4.1: $2 input, $8 output, $0.50 cached input per million tokens.
		if res.Tokens != want || math.Abs(res.Cost-0.0043) > 1e-12 {
			t.Fatalf("cost $%v tokens %+v, want $0.0043 and %+v", res.Cost, res.Tokens, want)
		}
	})
	t.Run("--variant picks the model's variant, and one it does not have fails the turn naming those it has", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "--format", "json", "--variant", "high", "hello")
		_, res := jsonLines(t, out)
		if code != 1 || res.Status != "error" || !strings.Contains(res.Error, `no variant "high" (it has: none)`) {
			t.Fatalf("exit %d, result %+v, stderr %q", code, res, errOut)
		}
	})
	t.Run("the tool's progress is on stderr and its report on stdout", func(t *testing.T) {
		home := t.TempDir()
		allowBash(t, home, "echo *")
		out, errOut, code := runCLI(t, bin, home, t.TempDir(), nil, "run: echo from-run")
		if code != 0 || !strings.Contains(out, "from-run") || !strings.Contains(errOut, "✓ bash: echo from-run") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("piped input is part of the prompt", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		home := t.TempDir()
		cmd := exec.CommandContext(ctx, bin, "run", "review:")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
		cmd.Stdin = strings.NewReader("the piped diff\n")
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), "the piped diff") {
			t.Fatalf("%v: %q", err, out)
		}
	})
}

// allowBash writes a user configuration (in home) whose rules allow bash commands matching pattern.
func allowBash(t *testing.T, home, pattern string) {
	t.Helper()
	dir := filepath.Join(home, "tandem")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"permission": map[string]any{"bash": map[string]string{pattern: "allow"}}})
	if err := os.WriteFile(filepath.Join(dir, "tandem.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRunExitStatuses: each way a run ends has its own exit status.
func TestRunExitStatuses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)

	usage := []struct {
		name string
		args []string
		want string
	}{
		{"no prompt", nil, "a prompt is required"},
		{"an unknown --on-ask", []string{"--on-ask", "maybe", "hi"}, `--on-ask: expected prompt, reject, allow-within-rules or wait, got "maybe"`},
		{"the old --approve flag", []string{"--approve", "all", "hi"}, "unknown flag: --approve"},
		{"an unknown --format", []string{"--format", "yaml", "hi"}, `--format: expected text or json, got "yaml"`},
		{"a timeout that is not positive", []string{"--timeout", "0s", "hi"}, "--timeout: must be positive"},
		{"a timeout that is not a duration", []string{"--timeout", "soon", "hi"}, `invalid argument "soon"`},
		{"wait on a server nobody else can reach", []string{"--on-ask", "wait", "hi"}, "no other client can answer"},
	}
	for _, tc := range usage {
		t.Run("usage error, status 2: "+tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, tc.args...)
			if code != run.ExitUsage || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "tandem run --help") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}

	t.Run("a turn that ends with an error is status 1, and says why", func(t *testing.T) {
		provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"the model is on strike","type":"invalid_request_error"}}`)
		}))
		defer provider.Close()
		env := []string{"OPENAI_BASE_URL=" + provider.URL + "/v1", "OPENAI_API_KEY=sk-test"}
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), env, "--format", "json", "--model", "openai/gpt-4o", "hi")
		_, res := jsonLines(t, out)
		if code != run.ExitFailed || res.Status != "error" || *res.ExitCode != run.ExitFailed || !strings.Contains(res.Error, "on strike") ||
			!strings.Contains(errOut, "on strike") {
			t.Fatalf("exit %d, result %+v, stderr %q", code, res, errOut)
		}
	})
	t.Run("an unknown model is status 1 and names it", func(t *testing.T) {
		_, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "--model", "nowhere/none", "hi")
		if code != run.ExitFailed || !strings.Contains(errOut, "nowhere") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("--timeout aborts the turn: status 124, the answer so far on stdout", func(t *testing.T) {
		start := time.Now()
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "--timeout", "1s", "slow: "+strings.Repeat("word ", 40))
		if code != run.ExitTimeout || !strings.HasPrefix(out, "word word") || strings.Count(out, "word") >= 40 || !strings.Contains(errOut, "--timeout 1s passed: the turn was aborted") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("the run took %s with --timeout 1s", d)
		}
	})
	t.Run("SIGINT aborts the turn: status 130", func(t *testing.T) {
		r := startRun(t, bin, t.TempDir(), t.TempDir(), nil, "--format", "json", "slow: "+strings.Repeat("word ", 40))
		r.waitForStderr("session ses_")
		time.Sleep(500 * time.Millisecond) // a few words in
		if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := r.wait()
		_, res := jsonLines(t, out)
		if code != run.ExitInterrupted || res.Status != "interrupted" || !strings.Contains(errOut, "interrupted") {
			t.Fatalf("exit %d, result %+v, stderr %q", code, res, errOut)
		}
	})
}

// TestRunOnAsk: each --on-ask strategy, for a command the rules leave to a person.
func TestRunOnAsk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)

	t.Run("reject (the default without a terminal) refuses at once: nothing runs, status 3", func(t *testing.T) {
		for _, args := range [][]string{{"--format", "json"}, {"--format", "json", "--on-ask", "reject"}} {
			dir := t.TempDir()
			out, errOut, code := runCLI(t, bin, t.TempDir(), dir, nil, append(args, "run: touch made-by-run")...)
			_, res := jsonLines(t, out)
			if code != run.ExitRefused || res.Status != "refused" || !strings.Contains(errOut, "rejected bash: touch made-by-run") {
				t.Fatalf("%v: exit %d, result %+v, stderr %q", args, code, res, errOut)
			}
			if len(res.Approvals) != 1 || res.Approvals[0].Decision != "reject" || res.Approvals[0].By != "tandem run" ||
				res.Approvals[0].Permission != "bash" || !slices.Equal(res.Approvals[0].Patterns, []string{"touch made-by-run"}) {
				t.Fatalf("approvals %+v", res.Approvals)
			}
			if _, err := os.Stat(filepath.Join(dir, "made-by-run")); !os.IsNotExist(err) {
				t.Fatalf("the rejected command ran: %v", err)
			}
		}
	})
	t.Run("prompt without a terminal says so and rejects", func(t *testing.T) {
		dir := t.TempDir()
		_, errOut, code := runCLI(t, bin, t.TempDir(), dir, nil, "--on-ask", "prompt", "run: touch made-by-run")
		if code != run.ExitRefused || !strings.Contains(errOut, "no terminal to ask on") || !strings.Contains(errOut, "rejected bash: touch made-by-run") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "made-by-run")); !os.IsNotExist(err) {
			t.Fatalf("the rejected command ran: %v", err)
		}
	})
	t.Run("allow-within-rules runs what the rules allow and refuses the rest, which is no failure", func(t *testing.T) {
		home, dir := t.TempDir(), t.TempDir()
		allowBash(t, home, "touch allowed-*")
		out, errOut, code := runCLI(t, bin, home, dir, nil, "--on-ask", "allow-within-rules", "--format", "json", "run: touch allowed-by-rule")
		if _, res := jsonLines(t, out); code != 0 || res.Status != "completed" || len(res.Approvals) != 0 {
			t.Fatalf("within the rules: exit %d, result %+v, stderr %q", code, res, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "allowed-by-rule")); err != nil {
			t.Fatalf("the allowed command did not run: %v", err)
		}
		out, errOut, code = runCLI(t, bin, home, dir, nil, "--on-ask", "allow-within-rules", "--format", "json", "run: touch beyond-the-rules")
		_, res := jsonLines(t, out)
		if code != 0 || res.Status != "completed" || len(res.Approvals) != 1 || res.Approvals[0].Decision != "reject" ||
			!strings.Contains(errOut, "rejected bash: touch beyond-the-rules") {
			t.Fatalf("beyond the rules: exit %d, result %+v, stderr %q", code, res, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "beyond-the-rules")); !os.IsNotExist(err) {
			t.Fatalf("the command beyond the rules ran: %v", err)
		}
	})
	t.Run("wait", func(t *testing.T) {
		data, project := t.TempDir(), t.TempDir()
		srv := startBinary(t, bin, data, project)
		env := []string{"TANDEM_SERVER_PASSWORD=" + srv.pass}
		pending := func() []struct{ ID, SessionID string } {
			var list []struct{ ID, SessionID string }
			srv.get("/permission", &list)
			return list
		}

		t.Run("leaves the approval to another client, says where, and takes its answer", func(t *testing.T) {
			r := startRun(t, bin, t.TempDir(), t.TempDir(), env, "--attach", srv.url, "--on-ask", "wait", "run: touch answered-elsewhere")
			r.waitForStderr("waiting for another client to answer per_")
			list := pending()
			if len(list) != 1 {
				t.Fatalf("pending %+v", list)
			}
			for _, want := range []string{list[0].ID, "bash: touch answered-elsewhere", srv.url + "/permission/" + list[0].ID + "/reply", `"session"`, `"deny-always"`} {
				if !strings.Contains(r.stderr(), want) {
					t.Fatalf("stderr lacks %q:\n%s", want, r.stderr())
				}
			}
			srv.post("/permission/"+list[0].ID+"/reply", map[string]string{"reply": "session"}, nil)
			out, errOut, code := r.wait()
			if code != 0 || !strings.Contains(out, "touch answered-elsewhere") || !strings.Contains(errOut, "allowed (session) bash: touch answered-elsewhere — answered by another client") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(project, "answered-elsewhere")); err != nil {
				t.Fatalf("the command allowed elsewhere did not run: %v", err)
			}
		})
		t.Run("unanswered, it ends at --timeout: the turn is aborted, status 124", func(t *testing.T) {
			out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), env, "--attach", srv.url, "--on-ask", "wait", "--timeout", "2s", "--format", "json", "run: touch never-answered")
			_, res := jsonLines(t, out)
			if code != run.ExitTimeout || res.Status != "timeout" || !strings.Contains(errOut, "waiting for another client") {
				t.Fatalf("exit %d, result %+v, stderr %q", code, res, errOut)
			}
			deadline := time.Now().Add(waitLimit)
			for len(pending()) != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the approval still waits after the run timed out: %+v", pending())
				}
				time.Sleep(20 * time.Millisecond)
			}
			var statuses map[string]session.Status
			srv.get("/session/status", &statuses)
			if _, busy := statuses[res.SessionID]; busy {
				t.Fatalf("the session is still busy after the run timed out: %+v", statuses)
			}
			if _, err := os.Stat(filepath.Join(project, "never-answered")); !os.IsNotExist(err) {
				t.Fatalf("the unanswered command ran: %v", err)
			}
		})
	})
}

func TestRunUsesTheLocalServerOrTheOneAttached(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, bin, data, project)
	sessionsOf := func() []session.Session {
		var list []session.Session
		srv.get("/session", &list)
		return list
	}

	t.Run("a running local server is used, so the session is in its list", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, data, project, nil, "via the local server")
		if code != 0 || out != "You said: via the local server\n" || !strings.Contains(errOut, "using the tandem server at "+srv.url) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		// The demo model titles the session from the prompt.
		if list := sessionsOf(); len(list) != 1 || list[0].Title != "Via the local server" {
			t.Fatalf("the server's sessions: %+v", list)
		}
	})
	t.Run("--attach URL with the password from the environment", func(t *testing.T) {
		out, _, code := runCLI(t, bin, t.TempDir(), t.TempDir(), []string{"TANDEM_SERVER_PASSWORD=" + srv.pass}, "--attach", srv.url, "attached")
		if code != 0 || out != "You said: attached\n" || len(sessionsOf()) != 2 {
			t.Fatalf("exit %d, stdout %q, sessions %d", code, out, len(sessionsOf()))
		}
	})
	t.Run("--session continues a session, in JSON too", func(t *testing.T) {
		sid := sessionsOf()[0].ID
		out, _, code := runCLI(t, bin, t.TempDir(), t.TempDir(), []string{"TANDEM_SERVER_PASSWORD=" + srv.pass}, "--attach", srv.url, "--session", sid, "--format", "json", "once more")
		if _, res := jsonLines(t, out); code != 0 || res.SessionID != sid || res.Text != "You said: once more" {
			t.Fatalf("exit %d, result %+v", code, res)
		}
		var msgs []session.WithParts
		srv.get("/session/"+sid+"/message", &msgs)
		if len(msgs) != 4 {
			t.Fatalf("the continued session has %d messages, want 4", len(msgs))
		}
	})
	t.Run("--attach with a wrong password says so", func(t *testing.T) {
		_, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), []string{"TANDEM_SERVER_PASSWORD=wrong"}, "--attach", srv.url, "x")
		if code != 1 || !strings.Contains(errOut, "Unauthorized") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

// ptyRun runs `tandem run` on a real pseudo-terminal, as a person at a shell would, and answers
// each prompt that appears with the next reply; it returns the screen and the exit status.
func ptyRun(t *testing.T, bin, home, dir string, prompts, replies []string, args ...string) (string, int) {
	t.Helper()
	acts := make([]func(io.Writer), len(replies))
	for i, reply := range replies {
		acts[i] = func(tty io.Writer) {
			if _, err := tty.Write([]byte(reply + "\n")); err != nil {
				t.Error(err)
			}
		}
	}
	return ptyDo(t, bin, home, dir, nil, prompts, acts, args...)
}

// ptyDo is ptyRun with an action for each prompt (typing on the terminal, or anything else).
func ptyDo(t *testing.T, bin, home, dir string, env, prompts []string, acts []func(tty io.Writer), args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home, "TANDEM_SERVER_PASSWORD=", "TERM=dumb")
	cmd.Env = append(cmd.Env, env...)
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var screen bytes.Buffer
	buf := make([]byte, 4096)
	next, from := 0, 0
	for {
		n, err := tty.Read(buf)
		screen.Write(buf[:n])
		if next < len(prompts) {
			if i := strings.Index(screen.String()[from:], prompts[next]); i >= 0 {
				from += i + len(prompts[next])
				acts[next](tty)
				next++
			}
		}
		if err != nil {
			break // the program ended (EIO on Linux once the terminal's other side closes)
		}
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("tandem run: %v\n%s", err, screen.String())
		}
		code = ee.ExitCode()
	}
	if next != len(prompts) {
		t.Fatalf("prompt %q never appeared:\n%s", prompts[next], screen.String())
	}
	return screen.String(), code
}

// TestRunAsksOnATerminal: with a terminal, prompt is the default; the approval offers the
// request's decisions, and the answer typed is what happens.
func TestRunAsksOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	choices := "[1-6 or a key; y = once, n = reject; Enter = reject]: "

	t.Run("y allows once", func(t *testing.T) {
		dir := t.TempDir()
		screen, code := ptyRun(t, bin, t.TempDir(), dir, []string{choices}, []string{"y"}, "run: touch asked-on-the-terminal")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, screen)
		}
		for _, want := range []string{"? allow bash: touch asked-on-the-terminal", "1) Allow once (touch asked-on-the-terminal)", "3) Always allow in this project (touch *)", "6) Always reject in this project (touch *)"} {
			if !strings.Contains(screen, want) {
				t.Fatalf("the prompt lacks %q:\n%s", want, screen)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "asked-on-the-terminal")); err != nil {
			t.Fatalf("the command allowed on the terminal did not run: %v\n%s", err, screen)
		}
	})
	t.Run("reject-with-message asks for the message and tells the agent; status 3", func(t *testing.T) {
		dir := t.TempDir()
		screen, code := ptyRun(t, bin, t.TempDir(), dir, []string{choices, "tell the agent why: "}, []string{"5", "not in this directory"}, "run: touch refused-on-the-terminal")
		if code != run.ExitRefused || !strings.Contains(screen, "not in this directory") || !strings.Contains(screen, "rejected (reject-with-message) bash: touch refused-on-the-terminal") {
			t.Fatalf("exit %d\n%s", code, screen)
		}
		if _, err := os.Stat(filepath.Join(dir, "refused-on-the-terminal")); !os.IsNotExist(err) {
			t.Fatalf("the refused command ran: %v", err)
		}
	})
	t.Run("a question is asked there too", func(t *testing.T) {
		screen, code := ptyRun(t, bin, t.TempDir(), t.TempDir(), []string{"> "}, []string{"2"}, "ask: Which DB? | Postgres | SQLite")
		if code != 0 || !strings.Contains(screen, "? Which DB?") || !strings.Contains(screen, `"Which DB?"="SQLite"`) {
			t.Fatalf("exit %d\n%s", code, screen)
		}
	})
}

// TestRunOnATerminalGivesWayToAnotherClient: while the terminal asks, the web UI (here: curl's
// request) answers first; the terminal says so and the run goes on with that answer.
func TestRunOnATerminalGivesWayToAnotherClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, bin, data, project)
	answer := func(io.Writer) {
		var list []struct{ ID string }
		srv.get("/permission", &list)
		if len(list) != 1 {
			t.Errorf("pending %+v", list)
			return
		}
		srv.post("/permission/"+list[0].ID+"/reply", map[string]string{"reply": "once"}, nil)
	}
	screen, code := ptyDo(t, bin, t.TempDir(), t.TempDir(), []string{"TANDEM_SERVER_PASSWORD=" + srv.pass},
		[]string{"Enter = reject]: "}, []func(io.Writer){answer}, "--attach", srv.url, "run: touch answered-from-the-web")
	if code != 0 || !strings.Contains(screen, "(answered elsewhere)") || !strings.Contains(screen, "allowed bash: touch answered-from-the-web — answered by another client") {
		t.Fatalf("exit %d\n%s", code, screen)
	}
	if _, err := os.Stat(filepath.Join(project, "answered-from-the-web")); err != nil {
		t.Fatalf("the command allowed elsewhere did not run: %v\n%s", err, screen)
	}
}

// TestRunAnswersAnMCPServersFormAsOnAskSays: a form server-everything asks for during a tool call
// is declined by reject, and left pending with its address by wait.
func TestRunAnswersAnMCPServersFormAsOnAskSays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	entry := testenv.ServerEverything(t)
	data, project := t.TempDir(), t.TempDir()
	cfg, _ := json.Marshal(map[string]any{
		"mcp":        map[string]any{"everything": map[string]any{"type": "local", "command": []string{"node", entry, "stdio"}}},
		"permission": map[string]any{"everything_*": "allow"},
	})
	if err := os.MkdirAll(filepath.Join(data, "tandem"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tandem", "tandem.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startBinary(t, bin, data, project)
	testenv.Eventually(t, "server-everything connected", func() bool {
		var status map[string]struct{ Status string }
		srv.get("/mcp", &status)
		return status["everything"].Status == "connected"
	})
	env := []string{"TANDEM_SERVER_PASSWORD=" + srv.pass}
	prompt := "mcp: everything trigger-elicitation-request {}"

	t.Run("reject declines it", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), env, "--attach", srv.url, "--on-ask", "reject", prompt)
		if code != 0 || !strings.Contains(errOut, "declined what the MCP server everything asked (--on-ask reject)") || !strings.Contains(strings.ToLower(out), "decline") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("wait leaves it for another client and says where", func(t *testing.T) {
		r := startRun(t, bin, t.TempDir(), t.TempDir(), env, "--attach", srv.url, "--on-ask", "wait", prompt)
		r.waitForStderr("/mcp/elicitation/eli_")
		var list []struct{ ID string }
		srv.get("/mcp/elicitation", &list)
		if len(list) != 1 || !strings.Contains(r.stderr(), list[0].ID) {
			t.Fatalf("pending %+v, stderr %q", list, r.stderr())
		}
		srv.post("/mcp/elicitation/"+list[0].ID+"/reply", map[string]any{"action": "cancel"}, nil)
		if _, errOut, code := r.wait(); code != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}
