package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// demoOnly serves the offline demo model, the one provider that needs no network.
type demoOnly struct{ demo *provider.Demo }

func (d demoOnly) Get(id string) (provider.Provider, bool) {
	if id == provider.DemoID {
		return d.demo, true
	}
	return nil, false
}

func (demoOnly) Default() (string, string) { return provider.DemoID, provider.DemoID }

func (demoOnly) Cost(string, string, provider.Usage) float64 { return 0 }

// newService is a session service over a real SQLite file, prompting the demo model with the
// built-in tools and no permission gate.
func newService(t *testing.T) (*Service, *store.DB, string) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	builtins := tool.Builtins(tool.Options{})
	s := New(Options{DB: db, Bus: b, Version: "test", Agent: &Agent{Providers: demoOnly{provider.NewDemo()}, Tools: builtins.All}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		b.Close()
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, db, t.TempDir()
}

func text(s string) PromptInput { return PromptInput{Parts: []PartInput{{Type: "text", Text: s}}} }

func TestPromptInputValidate(t *testing.T) {
	cases := []struct {
		name string
		in   PromptInput
		says string // "" when valid
	}{
		{"one text part is valid", text("hi"), ""},
		{"a file part with url and mime is valid", PromptInput{Parts: []PartInput{{Type: "file", URL: "file:///a.txt", Mime: "text/plain"}}}, ""},
		{"a file part's source object is valid", PromptInput{Parts: []PartInput{{Type: "file", URL: "file:///a.txt", Mime: "text/plain", Source: json.RawMessage(`{"type":"file","path":"a.txt","text":{"value":"@a.txt","start":0,"end":6}}`)}}}, ""},
		{"a file part's source must be an object", PromptInput{Parts: []PartInput{{Type: "file", URL: "file:///a.txt", Mime: "text/plain", Source: json.RawMessage(`"a.txt"`)}}}, "parts[0].source"},
		{"no parts is refused", PromptInput{}, "at least one part"},
		{"an empty text is refused", PromptInput{Parts: []PartInput{{Type: "text"}}}, "parts[0].text"},
		{"a file without mime is refused", PromptInput{Parts: []PartInput{{Type: "file", URL: "file:///a"}}}, "url and mime"},
		{"an agent part needs a name", PromptInput{Parts: []PartInput{{Type: "agent"}}}, "parts[0].name"},
		{"an unknown part type is refused", PromptInput{Parts: []PartInput{{Type: "image", Text: "x"}}}, `got "image"`},
		{"a malformed message ID is refused", PromptInput{MessageID: "nope", Parts: []PartInput{{Type: "text", Text: "x"}}}, "messageID"},
		{"a model needs both IDs", PromptInput{Model: &MessageModel{ProviderID: "demo"}, Parts: []PartInput{{Type: "text", Text: "x"}}}, "providerID and modelID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.in.Validate()
			switch {
			case c.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
		})
	}
}

func TestTitleFromFirstLine(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"a short prompt is the title", "Fix the build", "Fix the build"},
		{"only the first line counts", "Fix the build\nand then the tests", "Fix the build"},
		{"surrounding space is trimmed", "  spaced  \n", "spaced"},
		{"a long line is cut with an ellipsis", strings.Repeat("word ", 20), strings.Repeat("word ", 11) + "wo…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := titleFrom(c.in); got != c.want {
				t.Fatalf("titleFrom(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestPlanAgentIsNotOfferedBash(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	in := text("run: ls")
	in.Agent = "plan"

	reply, err := s.Prompt(ctx, sess.ID, in)

	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, p := range reply.Parts {
		if p.Type == "tool" {
			t.Fatalf("the plan agent ran a tool: %+v", p)
		}
		if p.Type == "text" {
			got += *p.Text
		}
	}
	if !strings.Contains(got, "not available in this session") {
		t.Fatalf("reply %q", got)
	}
}

func TestHistoryCarriesToolResults(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, sess.ID, text("read: missing.txt")); err != nil {
		t.Fatal(err)
	}

	h, err := s.history(ctx, sess.ID, "")

	if err != nil {
		t.Fatal(err)
	}
	roles := make([]string, 0, len(h))
	for _, m := range h {
		roles = append(roles, string(m.Role))
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" {
		t.Fatalf("history roles %q", roles)
	}
	call, result := h[1].ToolCalls, h[2]
	if len(call) != 1 || call[0].Name != "read" || result.ToolCallID != call[0].ID || !result.IsError || result.Text == "" {
		t.Fatalf("call %+v result %+v", call, result)
	}
}

func TestRecoverMarksInterruptedWork(t *testing.T) {
	s, db, dir := newService(t)
	ctx := context.Background()
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.Prompt(ctx, sess.ID, text("hello"))
	if err != nil {
		t.Fatal(err)
	}
	// What a crash leaves behind: an open assistant message with a running tool part.
	open := Message{ID: s.ids.New(id.Message), SessionID: sess.ID, Role: RoleAssistant, Agent: "build", Time: MessageTime{Created: s.nowMS()}}
	if err := putMessage(ctx, db, open); err != nil {
		t.Fatal(err)
	}
	running := Part{ID: s.ids.New(id.Part), SessionID: sess.ID, MessageID: open.ID, Type: "tool", CallID: "call_1", Tool: "bash",
		State: &ToolState{Status: "running", Input: json.RawMessage(`{"command":"sleep 100"}`), Time: &PartTime{Start: s.nowMS()}}}
	if err := putPart(ctx, db, running); err != nil {
		t.Fatal(err)
	}

	restarted := bus.New(bus.Options{})
	defer restarted.Close()
	if _, err := New(Options{DB: db, Bus: restarted}).Recover(ctx, nil); err != nil {
		t.Fatal(err)
	}

	got, err := s.Message(ctx, sess.ID, open.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Info.Time.Completed == 0 || got.Info.Error == nil || !strings.Contains(got.Info.Error.Data["message"].(string), "interrupted") {
		t.Fatalf("the open message after Recover: %+v", got.Info)
	}
	p := got.Parts[0]
	if p.State.Status != "error" || !strings.Contains(p.State.Error, "interrupted") || string(p.State.Input) != `{"command":"sleep 100"}` || p.State.Time.End == 0 {
		t.Fatalf("the running part after Recover: %+v", p.State)
	}
	untouched, err := s.Message(ctx, sess.ID, done.Info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if untouched.Info.Error != nil || untouched.Info.Time.Completed != done.Info.Time.Completed {
		t.Fatalf("Recover touched a finished message: %+v", untouched.Info)
	}
}

func TestToolsAreFilteredByTheAgentAndThePrompt(t *testing.T) {
	all := tool.Builtins(tool.Options{}).All
	names := func(tools []tool.Tool) string {
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name())
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	build, _ := agentNamed("build")
	plan, _ := agentNamed("plan")
	tests := []struct {
		name     string
		agent    agent
		switched map[string]bool
		want     string
	}{
		{"build is offered every tool", build, nil, names(all())},
		{"plan is offered only the read-only tools", plan, nil, "glob grep list read todoread todowrite"},
		{"a prompt can switch a tool off", plan, map[string]bool{"grep": false, "read": true}, "glob list read todoread todowrite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(toolsFor(Agent{Tools: all}, "ses_any", tt.agent, tt.switched)); got != tt.want {
				t.Errorf("offered %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTheModelDecidesBetweenApplyPatchAndEdit(t *testing.T) {
	offered := func(tools []tool.Tool) (patch, edit bool) {
		for _, tl := range tools {
			patch = patch || tl.Name() == "apply_patch"
			edit = edit || tl.Name() == "edit" || tl.Name() == "write" || tl.Name() == "multiedit"
		}
		return patch, edit
	}
	for _, tt := range []struct {
		model       string
		patch, edit bool
	}{
		{"gpt-5.1-codex", true, false},
		{"gpt-4o", false, true},
		{"gpt-oss-120b", false, true},
		{"claude-sonnet-4-5", false, true},
		{"demo", true, true},
	} {
		t.Run(tt.model, func(t *testing.T) {
			ag := Agent{Providers: editToolsOf{"demo": provider.EditToolsAll}}
			tools := editToolsFor(ag, &MessageModel{ProviderID: "p", ModelID: tt.model}, tool.Builtins(tool.Options{}).All())
			if patch, edit := offered(tools); patch != tt.patch || edit != tt.edit {
				t.Fatalf("apply_patch offered %v, edit %v; want %v, %v", patch, edit, tt.patch, tt.edit)
			}
		})
	}
}

// editToolsOf answers EditTools from a table by model, and OpenCode's rule for the rest.
type editToolsOf map[string]string

func (e editToolsOf) EditTools(_, modelID string) string {
	if m, ok := e[modelID]; ok {
		return m
	}
	return provider.DefaultEditTools(modelID)
}

func (editToolsOf) Get(string) (provider.Provider, bool)        { return nil, false }
func (editToolsOf) Default() (string, string)                   { return "", "" }
func (editToolsOf) Cost(string, string, provider.Usage) float64 { return 0 }

func TestGETAgentListsTheDefinitionsTheLoopApplies(t *testing.T) {
	for _, info := range Agents() {
		def, ok := agentNamed(info.Name)
		if !ok || len(def.info.Permission) != len(info.Permission) {
			t.Errorf("agent %q: listed %+v, applied %+v", info.Name, info, def.info)
		}
	}
	if plan, _ := agentNamed("plan"); len(plan.info.Permission) != 2 || plan.offers("bash") || plan.offers("edit") {
		t.Errorf("plan must deny and not offer bash and edit: %+v", plan)
	}
}

// namedTool is a tool that is only a name, for tests of which tools are offered.
type namedTool string

func (n namedTool) Name() string                                         { return string(n) }
func (n namedTool) Description() string                                  { return "test tool " + string(n) }
func (n namedTool) Parameters() json.RawMessage                          { return json.RawMessage(`{"type":"object"}`) }
func (n namedTool) Run(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{}, nil }

func TestASessionsOwnToolsAreOfferedToItAlone(t *testing.T) {
	ag := Agent{
		Tools: func() []tool.Tool { return []tool.Tool{namedTool("shared")} },
		SessionTools: func(sessionID string) []tool.Tool {
			if sessionID == "ses_editor" {
				return []tool.Tool{namedTool("editor_read")}
			}
			return nil
		},
	}
	build, _ := agentNamed("build")
	plan, _ := agentNamed("plan")
	tests := []struct {
		name    string
		session string
		agent   agent
		want    []string
	}{
		{"the session the tools were added for is offered them besides the shared ones", "ses_editor", build, []string{"shared", "editor_read"}},
		{"another session is offered only the shared ones", "ses_other", build, []string{"shared"}},
		{"an agent that offers only named tools leaves a session's tools out as well", "ses_editor", plan, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tl := range toolsFor(ag, tt.session, tt.agent, nil) {
				got = append(got, tl.Name())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("offered %v, want %v", got, tt.want)
			}
		})
	}
}
