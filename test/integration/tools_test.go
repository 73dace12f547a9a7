package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// lineage is what GET /permission says of a subagent's request besides OpenCode's fields.
type lineage struct {
	ID              string `json:"id"`
	SessionID       string `json:"sessionID"`
	Permission      string `json:"permission"`
	ParentSessionID string `json:"parentSessionID"`
	RootSessionID   string `json:"rootSessionID"`
}

func TestATaskWhoseSubagentAsksIsAnsweredUnderTheParent(t *testing.T) {
	for _, tt := range []struct {
		name  string
		model func(t *testing.T) map[string]string // the server's environment; nil: the demo model
	}{
		{"the demo model", nil},
		{"a scripted OpenAI-compatible model", func(t *testing.T) map[string]string {
			llm := providertest.NewOpenAI(t,
				providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_task", Name: "task",
					Arguments: `{"description":"echo in a child","prompt":"run: echo from-the-child","subagent_type":"general"}`}}},
				providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_bash", Name: "bash",
					Arguments: `{"command":"echo from-the-child","description":"echo"}`}}},
				providertest.Turn{Text: []string{"The child ran it: from-the-child"}},
				providertest.Turn{Text: []string{"The subagent reports: from-the-child"}},
			)
			return openAIEnv(llm)
		}},
	} {
		t.Run(tt.name+": the child's bash request is listed under the parent, answered there, and the parent gets the child's answer", func(t *testing.T) {
			var env map[string]string
			if tt.model != nil {
				env = tt.model(t)
			}
			td := startTandem(t, setup{env: env, config: `{"permission": {"task": "allow"}}`})
			parent := td.newSession(t)
			events := td.subscribe(t)

			td.promptAsync(t, parent, "task: general | run: echo from-the-child")

			asked := events.waitFor(t, "the child's permission.asked", func(e event) bool {
				return e.Type == "permission.asked" && e.sessionID() != parent
			}).permission()
			var listed []lineage
			td.call(t, http.MethodGet, "/permission?sessionID="+parent, "", http.StatusOK, &listed)
			if len(listed) != 1 || listed[0].ID != asked.ID || listed[0].SessionID == parent || listed[0].Permission != "bash" ||
				listed[0].ParentSessionID != parent || listed[0].RootSessionID != parent {
				t.Fatalf("GET /permission?sessionID=<parent> = %+v, want the child's bash request naming the parent", listed)
			}
			var children []session.Session
			td.call(t, http.MethodGet, "/session/"+parent+"/children", "", http.StatusOK, &children)
			if len(children) != 1 || children[0].ID != listed[0].SessionID || children[0].ParentID != parent {
				t.Fatalf("GET /session/{parent}/children = %+v", children)
			}
			td.reply(t, asked.ID, "once", "")
			events.waitFor(t, "the parent's turn ends", idle(parent))
			msgs := td.messages(t, parent)
			var task *session.Part
			for _, p := range toolParts(msgs) {
				if p.Tool == "task" {
					task = &p
				}
			}
			if task == nil || task.State.Status != "completed" || !strings.Contains(*task.State.Output, "from-the-child") ||
				task.State.Metadata["sessionId"] != children[0].ID {
				t.Fatalf("the parent's task part = %+v", task)
			}
			if got := textOf(msgs[len(msgs)-1]); !strings.Contains(got, "from-the-child") {
				t.Fatalf("the parent's answer %q", got)
			}
		})
	}
}

func TestASubagentCannotRunWhatTheParentsRulesDenyEndToEnd(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"task": "allow", "bash": "allow"}}`})
	var parent session.Session
	td.call(t, http.MethodPost, "/session", `{"permission": [{"permission": "bash", "pattern": "*", "action": "deny"}]}`, http.StatusOK, &parent)

	td.prompt(t, parent.ID, "task: general | run: echo must-not-run")

	var children []session.Session
	td.call(t, http.MethodGet, "/session/"+parent.ID+"/children", "", http.StatusOK, &children)
	if len(children) != 1 {
		t.Fatalf("children = %+v", children)
	}
	bash := toolParts(td.messages(t, children[0].ID))
	if len(bash) != 1 || bash[0].State.Status != "error" || !strings.Contains(bash[0].State.Error, "prevent") {
		t.Fatalf("the child's bash part = %+v, want refused by the parent's rule", bash)
	}
}

func TestAbortingTheParentStopsItsSubagent(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"task": "allow"}}`})
	parent := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, parent, "task: general | slow: "+strings.Repeat("word ", 200))
	delta := events.waitFor(t, "the child's first slow word", func(e event) bool {
		return e.Type == "message.part.delta" && e.sessionID() != parent
	})
	child := delta.sessionID()

	var ok bool
	td.call(t, http.MethodPost, "/session/"+parent+"/abort", "", http.StatusOK, &ok)

	events.waitFor(t, "the child's turn ends", idle(child))
	events.waitFor(t, "the parent's turn ends", idle(parent))
	msgs := td.messages(t, child)
	if last := msgs[len(msgs)-1].Info; last.Error == nil || last.Error.Name != "MessageAbortedError" {
		t.Fatalf("the child's last message = %+v, want aborted", last)
	}
	if _, busy := td.statuses(t)[child]; busy {
		t.Fatal("the child still runs")
	}
}

func TestWebFetchOfALoopbackPageAsksOnceForItsHost(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><h1>Config loader</h1><p>It reads <em>tandem.json</em>.</p></body></html>")
	}))
	t.Cleanup(page.Close)
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)

	td.promptAsync(t, sid, "fetch: "+page.URL+"/docs")

	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
	if asked.Permission != "webfetch" || strings.Join(asked.Patterns, ",") != "127.0.0.1" {
		t.Fatalf("permission.asked %+v, want webfetch for 127.0.0.1", asked)
	}
	td.reply(t, asked.ID, "once", "")
	events.waitFor(t, "session.idle", idle(sid))
	parts := toolParts(td.messages(t, sid))
	if len(parts) != 1 || parts[0].State.Status != "completed" || !strings.Contains(*parts[0].State.Output, "# Config loader") ||
		!strings.Contains(*parts[0].State.Output, "*tandem.json*") {
		t.Fatalf("the webfetch part = %+v, output %q", parts[0].State, *parts[0].State.Output)
	}
	var left []permissionRequest
	td.call(t, http.MethodGet, "/permission", "", http.StatusOK, &left)
	if len(left) != 0 {
		t.Fatalf("more was asked: %+v", left)
	}
}

func TestAPatchOfThreeFilesAsksOnceAndAppliesAllOrNothing(t *testing.T) {
	td := startTandem(t, setup{})
	for name, content := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "gamma\n"} {
		if err := os.WriteFile(filepath.Join(td.project, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(td.project, name))
		return string(b)
	}
	t.Run("a failing hunk changes no file and asks nothing", func(t *testing.T) {
		sid := td.newSession(t)
		td.prompt(t, sid, "patch:\n*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Update File: b.txt\n-not in b\n+x\n*** End Patch")
		parts := toolParts(td.messages(t, sid))
		if len(parts) != 1 || parts[0].State.Status != "error" || !strings.Contains(parts[0].State.Error, "No file was changed") {
			t.Fatalf("the apply_patch part = %+v", parts)
		}
		if read("a.txt") != "alpha\n" || read("b.txt") != "beta\n" {
			t.Fatal("a file changed")
		}
	})
	t.Run("three files are asked for in one request showing every diff", func(t *testing.T) {
		sid := td.newSession(t)
		events := td.subscribe(t)
		td.promptAsync(t, sid, "patch:\n*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Delete File: b.txt\n*** Update File: c.txt\n*** Move to: moved/c.txt\n-gamma\n+GAMMA\n*** End Patch")
		asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
		files, _ := asked.Metadata["files"].([]any)
		diff, _ := asked.Metadata["diff"].(string)
		if asked.Permission != "edit" || len(files) != 3 || !strings.Contains(diff, "+ALPHA") || !strings.Contains(diff, "-beta") || !strings.Contains(diff, "+GAMMA") {
			t.Fatalf("permission.asked %+v", asked)
		}
		td.reply(t, asked.ID, "once", "")
		events.waitFor(t, "session.idle", idle(sid))
		if read("a.txt") != "ALPHA\n" || read("b.txt") != "" || read("c.txt") != "" || read("moved/c.txt") != "GAMMA\n" {
			t.Fatalf("files after the patch: a %q b %q c %q moved/c %q", read("a.txt"), read("b.txt"), read("c.txt"), read("moved/c.txt"))
		}
		// The part's metadata has each file as OpenCode's terminal UI reads it.
		parts := toolParts(td.messages(t, sid))
		if len(parts) != 1 {
			t.Fatalf("tool parts %+v", parts)
		}
		b, _ := json.Marshal(parts[0].State.Metadata["files"])
		var shown []struct {
			Type         string `json:"type"`
			FilePath     string `json:"filePath"`
			RelativePath string `json:"relativePath"`
			Patch        string `json:"patch"`
			Deletions    *int   `json:"deletions"`
		}
		if err := json.Unmarshal(b, &shown); err != nil || len(shown) != 3 {
			t.Fatalf("metadata.files %s (%v)", b, err)
		}
		for i, want := range []string{"update", "delete", "move"} {
			if f := shown[i]; f.Type != want || f.FilePath == "" || f.RelativePath == "" || !strings.Contains(f.Patch, "@@") || f.Deletions == nil {
				t.Fatalf("metadata.files[%d] = %+v", i, f)
			}
		}
		var diffs []session.FileDiff
		td.call(t, http.MethodGet, "/session/"+sid+"/diff", "", http.StatusOK, &diffs)
		if len(diffs) != 4 {
			t.Fatalf("GET /session/{id}/diff = %+v, want a.txt, b.txt, c.txt and moved/c.txt", diffs)
		}
	})
}
