//go:build linux

package integration

import (
	"encoding/json"

	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// codexScreen starts the pinned Codex TUI in tmux against a tandem app-server at addr (`codex
// --remote`, the token from the environment), in dir, with its own Codex home; args follow.
func codexScreen(t *testing.T, bin, addr, dir, home string, args ...string) *screen {
	t.Helper()
	testenv.Program(t, "tmux", "apt-get install tmux")
	sock, err := os.MkdirTemp("", "tcx") // a short path: a unix socket path has ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sock) })
	s := &screen{t: t, socket: filepath.Join(sock, "s"), name: "codex", poll: 50 * time.Millisecond}
	command := fmt.Sprintf("cd %s && env HOME=%s CODEX_HOME=%s TERM=xterm-256color TANDEM_TOKEN=%s %s --remote ws://%s --remote-auth-token-env TANDEM_TOKEN %s; sleep 600",
		dir, home, home, testPassword, bin, addr, strings.Join(args, " "))
	s.tmux("new-session", "-d", "-s", s.name, "-x", "140", "-y", "45", command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	s.waitText("Ask Codex to do anything")
	return s
}

// codexPrompt types a prompt into the Codex composer and sends it once the composer shows it (Enter
// right after the text would be read as part of a paste).
func codexPrompt(s *screen, lines ...string) {
	s.t.Helper()
	for i, l := range lines {
		if i > 0 {
			s.keys("C-j")
		}
		s.typeText(l)
	}
	s.waitText(lines[len(lines)-1])
	s.keys("Enter")
}

// The Codex TUI works a day against tandem: a prompt and its streamed answer; a command approval
// shown in the TUI and in GET /permission, approved in the TUI; another answered over REST while the
// TUI shows it; a refused command that does not run; a file change with its diff; an MCP server's
// form; Esc interrupting a turn; and the thread resumed after tandem restarts. Every message of the
// runs validates against the pinned Codex's schema.
func TestAppServerDrivesTheCodexTUI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary and the Codex TUI")
	}
	bin := codexBinary(t)
	schema := loadCodexSchema(t)
	everything := testenv.ServerEverything(t)
	env, data := appEnv(t)
	project, home := t.TempDir(), t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.UnusedPort(t))
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	args := []string{"--port", "0", "--dir", project, "--data-dir", data, "--listen", "ws://" + addr, "--trace", trace}
	tandem := startAppServer(t, env, args...)
	rest := client.New(tandem.url, "tandem", testPassword)
	if err := rest.AddMCP(t.Context(), "everything", map[string]any{"type": "local", "command": []string{"node", everything, "stdio"}}); err != nil {
		t.Fatal(err)
	}
	sc := codexScreen(t, bin, addr, project, home)
	defer func() { schema.conforms(t, readTrace(t, trace)) }()

	t.Run("a prompt streams its answer into the TUI", func(t *testing.T) {
		s := sc.on(t)
		codexPrompt(s, "hello from codex")
		s.waitText("You said: hello from codex")
	})

	t.Run("a command approval is shown in the TUI and listed by GET /permission, and approved in the TUI", func(t *testing.T) {
		s := sc.on(t)
		codexPrompt(s, "run: touch approved.txt")
		s.waitText("Would you like to run the following command?", "touch approved.txt")
		pendingCommand(t, rest, "touch approved.txt")
		s.keys("y")
		s.waitText("You approved")
		testenv.Eventually(t, "approved.txt is created", func() bool {
			_, err := os.Stat(filepath.Join(project, "approved.txt"))
			return err == nil
		})
		s.waitGone("Would you like to run")
	})

	t.Run("an approval answered over REST closes the TUI's dialog", func(t *testing.T) {
		s := sc.on(t)
		codexPrompt(s, "run: touch by-rest.txt")
		s.waitText("Would you like to run the following command?", "touch by-rest.txt")
		req := pendingCommand(t, rest, "touch by-rest.txt")
		if err := rest.ReplyPermission(t.Context(), req.ID, permission.Reply(permission.KeyOnce), ""); err != nil {
			t.Fatal(err)
		}
		s.waitGone("Would you like to run")
		testenv.Eventually(t, "by-rest.txt is created", func() bool {
			_, err := os.Stat(filepath.Join(project, "by-rest.txt"))
			return err == nil
		})
	})

	t.Run("a command refused in the TUI does not run", func(t *testing.T) {
		s := sc.on(t)
		codexPrompt(s, "run: touch refused.txt")
		s.waitText("Would you like to run the following command?", "touch refused.txt")
		s.keys("d") // No, continue without running it
		s.waitText("The tool failed")
		if _, err := os.Stat(filepath.Join(project, "refused.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused.txt: %v", err)
		}
	})

	t.Run("a file change is shown with its diff and written once approved", func(t *testing.T) {
		s := sc.on(t)
		codexPrompt(s, "write: notes.txt", "a line from the TUI")
		s.waitText("Would you like to make the following edits?", "notes.txt", "+a line from the TUI")
		s.keys("y")
		testenv.Eventually(t, "notes.txt is written", func() bool {
			b, err := os.ReadFile(filepath.Join(project, "notes.txt"))
			return err == nil && string(b) == "a line from the TUI"
		})
		s.waitGone("Would you like to make the following edits?")
	})

	t.Run("an MCP server's form is put to the TUI, and declining it there answers the server", func(t *testing.T) {
		s := sc.on(t)
		codexPrompt(s, "mcp: everything trigger-elicitation-request {}")
		s.waitText("Allow tandem to use everything_trigger-elicitation-request")
		s.keys("Enter") // Allow
		s.waitText("everything needs your approval.", "Please provide inputs")
		testenv.Eventually(t, "GET /mcp/elicitation lists the form", func() bool {
			list, err := rest.Elicitations(t.Context())
			return err == nil && len(list) == 1 && list[0].Server == "everything"
		})
		s.keys("Down", "Enter") // No, but continue without it
		testenv.Eventually(t, "the form is answered", func() bool {
			list, err := rest.Elicitations(t.Context())
			return err == nil && len(list) == 0
		})
		s.waitGone("Please provide inputs")
	})

	t.Run("Esc interrupts a streaming turn", func(t *testing.T) {
		s := sc.on(t)
		codexPrompt(s, "slow: one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen")
		s.waitText("• one")
		s.keys("Escape")
		s.waitText("Conversation interrupted")
		msgs, err := rest.Sessions(t.Context())
		if err != nil || len(msgs) != 1 {
			t.Fatalf("sessions: %v %v", msgs, err)
		}
	})

	t.Run("the thread resumes in a new TUI after tandem restarts", func(t *testing.T) {
		sessions, err := rest.Sessions(t.Context())
		if err != nil || len(sessions) != 1 {
			t.Fatalf("sessions: %v %v", sessions, err)
		}
		threadID := threadIDOf(t, trace, sessions[0].ID)
		_ = exec.Command("tmux", "-S", sc.socket, "kill-server").Run()
		tandem.stop(t)
		tandem = startAppServer(t, env, args...)
		s := codexScreen(t, bin, addr, project, t.TempDir(), "resume", threadID)
		s.waitText("slow: one two", "Conversation interrupted") // the last turns of the history
		codexPrompt(s, "after the restart")
		s.waitText("You said: after the restart")
	})
}

// threadIDOf finds the thread ID tandem gave a session, in a trace.
func threadIDOf(t *testing.T, trace, sessionID string) string {
	t.Helper()
	for _, m := range readTrace(t, trace) {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Thread struct {
					ID    string `json:"id"`
					Extra struct {
						Session string `json:"tandemSessionId"`
					} `json:"extra"`
				} `json:"thread"`
			} `json:"params"`
		}
		if json.Unmarshal(m.Msg, &msg) == nil && msg.Method == "thread/started" && msg.Params.Thread.Extra.Session == sessionID {
			return msg.Params.Thread.ID
		}
	}
	t.Fatalf("no thread/started for session %s in the trace", sessionID)
	return ""
}

// The Codex TUI against tandem driving an OpenAI-compatible model (scripted over loopback): its
// reasoning and answer stream into the TUI, and its tool call is the command approval the TUI
// shows; once approved the command runs and the model gets its output.
func TestAppServerCodexTUIWithAScriptedModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary and the Codex TUI")
	}
	bin := codexBinary(t)
	schema := loadCodexSchema(t)
	srv := providertest.NewOpenAI(t,
		providertest.Turn{Reasoning: []string{"The user wants ", "a file."}, Text: []string{"I will ", "create it."},
			ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"touch scripted.txt","description":"Create scripted.txt"}`}},
			Usage:     providertest.Usage{Input: 120, Output: 30}},
		providertest.Turn{Text: []string{"Created ", "scripted.txt ", "for you."}, Usage: providertest.Usage{Input: 160, Output: 8}},
	)
	env, data := appEnv(t)
	for k, v := range openAIEnv(srv) {
		env = append(env, k+"="+v)
	}
	project := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.UnusedPort(t))
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	tandem := startAppServer(t, env, "--port", "0", "--dir", project, "--data-dir", data, "--listen", "ws://"+addr, "--trace", trace)
	rest := client.New(tandem.url, "tandem", testPassword)
	s := codexScreen(t, bin, addr, project, t.TempDir())
	defer func() { schema.conforms(t, readTrace(t, trace)) }()

	s.waitText("openai/gpt-scripted")
	codexPrompt(s, "make me a file")
	s.waitText("I will create it.", "Would you like to run the following command?", "touch scripted.txt")
	pendingCommand(t, rest, "touch scripted.txt")
	s.keys("y")
	s.waitText("Created scripted.txt for you.")
	if _, err := os.Stat(filepath.Join(project, "scripted.txt")); err != nil {
		t.Error(err)
	}
	reqs := srv.Requests()
	if len(reqs) < 2 || !requestContains(reqs[len(reqs)-1], "call_1") {
		t.Errorf("the model's second request does not carry the command's result: %d requests", len(reqs))
	}
}
