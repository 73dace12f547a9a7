package integration

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// keysOf lists the keys of a request's decisions, in order.
func keysOf(req permissionRequest) []string {
	var keys []string
	for _, d := range req.Decisions {
		keys = append(keys, d.Key)
	}
	return keys
}

// patternsOf returns the patterns the decision key grants or denies.
func patternsOf(t *testing.T, req permissionRequest, key string) []string {
	t.Helper()
	for _, d := range req.Decisions {
		if d.Key == key {
			return d.Patterns
		}
	}
	t.Fatalf("request %s offers no %q: %v", req.ID, key, keysOf(req))
	return nil
}

var (
	everyKey   = []string{"once", "session", "always", "reject", "reject-with-message", "deny-always"}
	momentKeys = []string{"once", "reject", "reject-with-message"}
)

// TestDecisionListsFollowWhatIsAsked: each kind of request lists, in order, the answers valid for
// it with the patterns each one grants or denies, in GET /permission and in permission.asked alike.
func TestDecisionListsFollowWhatIsAsked(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	outside := t.TempDir()

	tests := []struct {
		name       string
		prompt     string
		permission string
		keys       []string
		asked      []string // patterns of once and reject
		lasting    []string // patterns of session, always and deny-always
	}{
		{name: "a command offers its family for the lasting answers", prompt: "run: git status --short",
			permission: "bash", keys: everyKey, asked: []string{"git status --short"}, lasting: []string{"git status *"}},
		{name: "a command that cannot be judged offers nothing lasting", prompt: `run: eval "$(echo ls)"`,
			permission: "bash", keys: momentKeys},
		{name: "a new file offers its path", prompt: "write: notes/todo.txt\nbuy milk\n",
			permission: "edit", keys: everyKey, asked: []string{"notes/todo.txt"}, lasting: []string{"notes/todo.txt"}},
		{name: "a path outside the project offers its directory", prompt: "write: " + filepath.Join(outside, "x.txt") + "\nx\n",
			permission: "external_directory", keys: everyKey,
			asked: []string{filepath.ToSlash(outside) + "/*"}, lasting: []string{filepath.ToSlash(outside) + "/*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sid := td.newSession(t)
			td.promptAsync(t, sid, tc.prompt)
			asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
			listed := td.pending(t, sid)
			if len(listed) != 1 || listed[0].ID != asked.ID {
				t.Fatalf("listed %+v, asked %s", listed, asked.ID)
			}
			for _, req := range []permissionRequest{asked, listed[0]} {
				if req.Permission != tc.permission {
					t.Fatalf("permission %q, want %q", req.Permission, tc.permission)
				}
				if got := keysOf(req); !slices.Equal(got, tc.keys) {
					t.Fatalf("keys %v, want %v", got, tc.keys)
				}
				for _, d := range req.Decisions {
					if d.Label == "" || (d.Key == "reject-with-message") != d.Message {
						t.Fatalf("decision %+v", d)
					}
				}
				if tc.asked != nil {
					for _, key := range []string{"once", "reject"} {
						if got := patternsOf(t, req, key); !slices.Equal(got, tc.asked) {
							t.Fatalf("%s patterns %v, want %v", key, got, tc.asked)
						}
					}
				}
				if tc.lasting != nil {
					for _, key := range []string{"session", "always", "deny-always"} {
						if got := patternsOf(t, req, key); !slices.Equal(got, tc.lasting) {
							t.Fatalf("%s patterns %v, want %v", key, got, tc.lasting)
						}
					}
				}
			}
			td.reply(t, asked.ID, "reject", "")
			events.waitFor(t, "session.idle", idle(sid))
		})
	}
}

// TestAnMCPToolOffersEveryDecision: a downstream MCP tool's request offers the lasting answers for
// the whole tool.
func TestAnMCPToolOffersEveryDecision(t *testing.T) {
	td := startWithEverything(t)
	events := td.subscribe(t)
	sid := td.newSession(t)
	td.promptAsync(t, sid, `mcp: everything echo {"message":"hi"}`)
	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
	if asked.Permission != "everything_echo" || !slices.Equal(keysOf(asked), everyKey) ||
		!slices.Equal(patternsOf(t, asked, "always"), []string{"*"}) || !slices.Equal(patternsOf(t, asked, "deny-always"), []string{"*"}) {
		t.Fatalf("MCP request %+v", asked)
	}
	td.reply(t, asked.ID, "session", "")
	if status, out := finalTool(t, td, events, sid); status != "completed" || !strings.Contains(out, "hi") {
		t.Fatalf("the tool allowed for the session: %s %q", status, out)
	}
	before := events.mark()
	td.promptAsync(t, sid, `mcp: everything echo {"message":"again"}`)
	if status, out := finalTool(t, td, events, sid); status != "completed" || !strings.Contains(out, "again") {
		t.Fatalf("the second call in the session: %s %q", status, out)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("the session grant did not cover the tool: %s", e.Properties)
		}
	}
}

// TestASessionGrantEndsWithItsSession: "session" allows the command family in that session only,
// and not after the session is deleted; it is never listed as a project grant.
func TestASessionGrantEndsWithItsSession(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	first := td.newSession(t)

	asked := askFor(t, td, events, first, "echo session-1")
	td.reply(t, asked.ID, "session", "")
	if status, out := finalTool(t, td, events, first); status != "completed" || out != "session-1\n" {
		t.Fatalf("after session: %s %q", status, out)
	}
	var replied struct{ Reply, Decision string }
	for _, e := range events.since(0) {
		if e.Type == "permission.replied" && strings.Contains(string(e.Properties), asked.ID) {
			_ = json.Unmarshal(e.Properties, &replied)
		}
	}
	if replied.Reply != "always" || replied.Decision != "session" {
		t.Fatalf("permission.replied %+v: OpenCode's clients see always, the key is session", replied)
	}
	before := events.mark()
	td.promptAsync(t, first, "run: echo session-2")
	if status, out := finalTool(t, td, events, first); status != "completed" || out != "session-2\n" {
		t.Fatalf("the granted call: %s %q", status, out)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("the session grant did not cover echo: %s", e.Properties)
		}
	}
	var grants []json.RawMessage
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 0 {
		t.Fatalf("a session grant was stored for the project: %s", grants)
	}

	// Another session asks.
	second := td.newSession(t)
	other := askFor(t, td, events, second, "echo session-3")
	td.reply(t, other.ID, "once", "")
	finalTool(t, td, events, second)

	// The first session is deleted: a new session asks again, and so does the second.
	td.call(t, http.MethodDelete, "/session/"+first, "", http.StatusOK, nil)
	third := td.newSession(t)
	again := askFor(t, td, events, third, "echo session-4")
	td.reply(t, again.ID, "reject", "")
	finalTool(t, td, events, third)

	var history []struct{ RequestID, Reply, Cause string }
	td.call(t, http.MethodGet, "/permission/history", "", http.StatusOK, &history)
	found := false
	for _, d := range history {
		found = found || (d.RequestID == asked.ID && d.Reply == "session" && d.Cause == "reply")
	}
	if !found {
		t.Fatalf("the decision log lacks the session answer: %+v", history)
	}
}

// TestDenyAlwaysRefusesTheNextCallWithoutAsking: deny-always stores a deny grant that refuses the
// next matching call without asking, across a restart, logged; revoking it asks again.
func TestDenyAlwaysRefusesTheNextCallWithoutAsking(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	sid := td.newSession(t)

	asked := askFor(t, td, events, sid, "echo deny-1")
	td.reply(t, asked.ID, "deny-always", "")
	if status, msg := finalTool(t, td, events, sid); status != "error" || !strings.Contains(msg, "rejected") {
		t.Fatalf("after deny-always: %s %q", status, msg)
	}
	var grants []struct{ ID, Permission, Pattern, Action, RequestID string }
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 1 || grants[0].Permission != "bash" || grants[0].Pattern != "echo *" || grants[0].Action != "deny" || grants[0].RequestID != asked.ID {
		t.Fatalf("grants %+v", grants)
	}

	td.restart(t)
	events = td.subscribe(t)
	before := events.mark()
	td.promptAsync(t, sid, "run: echo deny-2")
	if status, msg := finalTool(t, td, events, sid); status != "error" || !strings.Contains(msg, "always reject") {
		t.Fatalf("the denied call after a restart: %s %q", status, msg)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("a denied command asked: %s", e.Properties)
		}
	}
	var history []struct {
		RequestID, Reply, Cause string
		Patterns                []string
	}
	td.call(t, http.MethodGet, "/permission/history?sessionID="+sid, "", http.StatusOK, &history)
	if len(history) != 2 || history[0].Cause != "grant" || history[0].Reply != "deny-always" || !slices.Equal(history[0].Patterns, []string{"echo deny-2"}) ||
		history[1].RequestID != asked.ID || history[1].Reply != "deny-always" || history[1].Cause != "reply" {
		t.Fatalf("history %+v", history)
	}

	td.call(t, http.MethodDelete, "/permission/grant/"+grants[0].ID, "", http.StatusOK, nil)
	again := askFor(t, td, events, sid, "echo deny-3")
	td.reply(t, again.ID, "once", "")
	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "deny-3\n" {
		t.Fatalf("after revoking: %s %q", status, out)
	}
}

// TestAnAlwaysAnswerByKeySurvivesARestart: "always" given for a file is kept across a restart.
func TestAnAlwaysAnswerByKeySurvivesARestart(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	sid := td.newSession(t)
	td.promptAsync(t, sid, "write: kept.txt\none\n")
	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
	td.reply(t, asked.ID, "always", "")
	if status, _ := finalTool(t, td, events, sid); status != "completed" {
		t.Fatalf("after always: %s", status)
	}
	td.restart(t)
	events = td.subscribe(t)
	before := events.mark()
	td.promptAsync(t, sid, "write: kept.txt\ntwo\n")
	if status, _ := finalTool(t, td, events, sid); status != "completed" {
		t.Fatalf("the granted write after a restart: %s", status)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("the grant was lost in the restart: %s", e.Properties)
		}
	}
}

// TestRepliesMustBeOfferedKeys: an unknown key, or one the request does not offer, is a 400 naming
// the valid keys, and the request keeps waiting; reject-with-message needs its message.
func TestRepliesMustBeOfferedKeys(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	sid := td.newSession(t)
	td.promptAsync(t, sid, `run: eval "$(echo ls)"`)
	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()

	tests := []struct {
		name, body string
		want       []string
	}{
		{name: "an unknown key names every key", body: `{"reply":"maybe"}`,
			want: []string{`"maybe"`, `"once"`, `"session"`, `"deny-always"`}},
		{name: "a key the request does not offer names the ones it does", body: `{"reply":"session"}`,
			want: []string{`"session" is not offered`, `"once" | "reject" | "reject-with-message"`}},
		{name: "reject-with-message without a message asks for one", body: `{"reply":"reject-with-message"}`,
			want: []string{"message: required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := td.request(t, http.MethodPost, "/permission/"+asked.ID+"/reply", tc.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d %s, want 400", status, body)
			}
			var e errorBody
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if msg, _ := e.Data["message"].(string); !strings.Contains(msg, w) {
					t.Fatalf("body %s lacks %s", body, w)
				}
			}
			if got := td.pending(t, sid); len(got) != 1 || got[0].ID != asked.ID {
				t.Fatalf("the request stopped waiting: %+v", got)
			}
		})
	}
	td.reply(t, asked.ID, "reject-with-message", "not eval, please")
	if status, msg := finalTool(t, td, events, sid); status != "error" || !strings.Contains(msg, "not eval, please") {
		t.Fatalf("after reject-with-message: %s %q", status, msg)
	}

	// OpenCode's "always" is accepted although not offered, and allows only this call.
	td.promptAsync(t, sid, `run: eval "$(echo echo unjudged)"`)
	asked = events.waitFor(t, "permission.asked", func(e event) bool {
		return ofType("permission.asked", sid)(e) && e.permission().ID != asked.ID
	}).permission()
	td.reply(t, asked.ID, "always", "")
	if status, out := finalTool(t, td, events, sid); status != "completed" || out != "unjudged\n" {
		t.Fatalf("after always on an unjudged request: %s %q", status, out)
	}
	var grants []json.RawMessage
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 0 {
		t.Fatalf("always on an unjudged request left grants: %s", grants)
	}
}
