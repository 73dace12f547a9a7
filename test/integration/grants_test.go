package integration

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// grantRow is a row of GET /permission/grant.
type grantRow struct{ ID, Permission, Pattern, Action, RequestID string }

// TestALastingAnswerRemembersOnlyThePatternsChosen: a person ticks some of the patterns an
// "always" offers; only those are stored, and a pattern the request did not offer is a 400.
func TestALastingAnswerRemembersOnlyThePatternsChosen(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	sid := td.newSession(t)
	asked := askFor(t, td, events, sid, "git status --short && ls -a")
	if offered := patternsOf(t, asked, "always"); !slices.Equal(offered, []string{"git status *", "ls *"}) {
		t.Fatalf("always offers %v", offered)
	}

	tests := []struct {
		name, body, wants string
	}{
		{name: "a pattern the decision does not offer is refused", body: `{"reply":"always","patterns":["rm *"]}`, wants: `\"rm *\" is not offered`},
		{name: "patterns on an answer that remembers nothing are refused", body: `{"reply":"once","patterns":["ls *"]}`, wants: "only a lasting answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := td.request(t, http.MethodPost, "/permission/"+asked.ID+"/reply", tc.body)
			if code != http.StatusBadRequest || !strings.Contains(string(body), tc.wants) {
				t.Fatalf("%d %s, want 400 with %q", code, body, tc.wants)
			}
		})
	}
	if len(td.pending(t, sid)) != 1 {
		t.Fatal("a refused reply answered the request")
	}

	td.call(t, http.MethodPost, "/permission/"+asked.ID+"/reply", `{"reply":"always","patterns":["ls *"]}`, http.StatusOK, nil)
	if status, _ := finalTool(t, td, events, sid); status != "completed" {
		t.Fatalf("the allowed call ended %s", status)
	}
	var grants []grantRow
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 1 || grants[0].Pattern != "ls *" || grants[0].Action != "allow" || grants[0].RequestID != asked.ID {
		t.Fatalf("grants %+v, want the one chosen pattern", grants)
	}
	// What was left unticked still asks.
	again := askFor(t, td, events, sid, "git status")
	td.reply(t, again.ID, "reject", "")
	finalTool(t, td, events, sid)
}

// TestADenyAddedByHandRefusesWithoutAsking: POST /permission/grant adds a deny for the project; the
// waiting request it covers is refused at once, the next matching call is refused without asking,
// and revoking the rule asks again.
func TestADenyAddedByHandRefusesWithoutAsking(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	sid := td.newSession(t)

	bad := []struct{ name, body, wants string }{
		{name: "a rule without a permission is refused", body: `{"pattern":"x"}`, wants: "permission"},
		{name: "a rule without a pattern is refused", body: `{"permission":"bash","pattern":"  "}`, wants: "pattern: required"},
		{name: "an unknown action is refused", body: `{"permission":"bash","pattern":"x","action":"ask"}`, wants: "action"},
		{name: "a permission no tool asks for is refused, naming the ones there are", body: `{"permission":"bsah","pattern":"rm *"}`, wants: `permission \"bsah\": no tool asks for it; the permissions are `},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, body := td.request(t, http.MethodPost, "/permission/grant", tc.body)
			if code != http.StatusBadRequest || !strings.Contains(string(body), tc.wants) {
				t.Fatalf("%d %s, want 400 with %q", code, body, tc.wants)
			}
		})
	}

	waiting := askFor(t, td, events, sid, "curl example.com")
	var added grantRow
	td.call(t, http.MethodPost, "/permission/grant", `{"permission":"bash","pattern":"curl *"}`, http.StatusOK, &added)
	if added.ID == "" || added.Action != "deny" || added.Pattern != "curl *" {
		t.Fatalf("added %+v", added)
	}
	if status, msg := finalTool(t, td, events, sid); status != "error" || !strings.Contains(msg, "reject") {
		t.Fatalf("the waiting call after the deny: %s %q", status, msg)
	}
	if left := td.pending(t, sid); len(left) != 0 {
		t.Fatalf("still waiting: %+v (asked %s)", left, waiting.ID)
	}

	before := events.mark()
	td.promptAsync(t, sid, "run: curl example.org")
	if status, msg := finalTool(t, td, events, sid); status != "error" || !strings.Contains(msg, "always reject") {
		t.Fatalf("the next call: %s %q", status, msg)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("a denied command asked: %s", e.Properties)
		}
	}
	var grants []grantRow
	td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
	if len(grants) != 1 || grants[0].ID != added.ID {
		t.Fatalf("grants %+v", grants)
	}

	td.call(t, http.MethodDelete, "/permission/grant/"+added.ID, "", http.StatusOK, nil)
	again := askFor(t, td, events, sid, "curl example.net")
	td.reply(t, again.ID, "reject", "")
	finalTool(t, td, events, sid)
}
