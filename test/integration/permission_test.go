package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// askFor prompts the demo model to run command and returns the request it raises.
func askFor(t *testing.T, td *tandem, events *stream, sid, command string) permissionRequest {
	t.Helper()
	td.promptAsync(t, sid, "run: "+command)
	asked := events.waitFor(t, "permission.asked for "+command, ofType("permission.asked", sid)).permission()
	if asked.Metadata["command"] != command {
		t.Fatalf("asked about %v, want %q", asked.Metadata["command"], command)
	}
	return asked
}

// finalTool waits for the end of the turn and returns the tool part of its last call.
func finalTool(t *testing.T, td *tandem, events *stream, sid string) (status, detail string) {
	t.Helper()
	events.waitFor(t, "session.idle", idle(sid))
	tools := toolParts(td.messages(t, sid))
	p := tools[len(tools)-1]
	if p.State.Status == "completed" {
		return p.State.Status, *p.State.Output
	}
	return p.State.Status, p.State.Error
}

func TestReplyOnce(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "echo once-1")
	td.reply(t, asked.ID, "once", "")

	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "once-1\n" {
		t.Fatalf("after once: %s %q", status, out)
	}
	// once is not remembered: the same command asks again.
	again := askFor(t, td, events, sid, "echo once-1")
	if again.ID == asked.ID {
		t.Fatal("a new call reused the old request ID")
	}
	td.reply(t, again.ID, "once", "")
	finalTool(t, td, events, sid)
	var grants []json.RawMessage
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 0 {
		t.Fatalf("once left grants: %s", grants)
	}
}

func TestReplyAlwaysPersistsAcrossRestartUntilRevoked(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "echo always-1")
	if strings.Join(asked.Always, ",") != "echo *" {
		t.Fatalf("always patterns %q", asked.Always)
	}
	td.reply(t, asked.ID, "always", "")
	if status, _ := finalTool(t, td, events, sid); status != "completed" {
		t.Fatalf("after always: %s", status)
	}

	// The next matching call runs without asking.
	before := events.mark()
	td.promptAsync(t, sid, "run: echo always-2")
	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "always-2\n" {
		t.Fatalf("the granted call: %s %q", status, out)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("a granted command asked again: %s", e.Properties)
		}
	}

	// ... and still after a restart.
	events.close()
	td.restart(t)
	events = td.subscribe(t)
	before = events.mark()
	td.promptAsync(t, sid, "run: echo always-3")
	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "always-3\n" {
		t.Fatalf("the granted call after a restart: %s %q", status, out)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("the grant was lost in the restart: %s", e.Properties)
		}
	}

	var grants []struct {
		ID, ProjectID, Permission, Pattern, SessionID, RequestID string
	}
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 1 || grants[0].Permission != "bash" || grants[0].Pattern != "echo *" || grants[0].SessionID != sid || grants[0].RequestID != asked.ID {
		t.Fatalf("grants: %+v", grants)
	}
	td.call(t, http.MethodDelete, "/permission/grant/"+grants[0].ID, "", http.StatusOK, nil)
	td.call(t, http.MethodDelete, "/permission/grant/"+grants[0].ID, "", http.StatusNotFound, nil)
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 0 {
		t.Fatalf("grants after revoking: %+v", grants)
	}

	// Revoked: it asks again.
	asked = askFor(t, td, events, sid, "echo always-4")
	td.reply(t, asked.ID, "reject", "")
	if status, msg := finalTool(t, td, events, sid); status != "error" || !strings.Contains(msg, "rejected") {
		t.Fatalf("rejected after revoking: %s %q", status, msg)
	}
}

func TestAlwaysApprovesOtherWaitingRequestsItCovers(t *testing.T) {
	td := startTandem(t, setup{})
	first, second := td.newSession(t), td.newSession(t)
	events := td.subscribe(t)
	a := askFor(t, td, events, first, "echo covered-a")
	b := askFor(t, td, events, second, "echo covered-b")

	td.reply(t, a.ID, "always", "")

	if status, _ := finalTool(t, td, events, second); status != "completed" {
		t.Fatalf("the covered request of the other session: %s", status)
	}
	status, b2 := td.request(t, http.MethodPost, "/permission/"+b.ID+"/reply", `{"reply":"reject"}`)
	if status != http.StatusConflict {
		t.Fatalf("replying to the request the grant answered: %d %s", status, b2)
	}
}

func TestRejectWithMessageReachesTheModel(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_rm", Name: "bash", Arguments: `{"command":"rm -rf build","description":"clean"}`}}},
		providertest.Turn{Text: []string{"Understood, I will not delete it."}},
	)
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	events := td.subscribe(t)

	td.promptAsync(t, sid, "Clean the build")
	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
	td.reply(t, asked.ID, "reject", "not now, the build is needed")

	want := "The user rejected permission to use this specific tool call with the following feedback: not now, the build is needed"
	failed, _ := events.waitFor(t, "the tool part failing", toolIn(sid, "error")).part()
	if failed.State.Error != want {
		t.Fatalf("tool error %q, want %q", failed.State.Error, want)
	}
	events.waitFor(t, "session.idle", idle(sid))
	reqs := llm.Requests()
	if len(reqs) != 2 || !requestContains(reqs[1], want) {
		t.Fatalf("the model was not told the feedback (%d requests)", len(reqs))
	}
	msgs := td.messages(t, sid)
	if got := textOf(msgs[len(msgs)-1]); got != "Understood, I will not delete it." {
		t.Fatalf("the model did not continue: %q", got)
	}
}

func TestFiftyClientsRaceToReply(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo race")

	var ok, conflict, other atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			reply := []string{"once", "always", "reject"}[i%3]
			status, body, err := td.try(http.MethodPost, "/permission/"+asked.ID+"/reply", `{"reply":"`+reply+`"}`)
			switch {
			case err != nil:
				t.Errorf("reply: %v", err)
				other.Add(1)
				return
			}
			switch status {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusConflict:
				var e errorBody
				if json.Unmarshal(body, &e) != nil || e.Name != "AlreadyResolvedError" || e.Data["requestID"] != asked.ID {
					t.Errorf("409 body %s", body)
				}
				conflict.Add(1)
			default:
				t.Errorf("status %d: %s", status, body)
				other.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()

	if ok.Load() != 1 || conflict.Load() != 49 {
		t.Fatalf("%d × 200, %d × 409, %d others; want exactly one winner", ok.Load(), conflict.Load(), other.Load())
	}
	finalTool(t, td, events, sid)
	replied := 0
	for _, e := range events.since(0) {
		if id, _ := e.replied(); e.Type == "permission.replied" && id == asked.ID {
			replied++
		}
	}
	if replied != 1 {
		t.Fatalf("%d permission.replied events for one request", replied)
	}
	var history []struct{ RequestID string }
	td.call(t, http.MethodGet, "/permission/history?sessionID="+sid, "", http.StatusOK, &history)
	if len(history) != 1 {
		t.Fatalf("%d decisions logged for one request", len(history))
	}
}

// TestFiftySessionsAnsweredConcurrently runs 50 sessions at once, each prompting 20 commands one
// after another, and answers every approval from a goroutine per session polling GET /permission,
// rejecting every third. Every decision must land on its own tool call, none lost, none twice.
func TestFiftySessionsAnsweredConcurrently(t *testing.T) {
	perSession := 20
	if raceDetector {
		// Under -race the pure-Go SQLite is many times slower and every turn re-reads the whole
		// session (see the report), so each of the 50 concurrent sessions asks 4 times instead.
		perSession = 4
	}
	answerConcurrently(t, 50, perSession)
}

func answerConcurrently(t *testing.T, sessions, perSession int) {
	td := startTandem(t, setup{})
	rejected := func(i, j int) bool { return (i+j)%3 == 0 }
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = td.newSession(t)
	}
	start := time.Now()
	defer func() { t.Logf("%d sessions × %d approvals in %s", sessions, perSession, time.Since(start)) }()

	var decided sync.Map // command -> the reply sent for it
	var wg sync.WaitGroup
	for i, sid := range ids {
		wg.Add(2)
		go func() { // the user: one prompt after another, each waiting for its turn to end
			defer wg.Done()
			for j := range perSession {
				status, body, err := td.try(http.MethodPost, "/session/"+sid+"/message", promptBody(fmt.Sprintf("run: echo s%d-%d", i, j)))
				if err != nil || status != http.StatusOK {
					t.Errorf("session %d prompt %d: %d %s %v", i, j, status, body, err)
					return
				}
			}
		}()
		go func() { // the approver: polls the session's pending requests and answers each once
			defer wg.Done()
			answered := 0
			seen := map[string]bool{}
			deadline := time.Now().Add(waitLimit)
			for answered < perSession && !t.Failed() {
				if time.Now().After(deadline) {
					t.Errorf("session %d: only %d approvals asked for", i, answered)
					_, _, _ = td.try(http.MethodPost, "/session/"+sid+"/abort", "") // release the prompting goroutine
					return
				}
				status, body, err := td.try(http.MethodGet, "/permission?sessionID="+sid, "")
				var waiting []permissionRequest
				if err != nil || status != http.StatusOK || json.Unmarshal(body, &waiting) != nil {
					t.Errorf("GET /permission: %d %s %v", status, body, err)
					return
				}
				if len(waiting) == 0 {
					time.Sleep(2 * time.Millisecond)
				}
				for _, req := range waiting {
					if seen[req.ID] {
						continue
					}
					seen[req.ID] = true
					cmd, _ := req.Metadata["command"].(string)
					var j int
					if _, err := fmt.Sscanf(cmd, fmt.Sprintf("echo s%d-%%d", i), &j); err != nil || req.SessionID != sid {
						t.Errorf("session %d was asked about %q (session %s)", i, cmd, req.SessionID)
						return
					}
					reply := "once"
					if rejected(i, j) {
						reply = "reject"
					}
					if _, dup := decided.LoadOrStore(cmd, reply); dup {
						t.Errorf("%q asked twice", cmd)
					}
					status, body, err := td.try(http.MethodPost, "/permission/"+req.ID+"/reply", `{"reply":"`+reply+`"}`)
					if err != nil || status != http.StatusOK {
						t.Errorf("reply to %q: %d %s %v", cmd, status, body, err)
						return
					}
					answered++
					deadline = time.Now().Add(waitLimit)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if st := td.statuses(t); len(st) != 0 {
		t.Fatalf("sessions still busy: %+v", st)
	}

	for i, sid := range ids {
		tools := toolParts(td.messages(t, sid))
		if len(tools) != perSession {
			t.Fatalf("session %d: %d tool parts, want %d", i, len(tools), perSession)
		}
		for j, p := range tools {
			cmd := fmt.Sprintf("echo s%d-%d", i, j)
			if commandOf(p) != cmd {
				t.Fatalf("session %d call %d ran %q, want %q", i, j, commandOf(p), cmd)
			}
			reply, _ := decided.Load(cmd)
			switch {
			case reply == "once" && (p.State.Status != "completed" || *p.State.Output != fmt.Sprintf("s%d-%d\n", i, j)):
				t.Errorf("%q was approved but ended %s", cmd, p.State.Status)
			case reply == "reject" && (p.State.Status != "error" || !strings.Contains(p.State.Error, "rejected")):
				t.Errorf("%q was rejected but ended %s", cmd, p.State.Status)
			}
		}
		var history []struct {
			Reply    string
			Patterns []string
			Cause    string
		}
		td.call(t, http.MethodGet, "/permission/history?limit=1000&sessionID="+sid, "", http.StatusOK, &history)
		if len(history) != perSession {
			t.Fatalf("session %d: %d decisions logged, want %d", i, len(history), perSession)
		}
		for _, d := range history {
			if want, _ := decided.Load(d.Patterns[0]); d.Reply != want || d.Cause != "reply" {
				t.Errorf("decision log for %q: %s (%s), want %s", d.Patterns[0], d.Reply, d.Cause, want)
			}
		}
	}
}

func TestAbortWithPendingApproval(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo never")

	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, nil)

	if id, reply := events.waitFor(t, "permission.replied", ofType("permission.replied", sid)).replied(); id != asked.ID || reply != "reject" {
		t.Fatalf("permission.replied %s %s, want a reject of %s", id, reply, asked.ID)
	}
	failed, _ := events.waitFor(t, "the tool part failing", toolIn(sid, "error")).part()
	if failed.CallID != asked.Tool.CallID {
		t.Fatalf("the failed part is call %s, the request was for %s", failed.CallID, asked.Tool.CallID)
	}
	events.waitFor(t, "session.idle", idle(sid))
	if p := td.pending(t, ""); len(p) != 0 {
		t.Fatalf("still pending after abort: %+v", p)
	}
	if st := td.statuses(t); len(st) != 0 {
		t.Fatalf("statuses after abort: %+v", st)
	}
	status, _ := td.request(t, http.MethodPost, "/permission/"+asked.ID+"/reply", `{"reply":"once"}`)
	if status != http.StatusConflict {
		t.Fatalf("a late reply after abort: %d, want 409", status)
	}
	var history []struct{ Cause, Reply string }
	td.call(t, http.MethodGet, "/permission/history?sessionID="+sid, "", http.StatusOK, &history)
	if len(history) != 1 || history[0].Cause != "cancel" || history[0].Reply != "reject" {
		t.Fatalf("decision log %+v", history)
	}
}

func TestUnansweredRequestTimesOut(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"timeout": 1}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo too-late")

	failed, _ := events.waitFor(t, "the tool part failing", toolIn(sid, "error")).part()

	if !strings.Contains(failed.State.Error, "no one answered within 1s") {
		t.Fatalf("timeout error %q does not say nobody answered", failed.State.Error)
	}
	events.waitFor(t, "session.idle", idle(sid))
	var history []struct{ RequestID, Cause, Reply string }
	td.call(t, http.MethodGet, "/permission/history?sessionID="+sid, "", http.StatusOK, &history)
	if len(history) != 1 || history[0].RequestID != asked.ID || history[0].Cause != "timeout" || history[0].Reply != "reject" {
		t.Fatalf("decision log %+v", history)
	}
}

func TestBadRepliesChangeNothing(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo still-pending")
	path := "/permission/" + asked.ID + "/reply"
	cases := []struct {
		name    string
		path    string
		body    string
		headers []string
		status  int
		says    string
	}{
		{"an unknown reply is a 400", path, `{"reply":"sometimes"}`, nil, 400, `got "sometimes"`},
		{"a capitalised reply is a 400", path, `{"reply":"Once"}`, nil, 400, `got "Once"`},
		{"a missing body is a 400", path, ``, nil, 400, "reply"},
		{"an empty object is a 400", path, `{}`, nil, 400, "reply"},
		{"a reply of the wrong type is a 400", path, `{"reply":1}`, nil, 400, "reply"},
		{"malformed JSON is a 400", path, `{"reply":`, nil, 400, ""},
		{"a non-JSON content type is a 415", path, `reply=once`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, ""},
		{"an unknown request ID is a 404", "/permission/per_0000000000001aaaaaaaaaaaaa/reply", `{"reply":"once"}`, nil, 404, "not found"},
		{"a malformed request ID is a 400", "/permission/not-a-permission/reply", `{"reply":"once"}`, nil, 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := td.request(t, http.MethodPost, c.path, c.body, c.headers...)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			var e errorBody
			if err := json.Unmarshal(body, &e); err != nil || e.Name == "" || e.Data["message"] == nil {
				t.Fatalf("not the one error shape {name, data:{message}}: %s", body)
			}
			if msg, _ := e.Data["message"].(string); !strings.Contains(msg, c.says) {
				t.Fatalf("message %q does not mention %q", msg, c.says)
			}
			if p := td.pending(t, sid); len(p) != 1 || p[0].ID != asked.ID {
				t.Fatalf("the request is no longer pending: %+v", p)
			}
		})
	}
	for _, e := range events.since(0) {
		if e.Type == "permission.replied" {
			t.Fatalf("a bad reply resolved the request: %s", e.Properties)
		}
	}
	td.reply(t, asked.ID, "once", "")
	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "still-pending\n" {
		t.Fatalf("after the bad replies a good one: %s %q", status, out)
	}
}

func TestLegacyRespondRoute(t *testing.T) {
	td := startTandem(t, setup{})
	sid, other := td.newSession(t), td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo legacy")

	status, body := td.request(t, http.MethodPost, "/session/"+other+"/permissions/"+asked.ID, `{"response":"once"}`)
	if status != http.StatusNotFound {
		t.Fatalf("answering through another session: %d %s", status, body)
	}
	status, body = td.request(t, http.MethodPost, "/session/"+sid+"/permissions/"+asked.ID, `{"response":"Once"}`)
	if status != http.StatusBadRequest {
		t.Fatalf("a capitalised legacy response: %d %s", status, body)
	}
	var ok bool
	td.call(t, http.MethodPost, "/session/"+sid+"/permissions/"+asked.ID, `{"response":"once"}`, http.StatusOK, &ok)

	if !ok {
		t.Fatal("the legacy route answered false")
	}
	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "legacy\n" {
		t.Fatalf("after the legacy reply: %s %q", status, out)
	}
}

func TestHistoryShowsWhoAnswered(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo audited")

	status, body := td.request(t, http.MethodPost, "/permission/"+asked.ID+"/reply", `{"reply":"reject","message":"not on Fridays"}`,
		"User-Agent", "reviewer-bot/2.1")
	if status != http.StatusOK {
		t.Fatalf("reply: %d %s", status, body)
	}
	finalTool(t, td, events, sid)

	var history []struct {
		RequestID, SessionID, Directory, Permission, Reply, Message, Cause, Client, Addr string
		Patterns                                                                         []string
		Time                                                                             struct{ Asked, Decided int64 }
	}
	td.call(t, http.MethodGet, "/permission/history", "", http.StatusOK, &history)
	if len(history) != 1 {
		t.Fatalf("%d decisions", len(history))
	}
	d := history[0]
	if d.RequestID != asked.ID || d.SessionID != sid || d.Directory != td.project || d.Permission != "bash" ||
		strings.Join(d.Patterns, ",") != "echo audited" || d.Reply != "reject" || d.Message != "not on Fridays" || d.Cause != "reply" {
		t.Fatalf("decision %+v", d)
	}
	if d.Client != "reviewer-bot" || !strings.HasPrefix(d.Addr, "127.0.0.1:") {
		t.Fatalf("who answered: client %q addr %q", d.Client, d.Addr)
	}
	if d.Time.Asked == 0 || d.Time.Decided < d.Time.Asked {
		t.Fatalf("times %+v", d.Time)
	}
}

func TestConfiguredRulesApply(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": {"echo *": "allow", "rm *": "deny"}}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)
	cases := []struct {
		name, command, status, says string
		asks                        bool
	}{
		{"an allowed command runs without asking", "echo ruled", "completed", "ruled\n", false},
		{"a denied command fails with the rule named", "rm -rf ./nothing", "error", "The user has specified a rule which prevents you from using this specific tool call (bash rm -rf ./nothing)", false},
		{"a compound command is denied when any part is", "echo a && rm -rf ./nothing", "error", "prevents you", false},
		{"anything else still asks", "ls", "completed", "tandem.json", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := events.mark()
			td.promptAsync(t, sid, "run: "+c.command)
			if c.asks {
				asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
				td.reply(t, asked.ID, "once", "")
			}
			status, detail := finalTool(t, td, events, sid)
			if status != c.status || !strings.Contains(detail, c.says) {
				t.Fatalf("%s: %q, want %s containing %q", status, detail, c.status, c.says)
			}
			if !c.asks {
				for _, e := range events.since(before) {
					if e.Type == "permission.asked" {
						t.Fatalf("asked although a rule decides: %s", e.Properties)
					}
				}
			}
		})
	}
}

func TestSessionRulesOverrideConfig(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow", "edit": "allow"}}`})
	events := td.subscribe(t)
	var s struct{ ID string }
	td.call(t, http.MethodPost, "/session", `{"permission": [{"permission": "bash", "pattern": "echo *", "action": "deny"}]}`, http.StatusOK, &s)

	td.promptAsync(t, s.ID, "run: echo session-ruled")

	if status, detail := finalTool(t, td, events, s.ID); status != "error" || !strings.Contains(detail, "prevents you") {
		t.Fatalf("the session's deny rule: %s %q", status, detail)
	}
}

func TestPatchedRulesApplyToTheNextCall(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo before-patch")
	td.reply(t, asked.ID, "once", "")
	finalTool(t, td, events, sid)

	td.call(t, http.MethodPatch, "/config", `{"permission": {"bash": {"echo *": "allow"}}}`, http.StatusOK, nil)

	before := events.mark()
	td.promptAsync(t, sid, "run: echo after-patch")
	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "after-patch\n" {
		t.Fatalf("after PATCH /config: %s %q", status, out)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("the patched rule was not applied: %s", e.Properties)
		}
	}
	status, body := td.request(t, http.MethodPatch, "/config", `{"permission": {"bash": "sometimes"}}`)
	if status != http.StatusBadRequest {
		t.Fatalf("a bad rule: %d %s", status, body)
	}
	td.promptAsync(t, sid, "run: echo still-allowed")
	if status, _ := finalTool(t, td, events, sid); status != "completed" {
		t.Fatalf("a rejected patch changed the rules: %s", status)
	}
}

func TestDeletingASessionRejectsItsPendingRequests(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	asked := askFor(t, td, events, sid, "echo orphan")

	td.call(t, http.MethodDelete, "/session/"+sid, "", http.StatusOK, nil)

	if id, reply := events.waitFor(t, "permission.replied", ofType("permission.replied", sid)).replied(); id != asked.ID || reply != "reject" {
		t.Fatalf("permission.replied %s %s", id, reply)
	}
	if p := td.pending(t, ""); len(p) != 0 {
		t.Fatalf("pending after delete: %+v", p)
	}
}
