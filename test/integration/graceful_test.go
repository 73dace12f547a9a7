//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// stop ends the server as systemctl stop, docker stop and Ctrl+C do (SIGTERM) and waits for it.
func (s *liveServer) stop() {
	s.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			s.t.Fatalf("the server's graceful stop ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		s.t.Fatal("the server did not stop within 30s of SIGTERM")
	}
}

// poll fetches path into out until done says it holds what the test waits for.
func (s *liveServer) poll(what, path string, out any, done func() bool) {
	s.t.Helper()
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(20 * time.Millisecond) {
		s.get(path, out)
		if done() {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not within %s", what, waitLimit)
		}
	}
}

type storedTurn []struct {
	Info struct {
		Role  string `json:"role"`
		Error *struct {
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		} `json:"error"`
	} `json:"info"`
	Parts []struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		Tool  string `json:"tool"`
		State *struct {
			Status string `json:"status"`
			Output string `json:"output"`
			Error  string `json:"error"`
		} `json:"state"`
	} `json:"parts"`
}

// toolState is the state of the session's last tool part, "" when it has none.
func (m storedTurn) toolState() (status, output, errText string) {
	for _, msg := range m {
		for _, p := range msg.Parts {
			if p.Type == "tool" && p.State != nil {
				status, output, errText = p.State.Status, p.State.Output, p.State.Error
			}
		}
	}
	return status, output, errText
}

// answered reports whether the session's last message is the model's answer (text, no error).
func (m storedTurn) answered() bool {
	if len(m) == 0 {
		return false
	}
	last := m[len(m)-1]
	for _, p := range last.Parts {
		if p.Type == "text" && last.Info.Role == "assistant" && last.Info.Error == nil {
			return true
		}
	}
	return false
}

// TestAGracefulRestartKeepsWhatACrashKeeps: SIGTERM (systemctl restart, docker restart, Ctrl+C)
// while a permission and a question wait and a command runs. After the next start both requests
// are listed with the same IDs, answering them finishes their turns, the webhook is told of each
// request once, and the command that shutdown had to stop reads as interrupted.
func TestAGracefulRestartKeepsWhatACrashKeeps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	rcv := newHookReceiver(t)
	// The user's own config (XDG_CONFIG_HOME is the data dir for startBinary).
	if err := os.MkdirAll(filepath.Join(data, "tandem"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tandem", "tandem.json"), []byte(`{"permission": {"bash": {"sleep *": "allow"}}, "notify": [`+webhookTarget("ops", rcv.url, "")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startBinary(t, bin, data, project)
	newSession := func(s *liveServer, body map[string]any) string {
		var sess struct {
			ID string `json:"id"`
		}
		s.post("/session", body, &sess)
		return sess.ID
	}
	prompt := func(s *liveServer, sid, text string) {
		s.post("/session/"+sid+"/prompt_async", map[string]any{"parts": []map[string]string{{"type": "text", "text": text}}}, nil)
	}

	approval := newSession(srv, map[string]any{})
	prompt(srv, approval, "run: echo approved-after-a-graceful-restart")
	asking := newSession(srv, map[string]any{})
	prompt(srv, asking, "ask: Which database? | SQLite | Postgres")
	running := newSession(srv, map[string]any{}) // the user's rules allow sleep
	prompt(srv, running, "run: sleep 30")

	var perms []pendingPermission
	srv.poll("the permission request listed", "/permission", &perms, func() bool { return len(perms) == 1 })
	var questions []struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
	}
	srv.poll("the question listed", "/question", &questions, func() bool { return len(questions) == 1 })
	var msgs storedTurn
	srv.poll("the command running", "/session/"+running+"/message", &msgs, func() bool {
		status, _, _ := msgs.toolState()
		return status == "running"
	})
	asked := map[string]bool{}
	for range 2 {
		h := rcv.next(t, "an asked POST")
		if h.Event != "asked" {
			t.Fatalf("before the restart the webhook got %s", h.body)
		}
		asked[h.RequestID] = true
	}
	if !asked[perms[0].ID] || !asked[questions[0].ID] {
		t.Fatalf("the webhook was told of %v, want %s and %s", asked, perms[0].ID, questions[0].ID)
	}

	srv.stop()
	restarted := startBinary(t, bin, data, project)

	t.Run("the permission and the question are listed with the same IDs", func(t *testing.T) {
		var after []pendingPermission
		restarted.get("/permission", &after)
		if len(after) != 1 || after[0].ID != perms[0].ID || after[0].SessionID != approval {
			t.Errorf("GET /permission after the restart: %+v, want %s of %s", after, perms[0].ID, approval)
		}
		var qs []struct {
			ID string `json:"id"`
		}
		restarted.get("/question", &qs)
		if len(qs) != 1 || qs[0].ID != questions[0].ID {
			t.Errorf("GET /question after the restart: %+v, want %s", qs, questions[0].ID)
		}
	})

	t.Run("a client that comes back is told to reload", func(t *testing.T) {
		stream := restarted.events()
		for _, want := range []string{"server.connected", "server.instance.disposed"} {
			select {
			case ev := <-stream:
				if ev.Type != want {
					t.Fatalf("the restarted server's stream sent %s, want %s", ev.Type, want)
				}
			case <-time.After(waitLimit):
				t.Fatalf("no %s", want)
			}
		}
	})

	t.Run("the command that shutdown stopped reads as interrupted", func(t *testing.T) {
		var m storedTurn
		restarted.get("/session/"+running+"/message", &m)
		status, _, errText := m.toolState()
		if status != "error" || !strings.Contains(errText, "interrupted: the server stopped while this tool was running") {
			t.Fatalf("the stopped command's part is %s %q, want an interrupted error", status, errText)
		}
		last := m[len(m)-1].Info
		if last.Error == nil || !strings.Contains(last.Error.Data.Message, "interrupted") {
			t.Errorf("the stopped turn's message ends with %+v, want interrupted", last.Error)
		}
	})

	t.Run("approving the permission finishes its turn", func(t *testing.T) {
		var ok bool
		restarted.post("/permission/"+perms[0].ID+"/reply", map[string]string{"reply": "once"}, &ok)
		var m storedTurn
		restarted.poll("the approved command's turn to end", "/session/"+approval+"/message", &m, func() bool {
			status, _, _ := m.toolState()
			return status == "completed" && m.answered()
		})
		if _, out, _ := m.toolState(); !strings.Contains(out, "approved-after-a-graceful-restart") {
			t.Errorf("the approved command's output is %q", out)
		}
	})

	t.Run("answering the question finishes its turn", func(t *testing.T) {
		var ok bool
		restarted.post("/question/"+questions[0].ID+"/reply", map[string]any{"answers": [][]string{{"Postgres"}}}, &ok)
		var m storedTurn
		restarted.poll("the answered question's turn to end", "/session/"+asking+"/message", &m, func() bool {
			status, _, _ := m.toolState()
			return status == "completed" && m.answered()
		})
		if _, out, _ := m.toolState(); !strings.Contains(out, "Postgres") {
			t.Errorf("the question tool's output is %q", out)
		}
	})

	t.Run("the webhook was told of each request once, then of its answer", func(t *testing.T) {
		resolved := map[string]bool{}
		for range 2 {
			h := rcv.next(t, "a resolved POST")
			if h.Event != "resolved" {
				t.Fatalf("after the restart the webhook got %s, want only resolutions", h.body)
			}
			resolved[h.RequestID] = true
		}
		if !resolved[perms[0].ID] || !resolved[questions[0].ID] {
			t.Errorf("resolutions for %v", resolved)
		}
		rcv.none(t)
	})
}

// TestAnElicitationWaitingAtAGracefulStopIsAnsweredAfterTheStart: server-everything asks for a form
// during a tool call when tandem is stopped with SIGTERM. After the start the form is listed with
// the same ID; the answer given then reaches the tool, which runs again on the new server process,
// and the turn ends with the answer in the tool's result.
func TestAnElicitationWaitingAtAGracefulStopIsAnsweredAfterTheStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	entry := testenv.ServerEverything(t)
	data, project := t.TempDir(), t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcp": map[string]any{
		"everything": map[string]any{"type": "local", "command": []string{"node", entry, "stdio"}},
	}})
	if err := os.MkdirAll(filepath.Join(data, "tandem"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tandem", "tandem.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	connected := func(s *liveServer) {
		var status map[string]mcpclient.Status
		s.poll("server-everything connected", "/mcp", &status, func() bool { return status["everything"].Status == "connected" })
	}
	srv := startBinary(t, bin, data, project)
	connected(srv)
	var sess struct {
		ID string `json:"id"`
	}
	srv.post("/session", map[string]any{}, &sess)
	srv.post("/session/"+sess.ID+"/prompt_async", map[string]any{"parts": []map[string]string{{"type": "text", "text": "mcp: everything trigger-elicitation-request {}"}}}, nil)
	var perms []pendingPermission
	srv.poll("the MCP tool asks permission", "/permission", &perms, func() bool { return len(perms) == 1 })
	var ok bool
	srv.post("/permission/"+perms[0].ID+"/reply", map[string]string{"reply": "once"}, &ok)
	var forms []mcpclient.Elicitation
	srv.poll("the form is pending", "/mcp/elicitation", &forms, func() bool { return len(forms) == 1 })

	srv.stop()
	restarted := startBinary(t, bin, data, project)

	var after []mcpclient.Elicitation
	restarted.get("/mcp/elicitation", &after)
	if len(after) != 1 || after[0].ID != forms[0].ID || after[0].SessionID != sess.ID || after[0].RequestedSchema == nil {
		t.Fatalf("GET /mcp/elicitation after the restart: %+v, want %s of %s with its form", after, forms[0].ID, sess.ID)
	}
	restarted.post("/mcp/elicitation/"+forms[0].ID+"/reply", map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace"}}, nil)

	var m storedTurn
	restarted.poll("the resumed tool call to complete", "/session/"+sess.ID+"/message", &m, func() bool {
		status, _, _ := m.toolState()
		return status == "completed" && m.answered()
	})
	if _, out, _ := m.toolState(); !strings.Contains(out, "Ada Lovelace") {
		t.Errorf("the tool's result is %q, want the answer given after the restart", out)
	}
	var still []pendingPermission
	restarted.get("/permission", &still)
	if len(still) != 0 {
		t.Errorf("the resumed call asked permission again: %+v", still)
	}
	restarted.get("/mcp/elicitation", &after)
	if len(after) != 0 {
		t.Errorf("still pending after the answer: %+v", after)
	}
}
