package permission

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestASubagentMayDoOnlyWhatItsParentMay: a child session is judged by its own agent's rules and
// by those of every session above it; the strictest answer holds.
func TestASubagentMayDoOnlyWhatItsParentMay(t *testing.T) {
	user, err := ParseConfig(json.RawMessage(`{"bash": {"*": "ask", "ls *": "allow", "make *": "allow"}}`))
	if err != nil {
		t.Fatal(err)
	}
	rule := func(perm, pattern string, a Action) Rule { return Rule{Permission: perm, Pattern: pattern, Action: a} }
	bash := func(cmd string) tool.Ask {
		return tool.Ask{Permission: "bash", Patterns: []string{cmd}, Always: []string{cmd}}
	}
	plan := Layer{Rules: []Rule{rule("edit", "*", Deny), rule("bash", "*", Deny)}}
	tests := []struct {
		name    string
		child   []Rule // the child's agent's rules
		within  []Layer
		ask     tool.Ask
		asks    bool
		refused string
	}{
		{name: "a child of a session that denies bash cannot run what its own agent allows",
			child: []Rule{rule("bash", "*", Allow)}, within: []Layer{plan}, ask: bash("ls -la"), refused: "the session that started this subagent"},
		{name: "a child of a session that denies edits cannot edit", within: []Layer{plan},
			ask: tool.Ask{Permission: "edit", Patterns: []string{"a.go"}}, refused: "the session that started this subagent"},
		{name: "a parent's session rule that asks makes the child ask",
			within: []Layer{{Session: []Rule{rule("bash", "make *", Ask)}}}, ask: bash("make test"), asks: true},
		{name: "a parent's allow never loosens what the child's rules ask",
			within: []Layer{{Rules: []Rule{rule("bash", "*", Allow)}}}, ask: bash("rm x"), asks: true},
		{name: "what both allow runs without asking", within: []Layer{{}}, ask: bash("ls")},
		{name: "a grandparent's deny holds two levels down",
			within: []Layer{{}, {Rules: []Rule{rule("bash", "ls *", Deny)}}}, ask: bash("ls"), refused: "the session that started"},
		{name: "an edit that also needs a directory the parent denies is refused",
			within: []Layer{{Rules: []Rule{rule("external_directory", "*", Deny)}}},
			ask:    tool.Ask{Permission: "bash", Patterns: []string{"ls"}, With: []tool.Need{{Permission: "external_directory", Pattern: "/tmp/*"}}}, refused: "the session that started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestService(t, "ses_child")
			s.SetConfig(user)
			sc := Scope{SessionID: "ses_child", Directory: "/p", ProjectID: "p", Rules: tt.child, Within: tt.within,
				ParentSessionID: "ses_parent", RootSessionID: "ses_parent"}
			key := ""
			if tt.asks {
				key = KeyOnce
			}
			asked, err := checkAnswering(t, s, sc, tt.ask, key)
			if asked != tt.asks {
				t.Errorf("asked %v, want %v", asked, tt.asks)
			}
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("check: %v, want allowed", err)
			case tt.refused != "" && (!errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("check: %v, want a refusal naming %q", err, tt.refused)
			}
		})
	}
}

// TestASubagentsRequestIsListedUnderItsParent: GET /permission?sessionID=<parent> lists what the
// parent's subagents wait for, each with its own session and its parent's.
func TestASubagentsRequestIsListedUnderItsParent(t *testing.T) {
	s := newTestService(t, "ses_child")
	sc := Scope{SessionID: "ses_child", Directory: "/p", ProjectID: "p", ParentSessionID: "ses_parent", RootSessionID: "ses_root"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Gate(sc).Check(ctx, tool.Ask{Permission: "bash", Patterns: []string{"rm x"}}) }()
	for _, under := range []string{"ses_child", "ses_parent", "ses_root", ""} {
		var listed []Request
		testenv.Eventually(t, "the request is listed under "+under, func() bool { listed = s.List(under, ""); return len(listed) == 1 })
		if r := listed[0]; r.SessionID != "ses_child" || r.ParentSessionID != "ses_parent" || r.RootSessionID != "ses_root" {
			t.Fatalf("listed %+v", r)
		}
	}
	if other := s.List("ses_other", ""); len(other) != 0 {
		t.Fatalf("another session lists %+v", other)
	}
	if err := s.Reply(s.List("ses_parent", "")[0].ID, Answer{Reply: Once}, pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("check after approval: %v", err)
	}
}
