package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// wire is one scripted provider protocol the agent tests run against.
type wire struct {
	name  string
	start func(testing.TB, ...providertest.Turn) *providertest.Server
	env   func(*providertest.Server) map[string]string
}

var wires = []wire{
	{"OpenAI-compatible", providertest.NewOpenAI, openAIEnv},
	{"Anthropic", providertest.NewAnthropic, anthropicEnv},
}

func TestPlainTextStreamsAsDeltas(t *testing.T) {
	for _, w := range wires {
		t.Run("a turn against the "+w.name+" server streams its text as message.part.delta", func(t *testing.T) {
			llm := w.start(t, providertest.Turn{Text: []string{"Hel", "lo, ", "wor", "ld!"}, Usage: providertest.Usage{Input: 12, Output: 4}})
			td := startTandem(t, setup{env: w.env(llm)})
			sid := td.newSession(t)
			events := td.subscribe(t)

			reply := td.prompt(t, sid, "Say hello")

			if got := textOf(reply); got != "Hello, world!" {
				t.Fatalf("reply text %q, want %q", got, "Hello, world!")
			}
			if reply.Info.Finish != "stop" || reply.Info.Time.Completed == 0 || reply.Info.Error != nil {
				t.Fatalf("reply info: finish %q, completed %d, error %+v", reply.Info.Finish, reply.Info.Time.Completed, reply.Info.Error)
			}
			if reply.Info.Tokens == nil || reply.Info.Tokens.Output != 4 {
				t.Fatalf("reply tokens %+v, want output 4", reply.Info.Tokens)
			}
			var deltas []string
			for {
				e := events.waitFor(t, "a delta or the end of the turn", func(e event) bool {
					return (e.Type == "message.part.delta" || e.Type == "session.idle") && e.sessionID() == sid
				})
				if e.Type == "session.idle" {
					break
				}
				var d struct{ Field, Delta string }
				if err := json.Unmarshal(e.Properties, &d); err != nil || d.Field != "text" {
					t.Fatalf("delta %s: field %q, err %v", e.Properties, d.Field, err)
				}
				deltas = append(deltas, d.Delta)
			}
			// The first chunk is announced at once; later ones may be joined (at most one
			// announcement per part every 40 ms).
			if len(deltas) == 0 || deltas[0] != "Hel" || strings.Join(deltas, "") != "Hello, world!" {
				t.Fatalf("deltas %q, want \"Hel\" first and \"Hello, world!\" in all", deltas)
			}
			reqs := llm.Requests()
			if len(reqs) != 1 || !requestContains(reqs[0], "Say hello") {
				t.Fatalf("the scripted server got %d requests; the first should carry the prompt", len(reqs))
			}
		})
	}
}

func TestSeveralToolCallsInOneStep(t *testing.T) {
	for _, w := range wires {
		t.Run("the "+w.name+" model's two calls in one step both run and both results go back", func(t *testing.T) {
			llm := w.start(t,
				providertest.Turn{ToolCalls: []providertest.ToolCall{
					{ID: "call_one", Name: "bash", Arguments: `{"command":"echo first-output","description":"say first"}`},
					{ID: "call_two", Name: "read", Arguments: `{"filePath":"notes.txt"}`},
				}},
				providertest.Turn{Text: []string{"Both done."}},
			)
			td := startTandem(t, setup{env: w.env(llm), config: `{"permission": {"bash": "allow", "edit": "allow"}}`})
			if err := os.WriteFile(filepath.Join(td.project, "notes.txt"), []byte("second-output\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			sid := td.newSession(t)

			reply := td.prompt(t, sid, "Run and read")

			if textOf(reply) != "Both done." {
				t.Fatalf("final reply %q", textOf(reply))
			}
			tools := toolParts(td.messages(t, sid))
			if len(tools) != 2 {
				t.Fatalf("%d tool parts, want 2", len(tools))
			}
			for i, want := range []struct{ call, tool, output string }{{"call_one", "bash", "first-output"}, {"call_two", "read", "second-output"}} {
				p := tools[i]
				if p.CallID != want.call || p.Tool != want.tool || p.State.Status != "completed" || !strings.Contains(*p.State.Output, want.output) {
					t.Fatalf("tool part %d: call %s tool %s status %s output %v; want %+v", i, p.CallID, p.Tool, p.State.Status, p.State.Output, want)
				}
			}
			reqs := llm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			for _, s := range []string{"call_one", "call_two", "first-output", "second-output"} {
				if !requestContains(reqs[1], s) {
					t.Errorf("the second model request lacks %q: %s", s, reqs[1].Body)
				}
			}
		})
	}
}

func TestToolErrorIsFedBackToTheModel(t *testing.T) {
	for _, w := range wires {
		t.Run("a failing read reaches the "+w.name+" model as a tool error and the turn goes on", func(t *testing.T) {
			llm := w.start(t,
				providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_missing", Name: "read", Arguments: `{"filePath":"no-such-file.txt"}`}}},
				providertest.Turn{Text: []string{"That file does not exist."}},
			)
			td := startTandem(t, setup{env: w.env(llm)})
			sid := td.newSession(t)

			reply := td.prompt(t, sid, "Read it")

			if textOf(reply) != "That file does not exist." {
				t.Fatalf("final reply %q", textOf(reply))
			}
			tools := toolParts(td.messages(t, sid))
			if len(tools) != 1 || tools[0].State.Status != "error" || tools[0].State.Error == "" {
				t.Fatalf("tool parts %+v, want one error", tools)
			}
			reqs := llm.Requests()
			if len(reqs) != 2 || !requestContains(reqs[1], tools[0].State.Error) {
				t.Fatalf("the second request should carry the tool error %q; got %d requests", tools[0].State.Error, len(reqs))
			}
			if w.name == "Anthropic" && !strings.Contains(string(reqs[1].Body), `"is_error":true`) {
				t.Errorf("the Anthropic tool_result is not marked is_error: %s", reqs[1].Body)
			}
		})
	}
}

func TestRateLimitIsRetried(t *testing.T) {
	for _, w := range wires {
		t.Run("a 429 from the "+w.name+" server shows a retry status, then the turn succeeds", func(t *testing.T) {
			llm := w.start(t,
				providertest.Turn{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0.05"}},
				providertest.Turn{Text: []string{"after the wait"}},
			)
			td := startTandem(t, setup{env: w.env(llm)})
			sid := td.newSession(t)
			events := td.subscribe(t)

			reply := td.prompt(t, sid, "Hello")

			retry := events.waitFor(t, "session.status retry", func(e event) bool {
				return e.Type == "session.status" && e.sessionID() == sid && e.status().Type == "retry"
			})
			st := retry.status()
			if st.Attempt != 1 || st.Message == "" || st.Next == 0 {
				t.Fatalf("retry status %+v: want attempt 1 with a message and a next time", st)
			}
			events.waitFor(t, "busy again after the retry", func(e event) bool {
				return e.Type == "session.status" && e.sessionID() == sid && e.status().Type == "busy"
			})
			events.waitFor(t, "the text after the retry", ofType("message.part.delta", sid))
			events.waitFor(t, "session.idle", idle(sid))
			if textOf(reply) != "after the wait" || reply.Info.Error != nil {
				t.Fatalf("reply %q error %+v", textOf(reply), reply.Info.Error)
			}
			if n := len(llm.Requests()); n != 2 {
				t.Fatalf("%d model requests, want 2", n)
			}
		})
	}
}

func TestHangingProviderFailsTheTurn(t *testing.T) {
	for _, w := range wires {
		t.Run("a "+w.name+" server that goes silent mid-stream fails the turn with the timeout named", func(t *testing.T) {
			llm := w.start(t, providertest.Turn{Text: []string{"Let me think"}, Hang: true})
			provider := "openai"
			if w.name == "Anthropic" {
				provider = "anthropic"
			}
			td := startTandem(t, setup{env: w.env(llm), config: `{"provider": {"` + provider + `": {"options": {"timeout": 300}}}}`})
			sid := td.newSession(t)
			events := td.subscribe(t)

			reply := td.prompt(t, sid, "Think hard")

			if reply.Info.Error == nil {
				t.Fatalf("the turn succeeded: %+v", reply.Info)
			}
			msg, _ := reply.Info.Error.Data["message"].(string)
			if !strings.Contains(msg, "no response from the provider for 300ms") || !strings.Contains(msg, "options.timeout") {
				t.Fatalf("error %s %q does not say which timeout fired", reply.Info.Error.Name, msg)
			}
			if textOf(reply) != "Let me think" {
				t.Fatalf("the streamed text was lost: %q", textOf(reply))
			}
			events.waitFor(t, "session.error", ofType("session.error", sid))
			events.waitFor(t, "session.idle", idle(sid))
			if st := td.statuses(t); len(st) != 0 {
				t.Fatalf("statuses after the failure: %+v", st)
			}
		})
	}
}

func TestAbortMidStream(t *testing.T) {
	llm := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"partial "}, Hang: true})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "Write a long essay")
	events.waitFor(t, "the first delta", ofType("message.part.delta", sid))

	var aborted bool
	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, &aborted)

	if !aborted {
		t.Fatal("abort answered false")
	}
	errEvent := events.waitFor(t, "session.error", ofType("session.error", sid))
	if !strings.Contains(string(errEvent.Properties), "MessageAbortedError") {
		t.Fatalf("session.error %s", errEvent.Properties)
	}
	events.waitFor(t, "session.idle", idle(sid))
	if st := td.statuses(t); len(st) != 0 {
		t.Fatalf("statuses after abort: %+v", st)
	}
	msgs := td.messages(t, sid)
	last := msgs[len(msgs)-1]
	if last.Info.Error == nil || last.Info.Error.Name != "MessageAbortedError" || last.Info.Time.Completed == 0 {
		t.Fatalf("the aborted message: %+v", last.Info)
	}
	if textOf(last) != "partial " {
		t.Fatalf("the text streamed before the abort was not kept: %q", textOf(last))
	}
}

func TestAbortMidBash(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow", "edit": "allow"}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)
	pidFile := filepath.Join(td.project, "sleep.pid")
	td.promptAsync(t, sid, "run: "+sleepCommand(pidFile))
	events.waitFor(t, "the bash part running", toolIn(sid, "running"))
	pid := readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, nil)

	failed := events.waitFor(t, "the bash part failing", toolIn(sid, "error"))
	if p, _ := failed.part(); !strings.Contains(p.State.Error, "aborted") {
		t.Fatalf("tool error %q does not say it was aborted", p.State.Error)
	}
	events.waitFor(t, "session.idle", idle(sid))
	if processAlive(pid) {
		t.Fatalf("sleep (pid %d) survived the abort", pid)
	}
	if st := td.statuses(t); len(st) != 0 {
		t.Fatalf("statuses after abort: %+v", st)
	}
	tools := toolParts(td.messages(t, sid))
	if len(tools) != 1 || tools[0].State.Status != "error" || tools[0].State.Time == nil || tools[0].State.Time.End == 0 {
		t.Fatalf("stored tool part: %+v", tools)
	}
}

func TestPromptWhileBusyIsQueued(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "slow: one two three")
	events.waitFor(t, "the first slow word", ofType("message.part.delta", sid))

	second := td.prompt(t, sid, "and then this")

	if got := textOf(second); got != "You said: and then this" {
		t.Fatalf("the queued prompt's reply: %q", got)
	}
	msgs := td.messages(t, sid)
	var roles, texts []string
	for _, m := range msgs {
		roles = append(roles, string(m.Info.Role))
		texts = append(texts, textOf(m))
	}
	wantRoles := []string{"user", "assistant", "user", "assistant"}
	wantTexts := []string{"slow: one two three", "one two three", "and then this", "You said: and then this"}
	if strings.Join(roles, ",") != strings.Join(wantRoles, ",") || strings.Join(texts, "|") != strings.Join(wantTexts, "|") {
		t.Fatalf("conversation:\n roles %q\n texts %q\nwant\n roles %q\n texts %q", roles, texts, wantRoles, wantTexts)
	}
	if msgs[1].Info.ParentID != msgs[0].Info.ID || msgs[3].Info.ParentID != msgs[2].Info.ID {
		t.Fatal("each reply must answer its own user message")
	}
	if msgs[1].Info.Time.Completed > msgs[3].Info.Time.Created {
		t.Fatal("the queued turn started before the first finished")
	}
}

func TestQueuedPromptsAnswerTheirOwnMessages(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow", "edit": "allow"}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "slow: busy for a moment")
	events.waitFor(t, "the first slow word", ofType("message.part.delta", sid))

	td.promptAsync(t, sid, "run: echo queued-1")
	td.promptAsync(t, sid, "run: echo queued-2")

	for range 3 {
		events.waitFor(t, "the end of a turn", idle(sid))
	}
	var ran []string
	for _, p := range toolParts(td.messages(t, sid)) {
		ran = append(ran, commandOf(p))
	}
	if strings.Join(ran, ",") != "echo queued-1,echo queued-2" {
		t.Fatalf("the queued turns ran %q; each turn must see the conversation up to its own message", ran)
	}
}

// TestRestartMidTurn kills the server process (SIGKILL: no shutdown code runs) in the middle of a
// turn and starts it again on the same data directory.
func TestRestartMidTurn(t *testing.T) {
	cases := []struct {
		name   string
		config string
		await  func(t *testing.T, td *tandem, events *stream, sid string)
	}{
		{"a bash command running when the server dies is marked interrupted", `{"permission": {"bash": "allow", "edit": "allow"}}`,
			func(t *testing.T, td *tandem, events *stream, sid string) {
				pid := readPID(t, filepath.Join(td.project, "sleep.pid"))
				// The orphaned command outlives the killed server; end it with the test.
				t.Cleanup(func() {
					if pgid, err := syscall.Getpgid(pid); err == nil {
						_ = syscall.Kill(-pgid, syscall.SIGKILL)
					}
				})
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			td := newTandem(t, setup{config: c.config})
			crashed := td.startChild(t)
			sid := td.newSession(t)
			events := td.subscribe(t)
			td.promptAsync(t, sid, "run: "+sleepCommand(filepath.Join(td.project, "sleep.pid")))
			events.waitFor(t, "the bash part running", toolIn(sid, "running"))
			c.await(t, td, events, sid)

			crashed.kill()
			events.close()
			td.client.CloseIdleConnections()
			td.start(t)
			t.Cleanup(func() { td.stop(t) })

			msgs := td.messages(t, sid)
			if len(msgs) != 2 {
				t.Fatalf("%d messages after the restart, want the user message and the interrupted reply", len(msgs))
			}
			reply := msgs[1].Info
			if reply.Error == nil || reply.Time.Completed == 0 || !strings.Contains(reply.Error.Data["message"].(string), "interrupted") {
				t.Fatalf("the unfinished reply: error %+v, completed %d", reply.Error, reply.Time.Completed)
			}
			tools := toolParts(msgs)
			if len(tools) != 1 || tools[0].State.Status != "error" || !strings.Contains(tools[0].State.Error, "interrupted") {
				t.Fatalf("tool parts after the restart: %+v", tools)
			}
			if commandOf(tools[0]) == "" {
				t.Fatal("the interrupted part lost its input")
			}
			if p := td.pending(t, ""); len(p) != 0 {
				t.Fatalf("pending requests after the restart: %+v", p)
			}
			if st := td.statuses(t); len(st) != 0 {
				t.Fatalf("statuses after the restart: %+v", st)
			}
			// The session works again.
			if got := textOf(td.prompt(t, sid, "still there?")); got != "You said: still there?" {
				t.Fatalf("a prompt after the restart: %q", got)
			}
		})
	}
}

func TestRejectingAnApprovalThatSurvivedACrashResumesTheTurnLikeALiveReject(t *testing.T) {
	td := newTandem(t, setup{})
	crashed := td.startChild(t)
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "run: echo never-run > "+filepath.Join(td.project, "ran.txt"))
	events.waitFor(t, "permission.asked", ofType("permission.asked", sid))
	asked := td.pending(t, sid)

	crashed.kill()
	events.close()
	td.client.CloseIdleConnections()
	td.start(t)
	t.Cleanup(func() { td.stop(t) })

	after := td.pending(t, sid)
	if len(asked) != 1 || len(after) != 1 || after[0].ID != asked[0].ID {
		t.Fatalf("pending before the crash %+v, after the restart %+v: want the same request", asked, after)
	}
	if st := td.statuses(t); st[sid].Type != "busy" {
		t.Fatalf("the session waiting for approval is %+v after the restart, want busy", st)
	}
	events = td.subscribe(t)
	td.reply(t, after[0].ID, "reject", "not now")
	events.waitFor(t, "session.idle", ofType("session.idle", sid))

	if _, err := os.Stat(filepath.Join(td.project, "ran.txt")); !os.IsNotExist(err) {
		t.Fatalf("the rejected command ran: %v", err)
	}
	msgs := td.messages(t, sid)
	tools := toolParts(msgs)
	if len(tools) != 1 || tools[0].State.Status != "error" || !strings.Contains(tools[0].State.Error, "not now") {
		t.Fatalf("tool parts after the reject: %+v", tools)
	}
	last := msgs[len(msgs)-1]
	if last.Info.Error != nil || !strings.Contains(textOf(last), "not now") {
		t.Fatalf("the turn after the reject ended with %+v %q, want the model told of the refusal", last.Info.Error, textOf(last))
	}
	if p := td.pending(t, ""); len(p) != 0 {
		t.Fatalf("pending requests after the reply: %+v", p)
	}
}

func TestAQuestionWaitingAtACrashIsStillAskedAfterRestartAndItsAnswerEndsTheTurn(t *testing.T) {
	td := newTandem(t, setup{})
	crashed := td.startChild(t)
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "ask: Which database? | Postgres | SQLite")
	events.waitFor(t, "question.asked", ofType("question.asked", sid))
	var asked []struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
	}
	td.call(t, http.MethodGet, "/question", "", http.StatusOK, &asked)

	crashed.kill()
	events.close()
	td.client.CloseIdleConnections()
	td.start(t)
	t.Cleanup(func() { td.stop(t) })

	var after []struct {
		ID string `json:"id"`
	}
	td.call(t, http.MethodGet, "/question", "", http.StatusOK, &after)
	if len(asked) != 1 || len(after) != 1 || after[0].ID != asked[0].ID {
		t.Fatalf("questions before the crash %+v, after the restart %+v: want the same one", asked, after)
	}
	events = td.subscribe(t)
	td.call(t, http.MethodPost, "/question/"+after[0].ID+"/reply", `{"answers":[["SQLite"]]}`, http.StatusOK, nil)
	events.waitFor(t, "session.idle", ofType("session.idle", sid))

	msgs := td.messages(t, sid)
	last := msgs[len(msgs)-1]
	if last.Info.Error != nil || !strings.Contains(textOf(last), "SQLite") {
		t.Fatalf("the resumed turn ended with %+v %q, want the model's answer naming the choice", last.Info.Error, textOf(last))
	}
	td.call(t, http.MethodGet, "/question", "", http.StatusOK, &after)
	if len(after) != 0 {
		t.Fatalf("questions after the answer: %+v", after)
	}
}

func TestGracefulCloseMidBash(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow", "edit": "allow"}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)
	pidFile := filepath.Join(td.project, "sleep.pid")
	td.promptAsync(t, sid, "run: "+sleepCommand(pidFile))
	events.waitFor(t, "the bash part running", toolIn(sid, "running"))
	pid := readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	events.close()

	td.restart(t)

	if processAlive(pid) {
		t.Fatalf("sleep (pid %d) survived the shutdown", pid)
	}
	msgs := td.messages(t, sid)
	tools := toolParts(msgs)
	if len(tools) != 1 || tools[0].State.Status != "error" {
		t.Fatalf("tool parts after a graceful restart: %+v", tools)
	}
	if last := msgs[len(msgs)-1].Info; last.Error == nil || last.Time.Completed == 0 {
		t.Fatalf("the reply cut by the shutdown: %+v", last)
	}
}

// expectedPlainPrompt is NOTES §3.3: the events of one plain prompt, in order, with a check of
// each one's shape.
var expectedPlainPrompt = []struct {
	typ  string
	what string
	ok   func(event) bool
}{
	{"session.updated", "the title from the prompt", func(e event) bool { return strings.Contains(string(e.Properties), `"title":"Say hello"`) }},
	{"message.updated", "the user message", roleIs("user", false)},
	{"message.part.updated", "the user's text", partIs("text", func(p session.Part) bool { return *p.Text == "Say hello" })},
	{"session.updated", "the session touched", anyEvent},
	{"session.status", "busy", statusIs("busy")},
	{"message.updated", "the assistant message, not completed", roleIs("assistant", false)},
	{"session.updated", "the session touched", anyEvent},
	{"session.diff", "an empty diff", func(e event) bool { return strings.Contains(string(e.Properties), `"diff":[]`) }},
	{"message.updated", "the user message with a summary", func(e event) bool { m, _ := e.message(); return m.Role == "user" && m.Summary != nil }},
	{"session.status", "busy", statusIs("busy")},
	{"message.part.updated", "step-start", partIs("step-start", nil)},
	{"message.part.updated", "an empty text part", partIs("text", func(p session.Part) bool { return *p.Text == "" && p.Time.End == 0 })},
	// The five chunks arrive as one or more deltas (streaming is announced at a bounded rate);
	// joinDeltas folds consecutive ones into one.
	{"message.part.delta", "the streamed text", deltaIs("Hello there, friend")},
	{"message.part.updated", "the full text, ended", partIs("text", func(p session.Part) bool { return *p.Text == "Hello there, friend" && p.Time.End > 0 })},
	{"message.part.updated", "step-finish with tokens", partIs("step-finish", func(p session.Part) bool { return p.Reason == "stop" && p.Tokens != nil && p.Tokens.Output == 5 })},
	{"message.updated", "the assistant message finished", func(e event) bool {
		m, _ := e.message()
		return m.Role == "assistant" && m.Finish == "stop" && m.Tokens.Output == 5 && m.Time.Completed == 0
	}},
	{"message.updated", "the assistant message completed", roleIs("assistant", true)},
	{"session.status", "busy", statusIs("busy")},
	{"session.status", "idle", statusIs("idle")},
	{"session.idle", "idle", anyEvent},
	{"session.updated", "the session with its summary", anyEvent},
	{"session.diff", "the turn's diff", anyEvent},
	{"message.updated", "the user message with summary.diffs", func(e event) bool {
		m, _ := e.message()
		return m.Role == "user" && m.Summary != nil && m.Summary.Diffs != nil
	}},
}

func anyEvent(event) bool { return true }

func roleIs(role string, completed bool) func(event) bool {
	return func(e event) bool {
		m, ok := e.message()
		return ok && string(m.Role) == role && (m.Time.Completed != 0) == completed
	}
}

func partIs(typ string, ok func(session.Part) bool) func(event) bool {
	return func(e event) bool {
		p, isPart := e.part()
		return isPart && p.Type == typ && (ok == nil || ok(p))
	}
}

func statusIs(typ string) func(event) bool {
	return func(e event) bool { return e.status().Type == typ }
}

func deltaIs(text string) func(event) bool {
	return func(e event) bool {
		var d struct{ Field, Delta, PartID, MessageID string }
		return json.Unmarshal(e.Properties, &d) == nil && d.Field == "text" && d.Delta == text && d.PartID != "" && d.MessageID != ""
	}
}

// joinDeltas replaces each run of message.part.delta events of one part by one carrying their text.
func joinDeltas(t *testing.T, evs []event) []event {
	t.Helper()
	type delta struct {
		SessionID string `json:"sessionID"`
		MessageID string `json:"messageID"`
		PartID    string `json:"partID"`
		Field     string `json:"field"`
		Delta     string `json:"delta"`
	}
	var out []event
	var run *delta
	for _, e := range evs {
		if e.Type != "message.part.delta" {
			run = nil
			out = append(out, e)
			continue
		}
		var d delta
		if err := json.Unmarshal(e.Properties, &d); err != nil {
			t.Fatal(err)
		}
		if run != nil && run.PartID == d.PartID {
			run.Delta += d.Delta
		} else {
			run = &d
			out = append(out, e)
		}
		props, _ := json.Marshal(run)
		out[len(out)-1].Properties = props
	}
	return out
}

func TestEventSequenceOfOnePlainPrompt(t *testing.T) {
	llm := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"Hel", "lo ", "the", "re, ", "friend"}, Usage: providertest.Usage{Input: 10, Output: 5}})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	events := td.subscribe(t)
	from := events.mark()

	td.prompt(t, sid, "Say hello")
	events.waitFor(t, "session.idle", idle(sid))
	events.waitFor(t, "the turn's diff", ofType("session.diff", sid))
	events.waitFor(t, "the last user message update", func(e event) bool {
		m, ok := e.message()
		return ok && m.Role == "user" && e.sessionID() == sid
	})

	var all []event
	for _, e := range events.since(from) {
		if !strings.HasPrefix(e.Type, "plugin.") && e.Type != "server.heartbeat" {
			all = append(all, e)
		}
	}
	// The title the model writes (a call of its own, beside the turn's) is announced while the turn
	// runs, at no fixed place; once it is stored, the turn's own session.updated events carry it too.
	// So exactly one of the session.updated events carrying that title is the title's own: the
	// sequence matches when that one is left out.
	var mismatch error
	candidates := 0
	for i, e := range all {
		if e.Type != "session.updated" || !strings.Contains(string(e.Properties), `"title":"`+providertest.Title+`"`) {
			continue
		}
		candidates++
		rest := append(slices.Clone(all[:i]), all[i+1:]...)
		err := matchPlainPrompt(t, joinDeltas(t, rest), sid)
		if err == nil {
			return
		}
		if mismatch == nil {
			mismatch = err
		}
	}
	if candidates == 0 {
		t.Fatalf("no session.updated with the title the model wrote:\n%s", events.dump(from))
	}
	t.Fatalf("%v\nall events:\n%s", mismatch, events.dump(from))
}

// matchPlainPrompt says how got differs from expectedPlainPrompt, or nil when it is that sequence.
func matchPlainPrompt(t *testing.T, got []event, sid string) error {
	t.Helper()
	for i, want := range expectedPlainPrompt {
		if i >= len(got) {
			return fmt.Errorf("only %d events; missing from #%d %s (%s)", len(got), i, want.typ, want.what)
		}
		if got[i].Type != want.typ || !want.ok(got[i]) {
			return fmt.Errorf("event #%d is %s %s; want %s (%s)", i, got[i].Type, got[i].Properties, want.typ, want.what)
		}
		if sidOf := got[i].sessionID(); sidOf != sid {
			return fmt.Errorf("event #%d %s carries session %q", i, got[i].Type, sidOf)
		}
	}
	if len(got) != len(expectedPlainPrompt) {
		return fmt.Errorf("%d events, want %d", len(got), len(expectedPlainPrompt))
	}
	return nil
}

func TestDemoModelRunsEchoAfterApproval(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)

	td.promptAsync(t, sid, "run: echo hi")

	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
	if asked.Permission != "bash" || strings.Join(asked.Patterns, ",") != "echo hi" || strings.Join(asked.Always, ",") != "echo *" ||
		asked.Metadata["command"] != "echo hi" || asked.Tool == nil || asked.Tool.CallID == "" {
		t.Fatalf("permission.asked %+v", asked)
	}
	listed := td.pending(t, sid)
	if len(listed) != 1 || listed[0].ID != asked.ID {
		t.Fatalf("GET /permission: %+v", listed)
	}
	td.reply(t, asked.ID, "once", "")
	if id, reply := events.waitFor(t, "permission.replied", ofType("permission.replied", sid)).replied(); id != asked.ID || reply != "once" {
		t.Fatalf("permission.replied %s %s", id, reply)
	}
	done, _ := events.waitFor(t, "the tool part completed", toolIn(sid, "completed")).part()
	if *done.State.Output != "hi\n" || done.CallID != asked.Tool.CallID {
		t.Fatalf("completed part: output %q call %s", *done.State.Output, done.CallID)
	}
	events.waitFor(t, "session.idle", idle(sid))
	msgs := td.messages(t, sid)
	if got := textOf(msgs[len(msgs)-1]); !strings.Contains(got, "`echo hi` output:\nhi") {
		t.Fatalf("the demo model's report: %q", got)
	}
}

func TestAbortDropsQueuedTurns(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "slow: a long answer that will be cut")
	events.waitFor(t, "the first slow word", ofType("message.part.delta", sid))
	td.promptAsync(t, sid, "queued behind it")

	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, nil)

	events.waitFor(t, "session.idle", idle(sid))
	msgs := td.messages(t, sid)
	if len(msgs) != 4 {
		t.Fatalf("%d messages, want both prompts and an aborted reply to each", len(msgs))
	}
	for _, i := range []int{1, 3} {
		m := msgs[i].Info
		if m.Role != "assistant" || m.ParentID != msgs[i-1].Info.ID || m.Error == nil || m.Error.Name != "MessageAbortedError" {
			t.Fatalf("reply %d: %+v", i, m)
		}
	}
	if got := textOf(td.prompt(t, sid, "after the abort")); got != "You said: after the abort" {
		t.Fatalf("the session after an abort: %q", got)
	}
}

func TestWriteShowsInTheSessionDiff(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"edit": "allow"}}`})
	sid := td.newSession(t)

	reply := td.prompt(t, sid, "write: notes/todo.txt\nbuy milk\n")

	if tools := toolParts(td.messages(t, sid)); len(tools) != 1 || tools[0].State.Status != "completed" {
		t.Fatalf("write: %+v (reply %q)", tools, textOf(reply))
	}
	var diff []session.FileDiff
	td.call(t, http.MethodGet, "/session/"+sid+"/diff", "", http.StatusOK, &diff)
	if len(diff) != 1 || diff[0].File != "notes/todo.txt" || diff[0].Status != "added" || diff[0].Additions != 1 || diff[0].Deletions != 0 ||
		!strings.Contains(diff[0].Patch, "+++ "+diff[0].File+"\n@@ -0,0 +1,1 @@\n+buy milk\n") {
		t.Fatalf("session diff %+v", diff)
	}
	// OpenCode's FileDiff is {file, patch, additions, deletions, status} and nothing else.
	_, body := td.request(t, http.MethodGet, "/session/"+sid+"/diff", "")
	var raw []map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for k := range raw[0] {
		if !slices.Contains([]string{"file", "patch", "additions", "deletions", "status"}, k) {
			t.Errorf("the session diff carries %q, which OpenCode's FileDiff forbids: %s", k, body)
		}
	}
	msgs := td.messages(t, sid)
	td.call(t, http.MethodGet, "/session/"+sid+"/diff?messageID="+msgs[0].Info.ID, "", http.StatusOK, &diff)
	if len(diff) != 1 {
		t.Fatalf("the turn's diff %+v", diff)
	}
}

func TestPlanAgentCannotRunCommands(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow", "edit": "allow"}}`})
	sid := td.newSession(t)
	var reply session.WithParts
	td.call(t, http.MethodPost, "/session/"+sid+"/message", `{"agent":"plan","parts":[{"type":"text","text":"run: touch x"}]}`, http.StatusOK, &reply)

	if len(toolParts([]session.WithParts{reply})) != 0 || !strings.Contains(textOf(reply), "not available") {
		t.Fatalf("the plan agent: %q", textOf(reply))
	}
	if _, err := os.Stat(filepath.Join(td.project, "x")); err == nil {
		t.Fatal("the plan agent created a file")
	}
	status, body := td.request(t, http.MethodPost, "/session/"+sid+"/message", `{"agent":"builder","parts":[{"type":"text","text":"hi"}]}`)
	if status != http.StatusBadRequest || !strings.Contains(string(body), "unknown agent") {
		t.Fatalf("an unknown agent: %d %s", status, body)
	}
}
