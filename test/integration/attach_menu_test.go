//go:build linux

package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// TestAttachRunsSlashCommandsNeverAsPrompts drives the / menu of `tandem attach` against a scripted
// model: the menu lists the UI's actions and the server's commands (a project's included), /undo
// and an unknown /name reach no model, /review and a project command run through
// POST /session/{id}/command, and a multi-line answer reads line by line.
func TestAttachRunsSlashCommandsNeverAsPrompts(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"alpha-line\nbeta-line\n", "gamma-line"}},
		providertest.Turn{Text: []string{"reviewed: the changes look right"}},
		providertest.Turn{Text: []string{"hello from the project command"}})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	writeTree(t, td.project, map[string]string{
		".opencode/command/greet.md": "---\ndescription: greet someone by name\n---\nSay hello to $ARGUMENTS in one line.\n",
	})
	sc := attachIn(t, td.base, testPassword)
	sid := func(t *testing.T) string {
		t.Helper()
		var list []session.Session
		td.call(t, http.MethodGet, "/session", "", http.StatusOK, &list)
		if len(list) != 1 {
			t.Fatalf("sessions: %+v", list)
		}
		return list[0].ID
	}
	modelCalls := func() int { return len(llm.Requests()) }

	t.Run("a multi-line answer shows on several lines", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("three lines please")
		screen := sc.waitText("alpha-line", "beta-line", "gamma-line")
		for _, line := range strings.Split(screen, "\n") {
			if strings.Count(line, "-line") > 1 {
				t.Fatalf("two lines of the answer share a screen line %q:\n%s", line, screen)
			}
		}
	})
	t.Run("/ opens the menu with the UI's actions and the server's commands", func(t *testing.T) {
		sc := sc.on(t)
		sc.typeText("/")
		sc.waitText("▸ /help", "/undo", "ctrl+z", "/redo", "ctrl+y", "Enter runs")
		sc.typeText("rev")
		sc.waitText("▸ /review", "review the uncommitted changes")
		sc.keys("BSpace", "BSpace", "BSpace")
		sc.typeText("gre")
		sc.waitFor("only the matching command", func(s string) bool {
			return strings.Contains(s, "▸ /greet") && !strings.Contains(s, "/undo")
		})
		sc.keys("Escape")
		sc.waitGone("Enter runs")
		sc.keys("C-u")
		sc.waitText("Ask anything")
	})
	t.Run("/undo reverts the turn and the model is not called", func(t *testing.T) {
		sc := sc.on(t)
		before := modelCalls()
		sc.prompt("/undo")
		sc.waitText("⟲ 1 prompt(s) undone")
		sc.waitFor("the undone prompt back in the editor", func(s string) bool { return strings.Contains(promptLine(s), "three lines please") })
		var s session.Session
		td.call(t, http.MethodGet, "/session/"+sid(t), "", http.StatusOK, &s)
		if s.Revert == nil {
			t.Fatalf("the session is not reverted: %+v", s)
		}
		if n := modelCalls(); n != before {
			t.Fatalf("the model was called %d more times by /undo", n-before)
		}
		for _, m := range td.messages(t, s.ID) {
			if strings.Contains(textOf(m), "/undo") {
				t.Fatalf("/undo was stored as a message: %+v", m.Info)
			}
		}
		sc.keys("C-u")
	})
	t.Run("an unknown command says so and stays in the editor", func(t *testing.T) {
		sc := sc.on(t)
		before := modelCalls()
		sc.prompt("/frobnicate now")
		sc.waitText("unknown command /frobnicate")
		sc.waitFor("the command still in the editor", func(s string) bool { return strings.Contains(promptLine(s), "/frobnicate now") })
		if n := modelCalls(); n != before {
			t.Fatalf("the model was called %d more times by an unknown command", n-before)
		}
		sc.keys("C-u")
	})
	t.Run("/review runs the built-in command", func(t *testing.T) {
		sc := sc.on(t)
		before := modelCalls()
		sc.prompt("/review")
		sc.waitText("reviewed: the changes look right")
		reqs := llm.Requests()
		if len(reqs) != before+1 || !requestContains(reqs[before], "Review the uncommitted changes") {
			t.Fatalf("the model saw %d new requests; the built-in review template must be the one", len(reqs)-before)
		}
	})
	t.Run("a project command from .opencode/command runs with its arguments", func(t *testing.T) {
		sc := sc.on(t)
		before := modelCalls()
		sc.prompt("/greet Ada Lovelace")
		sc.waitText("hello from the project command")
		reqs := llm.Requests()
		if len(reqs) != before+1 || !requestContains(reqs[before], "Say hello to Ada Lovelace in one line.") {
			t.Fatalf("the model saw %d new requests; the project's template with the arguments must be the one", len(reqs)-before)
		}
	})
	t.Run("the menu runs the highlighted command on Enter: share, then unshare", func(t *testing.T) {
		sc := sc.on(t)
		sc.typeText("/sha")
		sc.waitText("▸ /share")
		sc.keys("Enter")
		sc.waitText("shared, read-only: " + td.base + "/s/")
		var s session.Session
		td.call(t, http.MethodGet, "/session/"+sid(t), "", http.StatusOK, &s)
		if s.Share == nil {
			t.Fatalf("the session has no link after /share: %+v", s)
		}
		sc.prompt("/unshare")
		sc.waitText("the link no longer opens the session")
		var after session.Session // fresh: decoding keeps a field the answer leaves out
		td.call(t, http.MethodGet, "/session/"+sid(t), "", http.StatusOK, &after)
		if after.Share != nil {
			t.Fatalf("the session keeps its link after /unshare: %+v", after.Share)
		}
	})
	t.Run("/export writes the conversation as Markdown", func(t *testing.T) {
		sc := sc.on(t)
		file := filepath.Join(t.TempDir(), "talk.md")
		sc.prompt("/export " + file)
		sc.waitText("exported to " + file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"# Scripted title", "## User", "Review the uncommitted changes", "reviewed: the changes look right", "hello from the project command"} {
			if !strings.Contains(string(data), want) {
				t.Fatalf("the export lacks %q:\n%s", want, data)
			}
		}
	})
	t.Run("? lists every key and command", func(t *testing.T) {
		sc := sc.on(t)
		sc.keys("?")
		sc.waitText("Keys and commands", "ctrl+z / ctrl+y", "esc esc", "/undo")
		sc.typeText("greet")
		sc.waitFor("the help filtered to the project's command", func(s string) bool {
			return strings.Contains(s, "/greet [$ARGUMENTS]") && strings.Contains(s, "greet someone by name") && !strings.Contains(s, "esc esc")
		})
		sc.keys("Escape")
		sc.waitGone("Keys and commands")
	})
}
