package integration

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func shellBody(command string) string {
	b, _ := json.Marshal(map[string]string{"agent": "build", "command": command})
	return string(b)
}

func TestShellRunsTheUsersCommand(t *testing.T) {
	llm := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"seen it"}})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	events := td.subscribe(t)

	t.Run("the output is stored as the stream announced it, and no permission is asked", func(t *testing.T) {
		mark := events.mark()
		// bash asks by default: had the command gone through the permission gate, this call would wait.
		status, body := td.request(t, http.MethodPost, "/session/"+sid+"/shell", shellBody("echo from-shell; echo to-stderr >&2"))
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		if p := testenv.LoadSchemas(t, "testdata/opencode-command-schemas.json").Problems(t, "session.shell", body); len(p) > 0 {
			t.Fatalf("not OpenCode's answer: %v\n%s", p, body)
		}
		var reply session.WithParts
		if err := json.Unmarshal(body, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Info.Role != session.RoleAssistant || reply.Info.Time.Completed == 0 || reply.Info.Error != nil {
			t.Fatalf("reply info: %+v", reply.Info)
		}
		if len(reply.Parts) != 1 {
			t.Fatalf("reply parts: %+v", reply.Parts)
		}
		p := reply.Parts[0]
		if p.Type != "tool" || p.Tool != "bash" || p.State.Status != "completed" || commandOf(p) != "echo from-shell; echo to-stderr >&2" {
			t.Fatalf("tool part: %+v", p)
		}
		if out := *p.State.Output; !strings.Contains(out, "from-shell\n") || !strings.Contains(out, "to-stderr") {
			t.Fatalf("output %q", out)
		}
		if got := p.State.Metadata["output"]; got != "from-shell\nto-stderr\n" {
			t.Fatalf("metadata.output %q", got)
		}
		events.waitFor(t, "session.idle", idle(sid))
		if len(td.pending(t, sid)) != 0 {
			t.Fatal("a permission request is pending")
		}
		var running, last *session.Part
		for _, e := range events.since(mark) {
			if q, ok := e.part(); ok && q.ID == p.ID {
				if q.State.Status == "running" && running == nil {
					running = &q
				}
				last = &q
			}
		}
		if running == nil || last == nil {
			t.Fatalf("the tool part was not streamed running → completed:\n%s", events.dump(mark))
		}
		msgs := td.messages(t, sid)
		if len(msgs) != 2 {
			t.Fatalf("%d messages, want the user's and the assistant's", len(msgs))
		}
		user, asst := msgs[0], msgs[1]
		if user.Info.Role != session.RoleUser || len(user.Parts) != 1 || !user.Parts[0].Synthetic ||
			*user.Parts[0].Text != "The following tool was executed by the user" {
			t.Fatalf("user message: %+v %+v", user.Info, user.Parts)
		}
		if asst.Info.ID != reply.Info.ID || asst.Info.ParentID != user.Info.ID || len(asst.Parts) != 1 {
			t.Fatalf("assistant message: %+v", asst)
		}
		stored, _ := json.Marshal(asst.Parts[0].State)
		streamed, _ := json.Marshal(last.State)
		if string(stored) != string(streamed) {
			t.Fatalf("stored state %s\nlast streamed %s", stored, streamed)
		}
	})

	t.Run("the next prompt shows the model the command and its output", func(t *testing.T) {
		td.prompt(t, sid, "what did I run?")
		reqs := llm.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model requests", len(reqs))
		}
		for _, want := range []string{"The following tool was executed by the user", "echo from-shell", "from-shell\n"} {
			if !requestContains(reqs[0], want) {
				t.Errorf("the model request lacks %q: %s", want, reqs[0].Body)
			}
		}
	})

	t.Run("bad requests are refused", func(t *testing.T) {
		tests := []struct {
			name, path, body string
			status           int
		}{
			{"an empty command", "/session/" + sid + "/shell", shellBody("  "), http.StatusBadRequest},
			{"an unknown agent", "/session/" + sid + "/shell", `{"agent":"nobody","command":"ls"}`, http.StatusBadRequest},
			{"an unknown session", "/session/ses_ffffffffffffffffffffffffff/shell", shellBody("ls"), http.StatusNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if status, body := td.request(t, http.MethodPost, tt.path, tt.body); status != tt.status {
					t.Fatalf("%d %s, want %d", status, body, tt.status)
				}
			})
		}
	})
}

func TestShellIsBusyAndAbortable(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	pidFile := filepath.Join(t.TempDir(), "pid")

	type result struct {
		status int
		body   []byte
	}
	done := make(chan result, 1)
	go func() {
		status, body, err := td.try(http.MethodPost, "/session/"+sid+"/shell", shellBody(sleepCommand(pidFile)))
		if err != nil {
			body = []byte(err.Error())
		}
		done <- result{status, body}
	}()
	pid := readPID(t, pidFile)
	events.waitFor(t, "the running bash part", toolIn(sid, "running"))

	if st := td.statuses(t)[sid]; st.Type != "busy" {
		t.Fatalf("status while the command runs: %+v", st)
	}
	status, body := td.request(t, http.MethodPost, "/session/"+sid+"/shell", shellBody("echo second"))
	if status != http.StatusConflict || !strings.Contains(string(body), "SessionBusyError") {
		t.Fatalf("a second shell while busy: %d %s", status, body)
	}

	var aborted bool
	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, &aborted)
	r, ok := testenv.Recv(t, done, "the shell request's answer after the abort")
	if !ok {
		return
	}
	if r.status != http.StatusOK {
		t.Fatalf("shell answered %d %s", r.status, r.body)
	}
	var reply session.WithParts
	if err := json.Unmarshal(r.body, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.Info.Error == nil || reply.Info.Error.Name != "MessageAbortedError" {
		t.Fatalf("reply error: %+v", reply.Info.Error)
	}
	if processAlive(pid) {
		t.Fatalf("the command's sleep (pid %d) outlived the abort", pid)
	}
	msgs := td.messages(t, sid)
	parts := toolParts(msgs)
	if len(parts) != 1 || parts[0].State.Status != "error" {
		t.Fatalf("stored tool parts: %+v", parts)
	}
	if _, busy := td.statuses(t)[sid]; busy {
		t.Fatal("the session is still busy after the abort")
	}
}
