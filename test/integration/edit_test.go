package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// partBody is the JSON of p with its text replaced.
func partBody(tb testing.TB, p session.Part, text string) string {
	tb.Helper()
	p.Text = &text
	b, err := json.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func TestEditingAndDeletingMessagesAndParts(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"first reply"}},
		providertest.Turn{Text: []string{"second reply"}},
		providertest.Turn{Text: []string{"third reply"}})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	events := td.subscribe(t)
	first := td.prompt(t, sid, "alpha, to be forgotten")
	td.prompt(t, sid, "beta, to be edited")
	msgs := td.messages(t, sid)
	if len(msgs) != 4 {
		t.Fatalf("%d messages, want 4", len(msgs))
	}
	userBeta := msgs[2]
	betaText := userBeta.Parts[0]
	partURL := "/session/" + sid + "/message/" + userBeta.Info.ID + "/part/" + betaText.ID

	t.Run("a part is replaced, announced and read back", func(t *testing.T) {
		var got session.Part
		td.call(t, http.MethodPatch, partURL, partBody(t, betaText, "beta, edited"), http.StatusOK, &got)
		if got.ID != betaText.ID || got.Type != "text" || *got.Text != "beta, edited" {
			t.Fatalf("PATCH answered %+v", got)
		}
		events.waitFor(t, "message.part.updated", func(e event) bool {
			p, ok := e.part()
			return ok && e.Type == "message.part.updated" && p.ID == betaText.ID && *p.Text == "beta, edited"
		})
		var one session.WithParts
		td.call(t, http.MethodGet, "/session/"+sid+"/message/"+userBeta.Info.ID, "", http.StatusOK, &one)
		if textOf(one) != "beta, edited" {
			t.Fatalf("read back: %q", textOf(one))
		}
	})

	t.Run("a body that is not the same part is refused", func(t *testing.T) {
		other := betaText
		other.ID = first.Parts[0].ID
		reasoning := betaText
		reasoning.Type = "reasoning"
		missing := betaText
		missing.ID = "prt_1ffcc53b70009rRgdIgacrwlDM"
		tests := []struct {
			name, path, body string
			status           int
			says             string
		}{
			{"another part's ID in the body", partURL, partBody(t, other, "x"), http.StatusBadRequest, "the body names"},
			{"a change of type", partURL, partBody(t, reasoning, "x"), http.StatusBadRequest, "cannot become"},
			{"a part that does not exist", "/session/" + sid + "/message/" + userBeta.Info.ID + "/part/" + missing.ID,
				partBody(t, missing, "x"), http.StatusNotFound, "Part not found"},
			{"a malformed part ID", "/session/" + sid + "/message/" + userBeta.Info.ID + "/part/nope", `{"type":"text","text":"x"}`,
				http.StatusBadRequest, "partID"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status, body := td.request(t, http.MethodPatch, tt.path, tt.body)
				if status != tt.status || !strings.Contains(string(body), tt.says) {
					t.Fatalf("= %d %s, want %d saying %s", status, body, tt.status, tt.says)
				}
			})
		}
	})

	t.Run("a part is deleted and announced", func(t *testing.T) {
		reply := msgs[3]
		url := "/session/" + sid + "/message/" + reply.Info.ID + "/part/" + reply.Parts[1].ID
		var ok bool
		td.call(t, http.MethodDelete, url, "", http.StatusOK, &ok)
		events.waitFor(t, "message.part.removed", func(e event) bool {
			var p struct{ SessionID, MessageID, PartID string }
			return e.Type == "message.part.removed" && json.Unmarshal(e.Properties, &p) == nil &&
				p.SessionID == sid && p.MessageID == reply.Info.ID && p.PartID == reply.Parts[1].ID
		})
		var one session.WithParts
		td.call(t, http.MethodGet, "/session/"+sid+"/message/"+reply.Info.ID, "", http.StatusOK, &one)
		if len(one.Parts) != len(reply.Parts)-1 {
			t.Fatalf("%d parts left of %d", len(one.Parts), len(reply.Parts))
		}
		if status, body := td.request(t, http.MethodDelete, url, ""); status != http.StatusNotFound {
			t.Fatalf("deleting it again = %d %s", status, body)
		}
	})

	t.Run("a message and its parts are deleted and announced", func(t *testing.T) {
		for _, m := range msgs[:2] {
			var ok bool
			td.call(t, http.MethodDelete, "/session/"+sid+"/message/"+m.Info.ID, "", http.StatusOK, &ok)
			events.waitFor(t, "message.removed", func(e event) bool {
				var p struct{ SessionID, MessageID string }
				return e.Type == "message.removed" && json.Unmarshal(e.Properties, &p) == nil && p.SessionID == sid && p.MessageID == m.Info.ID
			})
			status, body := td.request(t, http.MethodGet, "/session/"+sid+"/message/"+m.Info.ID, "")
			if status != http.StatusNotFound || !strings.Contains(string(body), "MessageNotFoundError") {
				t.Fatalf("the deleted message: %d %s", status, body)
			}
		}
		if left := td.messages(t, sid); len(left) != 2 || left[0].Info.ID != userBeta.Info.ID {
			t.Fatalf("%d messages left", len(left))
		}
		if status, _ := td.request(t, http.MethodDelete, "/session/"+sid+"/message/"+first.Info.ID, ""); status != http.StatusNotFound {
			t.Fatalf("deleting it again = %d", status)
		}
	})

	t.Run("the next turn sends the edited history and not the deleted one", func(t *testing.T) {
		td.prompt(t, sid, "gamma")
		reqs := llm.Requests()
		last := reqs[len(reqs)-1]
		if requestContains(last, "alpha") || !requestContains(last, "beta, edited") || requestContains(last, "beta, to be edited") {
			t.Fatalf("the model was sent: %s", last.Body)
		}
	})
}

func TestEditsWaitForAnIdleSession(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	done := td.prompt(t, sid, "hello")
	td.promptAsync(t, sid, "slow: one two three four five six seven eight nine ten eleven twelve")
	events.waitFor(t, "the first slow word", ofType("message.part.delta", sid))

	msg := "/session/" + sid + "/message/" + done.Info.ID
	part := msg + "/part/" + done.Parts[len(done.Parts)-1].ID
	for _, tt := range []struct{ method, path, body string }{
		{http.MethodDelete, msg, ""},
		{http.MethodDelete, part, ""},
		{http.MethodPatch, part, partBody(t, done.Parts[len(done.Parts)-1], "edited")},
	} {
		status, body := td.request(t, tt.method, tt.path, tt.body)
		if status != http.StatusConflict || !strings.Contains(string(body), `"name":"SessionBusyError"`) || !strings.Contains(string(body), sid) {
			t.Errorf("%s %s while busy = %d %s, want 409 SessionBusyError", tt.method, tt.path, status, body)
		}
	}
	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, nil)
	events.waitFor(t, "session.idle", idle(sid))
	td.call(t, http.MethodDelete, msg, "", http.StatusOK, nil)
	if got := textOf(td.prompt(t, sid, "after the edit")); got != "You said: after the edit" {
		t.Fatalf("a prompt after the edit: %q", got)
	}
}
