package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// TestTheModelTitlesASessionFromItsFirstPrompt: after the first prompt of an untitled session, its
// model is asked for a title (OpenCode's title agent), which replaces the first line of the prompt;
// later prompts and titles a person gave are left alone.
func TestTheModelTitlesASessionFromItsFirstPrompt(t *testing.T) {
	for _, w := range wires {
		t.Run("a session of the "+w.name+" model gets the title it writes", func(t *testing.T) {
			llm := w.start(t, providertest.Turn{Text: []string{"Done."}}, providertest.Turn{Text: []string{"Again."}})
			td := startTandem(t, setup{env: w.env(llm)})
			sid := td.newSession(t)
			td.prompt(t, sid, "please fix the flaky login test\nit fails one run in ten")
			var s session.Session
			td.call(t, http.MethodGet, "/session/"+sid, "", http.StatusOK, &s)
			if s.Title != providertest.Title {
				t.Fatalf("title %q, want the model's %q", s.Title, providertest.Title)
			}
			titles := llm.Titles()
			if len(titles) != 1 || !strings.Contains(string(titles[0].Body), "please fix the flaky login test") {
				t.Fatalf("title calls %d: %s", len(titles), titles)
			}
			td.prompt(t, sid, "and the signup test")
			if n := len(llm.Titles()); n != 1 {
				t.Fatalf("%d title calls after a second prompt, want 1", n)
			}
			if n := len(llm.Requests()); n != 2 {
				t.Fatalf("%d conversation calls, want 2", n)
			}
		})
	}

	t.Run("the demo model writes the same title for the same prompt", func(t *testing.T) {
		td := startTandem(t, setup{})
		for range 2 {
			sid := td.newSession(t)
			td.prompt(t, sid, "explain the build\nstep by step")
			var s session.Session
			td.call(t, http.MethodGet, "/session/"+sid, "", http.StatusOK, &s)
			if s.Title != "Explain the build" {
				t.Fatalf("title %q", s.Title)
			}
		}
	})

	t.Run("a title a person gave is kept and no title is asked for", func(t *testing.T) {
		llm := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"ok"}})
		td := startTandem(t, setup{env: openAIEnv(llm)})
		var s session.Session
		td.call(t, http.MethodPost, "/session", `{"title":"mine"}`, http.StatusOK, &s)
		td.prompt(t, s.ID, "hello")
		td.call(t, http.MethodGet, "/session/"+s.ID, "", http.StatusOK, &s)
		if s.Title != "mine" || len(llm.Titles()) != 0 {
			t.Fatalf("title %q after %d title calls", s.Title, len(llm.Titles()))
		}
	})
}
