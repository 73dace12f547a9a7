package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// writeTree writes files (slash-separated paths relative to root).
func writeTree(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

// commandInfo is the wire shape of a listed command, decoded independently of the server's type.
type commandInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Agent       string   `json:"agent"`
	Model       string   `json:"model"`
	Source      string   `json:"source"`
	Template    string   `json:"template"`
	Subtask     bool     `json:"subtask"`
	Hints       []string `json:"hints"`
}

func commandBody(name, arguments string) string {
	b, _ := json.Marshal(map[string]string{"command": name, "arguments": arguments})
	return string(b)
}

const helloCommand = `---
description: Greets someone
agent: plan
subtask: true
---
Greet $1, then $2.
All: $ARGUMENTS
Computed: !` + "`echo shell-$((6*7))`" + `
Notes: @notes.txt and @missing.txt
`

func TestCommandsAreListedAndRun(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"hello done"}},
		providertest.Turn{Text: []string{"config done"}},
		providertest.Turn{Text: []string{"init done"}})
	td := startTandem(t, setup{env: openAIEnv(llm),
		config: `{"command": {"fromconfig": {"template": "Config says $ARGUMENTS", "description": "from tandem.json", "model": "openai/gpt-scripted"}}}`})
	writeTree(t, td.project, map[string]string{
		".opencode/command/hello.md":   helloCommand,
		".tandem/command/git/log.md":   "Summarise the log.\n",
		".tandem/command/broken.md":    "---\ndescription: [unclosed\n---\nbody\n",
		"notes.txt":                    "the notes' secret word is pelican\n",
		".opencode/command/readme.txt": "not a command\n",
	})
	writeTree(t, filepath.Join(td.env["XDG_CONFIG_HOME"], "tandem"), map[string]string{"command/mine.md": "Only mine: $1\n"})
	schemas := testenv.LoadSchemas(t, "testdata/opencode-command-schemas.json")
	sid := td.newSession(t)
	events := td.subscribe(t)

	t.Run("GET /command lists built-ins, the config's, the user's and the project's commands in OpenCode's shape", func(t *testing.T) {
		status, body := td.request(t, http.MethodGet, "/command", "")
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		if p := schemas.Problems(t, "command.list", body); len(p) > 0 {
			t.Fatalf("not OpenCode's Command list: %v\n%s", p, body)
		}
		var list []commandInfo
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		byName := map[string]commandInfo{}
		var names []string
		for _, c := range list {
			byName[c.Name] = c
			names = append(names, c.Name)
		}
		// broken.md's frontmatter does not parse: it is left out, the others are listed.
		if want := []string{"fromconfig", "git/log", "hello", "init", "mine", "review"}; !slices.Equal(names, want) {
			t.Fatalf("names %q, want %q", names, want)
		}
		hello := byName["hello"]
		if hello.Description != "Greets someone" || hello.Agent != "plan" || !hello.Subtask || hello.Source != "command" ||
			!strings.HasPrefix(hello.Template, "Greet $1, then $2.") || !slices.Equal(hello.Hints, []string{"$1", "$2", "$ARGUMENTS"}) {
			t.Fatalf("hello: %+v", hello)
		}
		if c := byName["fromconfig"]; c.Description != "from tandem.json" || c.Model != "openai/gpt-scripted" || !slices.Equal(c.Hints, []string{"$ARGUMENTS"}) {
			t.Fatalf("fromconfig: %+v", c)
		}
		if c := byName["init"]; !strings.Contains(c.Template, "AGENTS.md") {
			t.Fatalf("init: %+v", c)
		}
	})

	t.Run("a project command runs with its arguments, shell output and files substituted", func(t *testing.T) {
		status, body := td.request(t, http.MethodPost, "/session/"+sid+"/command", commandBody("hello", `Ada "the Countess of Lovelace" today`))
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		if p := schemas.Problems(t, "session.command", body); len(p) > 0 {
			t.Fatalf("not OpenCode's answer: %v\n%s", p, body)
		}
		var reply session.WithParts
		if err := json.Unmarshal(body, &reply); err != nil {
			t.Fatal(err)
		}
		if textOf(reply) != "hello done" || reply.Info.Agent != "plan" {
			t.Fatalf("reply: %s", body)
		}
		msgs := td.messages(t, sid)
		user := msgs[len(msgs)-2]
		want := "Greet Ada, then the Countess of Lovelace today.\nAll: Ada \"the Countess of Lovelace\" today\nComputed: shell-42\nNotes: @notes.txt and @missing.txt"
		if user.Info.Role != session.RoleUser || len(user.Parts) != 3 || *user.Parts[0].Text != want {
			t.Fatalf("user message: %+v\nfirst part %q\nwant        %q", user.Info, *user.Parts[0].Text, want)
		}
		if p := user.Parts[2]; p.Type != "file" || p.Filename != "notes.txt" || p.Mime != "text/plain" {
			t.Fatalf("attached file part: %+v", p)
		}
		reqs := llm.Requests()
		for _, s := range []string{want, "the notes' secret word is pelican"} {
			if !requestContains(reqs[len(reqs)-1], s) {
				t.Errorf("the model was not sent %q", s)
			}
		}
		events.waitFor(t, "command.executed", func(e event) bool {
			var p struct {
				Name, SessionID, Arguments, MessageID string
			}
			_ = json.Unmarshal(e.Properties, &p)
			return e.Type == "command.executed" && p.Name == "hello" && p.SessionID == sid && p.MessageID == user.Info.ID
		})
	})

	t.Run("a config command runs with the model it names", func(t *testing.T) {
		var reply session.WithParts
		td.call(t, http.MethodPost, "/session/"+sid+"/command", commandBody("fromconfig", "blue skies"), http.StatusOK, &reply)
		if reply.Info.ModelID != "gpt-scripted" || textOf(reply) != "config done" {
			t.Fatalf("reply: %+v", reply)
		}
		if reqs := llm.Requests(); !requestContains(reqs[len(reqs)-1], "Config says blue skies") {
			t.Fatal("the model was not sent the expanded template")
		}
	})

	t.Run("the init built-in asks for AGENTS.md", func(t *testing.T) {
		td.call(t, http.MethodPost, "/session/"+sid+"/command", commandBody("init", ""), http.StatusOK, nil)
		if reqs := llm.Requests(); !requestContains(reqs[len(reqs)-1], "Create or update AGENTS.md") {
			t.Fatal("the model was not sent the init prompt")
		}
	})

	t.Run("bad requests are refused", func(t *testing.T) {
		tests := []struct {
			name, body string
			status     int
		}{
			{"an unknown command", commandBody("nope", ""), http.StatusNotFound},
			{"no command", `{"arguments":""}`, http.StatusBadRequest},
			{"a model that is not provider/model", `{"command":"hello","arguments":"","model":"gpt"}`, http.StatusBadRequest},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if status, body := td.request(t, http.MethodPost, "/session/"+sid+"/command", tt.body); status != tt.status {
					t.Fatalf("%d %s, want %d", status, body, tt.status)
				}
			})
		}
	})
}

func TestAnUntrustedProjectsCommandsRunNoShell(t *testing.T) {
	td := startTandem(t, setup{untrusted: true, config: `{"command": {"sneaky": {"template": "!` + "`touch from-config`" + `"}}}`})
	writeTree(t, td.project, map[string]string{
		".opencode/command/build.md": "Run it: !`touch ran-it`\n",
		".opencode/command/plain.md": "Just words about $ARGUMENTS\n",
	})
	sid := td.newSession(t)

	var list []commandInfo
	td.call(t, http.MethodGet, "/command", "", http.StatusOK, &list)
	for _, c := range list {
		if c.Name == "sneaky" {
			t.Fatal("the untrusted project file's command key was listed")
		}
	}
	status, body := td.request(t, http.MethodPost, "/session/"+sid+"/command", commandBody("build", ""))
	if status != http.StatusForbidden || !strings.Contains(string(body), "tandem trust") {
		t.Fatalf("%d %s, want 403 naming tandem trust", status, body)
	}
	if _, err := os.Stat(filepath.Join(td.project, "ran-it")); !os.IsNotExist(err) {
		t.Fatalf("the shell block ran: %v", err)
	}
	if len(td.messages(t, sid)) != 0 {
		t.Fatal("a refused command stored messages")
	}
	var reply session.WithParts
	td.call(t, http.MethodPost, "/session/"+sid+"/command", commandBody("plain", "x"), http.StatusOK, &reply)
	if reply.Info.Role != session.RoleAssistant {
		t.Fatalf("plain command reply: %+v", reply)
	}
}
