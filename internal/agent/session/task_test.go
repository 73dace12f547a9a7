package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// withAgents is the demo model with agents from a configuration.
type withAgents struct {
	demoOnly
	agents []AgentConfig
}

func (w withAgents) ConfiguredAgents() []AgentConfig { return w.agents }

// newGatedService is a session service over a real SQLite file whose tool calls go through a real
// permission service with the given configuration; agents holds the configuration's agents.
func newGatedService(t *testing.T, rules string, agents string) (*Service, *permission.Service, string) {
	t.Helper()
	s, perms, _, dir := newGatedServiceWithQuestions(t, rules, agents)
	return s, perms, dir
}

// newGatedServiceWithQuestions is newGatedService with its question service.
func newGatedServiceWithQuestions(t *testing.T, rules string, agents string) (*Service, *permission.Service, *question.Service, string) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	pc, err := permission.ParseConfig(json.RawMessage(rules))
	if err != nil {
		t.Fatal(err)
	}
	perms := permission.New(permission.Options{DB: db, Bus: b, Config: pc})
	var raw map[string]json.RawMessage
	if agents != "" {
		if err := json.Unmarshal([]byte(agents), &raw); err != nil {
			t.Fatal(err)
		}
	}
	configured, err := ParseAgentConfigs(raw)
	if err != nil {
		t.Fatal(err)
	}
	builtins := tool.Builtins(tool.Options{})
	questions := question.New(question.Options{Bus: b, DB: db})
	all := func() []tool.Tool { return append(builtins.All(), questions.Tool()) }
	s := New(Options{DB: db, Bus: b, Version: "test", Agent: &Agent{
		Providers: withAgents{demoOnly{provider.NewDemo()}, configured}, Tools: all, Permissions: perms, Questions: questions}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		b.Close()
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, perms, questions, t.TempDir()
}

// turnOf prompts a session in the background; the returned function waits for the turn's reply.
func turnOf(t *testing.T, s *Service, sessionID string, in PromptInput) func() WithParts {
	t.Helper()
	done := make(chan struct{})
	var reply WithParts
	var err error
	go func() {
		defer close(done)
		reply, err = s.Prompt(context.Background(), sessionID, in)
	}()
	t.Cleanup(func() {
		// A test that failed midway leaves the turn waiting: it is aborted, not waited for.
		if _, err := s.Abort(context.Background(), sessionID); err != nil {
			t.Error(err)
		}
		<-done
	})
	return func() WithParts {
		t.Helper()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the turn did not end within 30s")
		}
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
}

func TestATaskRunsASubagentInAChildSessionAndReturnsItsAnswer(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "loader.go"), []byte("package config // the config loader\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parent, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := s.Prompt(ctx, parent.ID, text("task: explore | read: loader.go"))
	if err != nil {
		t.Fatal(err)
	}
	children, err := s.Children(ctx, parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 1 || children[0].ParentID != parent.ID || children[0].Agent != "explore" {
		t.Fatalf("children = %+v, want one explore session under the parent", children)
	}
	child := children[0]
	// The parent's step has the task call, completed with the child's answer; its last message
	// reports it.
	msgs, err := s.Messages(ctx, parent.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var taskPart *Part
	for _, m := range msgs.Items {
		for _, p := range m.Parts {
			if p.Type == "tool" && p.Tool == "task" {
				taskPart = &p
			}
		}
	}
	if taskPart == nil || taskPart.State.Status != "completed" {
		t.Fatalf("task part = %+v", taskPart)
	}
	if taskPart.State.Metadata["sessionId"] != child.ID || !strings.Contains(*taskPart.State.Output, "the config loader") ||
		!strings.Contains(*taskPart.State.Output, "<task_result>") {
		t.Fatalf("task state = %+v, output %q", taskPart.State.Metadata, *taskPart.State.Output)
	}
	if got := finalText(reply); !strings.Contains(got, "the config loader") {
		t.Fatalf("the parent's answer %q lacks the child's", got)
	}
}

func TestASubagentsApprovalIsListedUnderItsParentAndAnsweredThere(t *testing.T) {
	s, perms, dir := newGatedService(t, `{"task": "allow", "bash": "ask"}`, "")
	ctx := context.Background()
	parent, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	wait := turnOf(t, s, parent.ID, text("task: general | run: echo from-the-child"))
	var listed []permission.Request
	testenv.Eventually(t, "the child's bash request under the parent", func() bool {
		listed = perms.List(parent.ID, "")
		return len(listed) == 1
	})
	req := listed[0]
	if req.SessionID == parent.ID || req.ParentSessionID != parent.ID || req.RootSessionID != parent.ID || req.Permission != "bash" {
		t.Fatalf("request = %+v, want the child's, naming the parent", req)
	}
	if child, err := s.Get(ctx, req.SessionID); err != nil || child.ParentID != parent.ID {
		t.Fatalf("the request's session %v (%v) is not the parent's child", child, err)
	}
	if err := perms.Reply(req.ID, permission.Answer{Reply: permission.Once}, pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	reply := wait()
	if got := finalText(reply); !strings.Contains(got, "from-the-child") {
		t.Fatalf("the parent's answer %q lacks the child's output", got)
	}
}

func TestASubagentsQuestionNamesItsParent(t *testing.T) {
	s, _, questions, dir := newGatedServiceWithQuestions(t, `{"task": "allow"}`, "")
	ctx := context.Background()
	parent, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	wait := turnOf(t, s, parent.ID, text("task: general | ask: Which database? | Postgres | SQLite"))
	var listed []question.Request
	testenv.Eventually(t, "the child's question", func() bool { listed = questions.List(""); return len(listed) == 1 })
	q := listed[0]
	if q.SessionID == parent.ID || q.ParentSessionID != parent.ID || q.RootSessionID != parent.ID {
		t.Fatalf("question = %+v, want the child's, naming the parent", q)
	}
	if err := questions.Reply(q.ID, []question.Answer{{"SQLite"}}, pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	if got := finalText(wait()); !strings.Contains(got, "SQLite") {
		t.Fatalf("the parent's answer %q lacks the child's", got)
	}
}

func TestASubagentCannotRunWhatItsParentsRulesDeny(t *testing.T) {
	for _, tt := range []struct {
		name    string
		agents  string
		parent  CreateInput
		agent   string
		command string
	}{
		{name: "the parent session's own rules deny it", parent: CreateInput{Permission: []permission.Rule{{Permission: "bash", Pattern: "*", Action: permission.Deny}}}},
		{name: "the parent's agent denies it", agents: `{"careful": {"mode": "primary", "permission": {"bash": "deny"}}}`, agent: "careful"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, perms, dir := newGatedService(t, `{"task": "allow", "bash": "allow"}`, tt.agents)
			ctx := context.Background()
			parent, err := s.Create(ctx, dir, tt.parent)
			if err != nil {
				t.Fatal(err)
			}
			in := text("task: general | run: echo should-not-run")
			in.Agent = tt.agent
			reply := turnOf(t, s, parent.ID, in)()
			if len(perms.List("", "")) != 0 {
				t.Fatal("a person was asked")
			}
			children, err := s.Children(ctx, parent.ID)
			if err != nil || len(children) != 1 {
				t.Fatalf("children = %+v, %v", children, err)
			}
			msgs, err := s.Messages(ctx, children[0].ID, MessagesInput{})
			if err != nil {
				t.Fatal(err)
			}
			var bash *Part
			for _, m := range msgs.Items {
				for _, p := range m.Parts {
					if p.Type == "tool" && p.Tool == "bash" {
						bash = &p
					}
				}
			}
			if bash == nil || bash.State.Status != "error" || !strings.Contains(bash.State.Error, "prevent") {
				t.Fatalf("the child's bash call = %+v, want refused", bash)
			}
			if strings.Contains(finalText(reply), "should-not-run\n") {
				t.Fatalf("the command ran: %q", finalText(reply))
			}
		})
	}
}

func TestAbortingTheParentAbortsItsSubagent(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	parent, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	wait := turnOf(t, s, parent.ID, text("task: general | slow: "+strings.Repeat("word ", 200)))
	var child Session
	testenv.Eventually(t, "the child runs", func() bool {
		children, err := s.Children(ctx, parent.ID)
		if err != nil || len(children) != 1 {
			return false
		}
		child = children[0]
		_, busy := s.Statuses()[child.ID]
		return busy
	})
	if _, err := s.Abort(ctx, parent.ID); err != nil {
		t.Fatal(err)
	}
	reply := wait()
	if reply.Info.Error == nil || reply.Info.Error.Name != "MessageAbortedError" {
		t.Fatalf("the parent's turn ended %+v, want aborted", reply.Info.Error)
	}
	if _, busy := s.Statuses()[child.ID]; busy {
		t.Fatal("the child still runs")
	}
	msgs, err := s.Messages(ctx, child.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	last := msgs.Items[len(msgs.Items)-1].Info
	if last.Role != RoleAssistant || last.Error == nil || last.Error.Name != "MessageAbortedError" {
		t.Fatalf("the child's last message = %+v, want aborted", last)
	}
}

func TestTaskRefusesAnUnknownSubagent(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	parent, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := s.Prompt(ctx, parent.ID, text("task: nobody | do it"))
	if err != nil {
		t.Fatal(err)
	}
	if got := finalText(reply); !strings.Contains(got, "nobody is not a valid agent type") || !strings.Contains(got, "explore") {
		t.Fatalf("reply %q", got)
	}
	if children, _ := s.Children(ctx, parent.ID); len(children) != 0 {
		t.Fatalf("a child was made: %+v", children)
	}
}

func TestParseAgentConfigs(t *testing.T) {
	for _, tt := range []struct{ name, raw, want string }{
		{"a bad mode", `{"x": {"mode": "sometimes"}}`, "agent.x.mode"},
		{"a model without its provider", `{"x": {"model": "gpt-5"}}`, "agent.x.model"},
		{"a bad permission", `{"x": {"permission": {"bash": "maybe"}}}`, "agent.x.permission"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.raw), &raw); err != nil {
				t.Fatal(err)
			}
			if _, err := ParseAgentConfigs(raw); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseAgentConfigs = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestAConfiguredSubagentIsListedAndRunsWithItsOwnRules(t *testing.T) {
	s, perms, dir := newGatedService(t, `{"task": "allow", "bash": "allow"}`,
		`{"reviewer": {"mode": "subagent", "description": "Reviews diffs", "permission": {"bash": "deny"}}, "off": {"mode": "subagent", "disable": true}}`)
	var names []string
	for _, a := range s.Agents() {
		names = append(names, a.Name+":"+a.Mode)
	}
	if got := strings.Join(names, " "); got != "build:primary plan:primary general:subagent explore:subagent reviewer:subagent" {
		t.Fatalf("agents = %s", got)
	}
	ctx := context.Background()
	parent, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	turnOf(t, s, parent.ID, text("task: reviewer | run: echo reviewed"))()
	if len(perms.List("", "")) != 0 {
		t.Fatal("a person was asked")
	}
	children, err := s.Children(ctx, parent.ID)
	if err != nil || len(children) != 1 || children[0].Agent != "reviewer" {
		t.Fatalf("children = %+v, %v", children, err)
	}
	msgs, err := s.Messages(ctx, children[0].ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var refused bool
	for _, m := range msgs.Items {
		for _, p := range m.Parts {
			refused = refused || (p.Type == "tool" && p.Tool == "bash" && p.State.Status == "error" && strings.Contains(p.State.Error, "prevents"))
		}
	}
	if !refused {
		t.Fatal("the reviewer's own deny did not hold")
	}
	reply, err := s.Prompt(ctx, parent.ID, text("task: off | run: ls"))
	if err != nil {
		t.Fatal(err)
	}
	if got := finalText(reply); !strings.Contains(got, "not a valid agent type") {
		t.Fatalf("a disabled agent ran: %q", got)
	}
}
