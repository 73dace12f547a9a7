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

func TestDecide(t *testing.T) {
	r := func(pattern string, a Action) Rule { return Rule{Permission: "bash", Pattern: pattern, Action: a} }
	userRules := append(Defaults(), r("npm*", Allow), r("npm publish*", Deny), r("ls *", Allow))
	tests := []struct {
		name        string
		session     []Rule
		command     string
		want        Action
		wantBy      bool // a session rule made it stricter
		wantIgnored bool // a session allow was ignored
	}{
		{name: "the last matching user rule wins", command: "npm publish --tag x", want: Deny},
		{name: "an earlier user allow holds where no later rule matches", command: "npm ci", want: Allow},
		{name: "with no rule matching, the default asks", command: "rm x", want: Ask},
		{name: "a session allow cannot beat a user ask", session: []Rule{r("*", Allow)}, command: "rm x", want: Ask, wantIgnored: true},
		{name: "a session allow cannot beat a user deny", session: []Rule{r("*", Allow)}, command: "npm publish", want: Deny, wantIgnored: true},
		{name: "a session allow of what the user allows changes nothing and is not reported", session: []Rule{r("*", Allow)}, command: "npm ci", want: Allow},
		{name: "a session ask turns a user allow into an ask", session: []Rule{r("npm *", Ask)}, command: "npm ci", want: Ask, wantBy: true},
		{name: "a session deny beats a user allow", session: []Rule{r("ls *", Deny)}, command: "ls -la", want: Deny, wantBy: true},
		{name: "a session ask does not soften a user deny", session: []Rule{r("*", Ask)}, command: "npm publish", want: Deny},
		{
			name:    "a session allow makes an exception to the session's own deny, within what the user allows",
			session: []Rule{r("*", Deny), r("ls *", Allow)}, command: "ls -la", want: Allow,
		},
		{
			name:    "outside the exception the session's deny holds",
			session: []Rule{r("*", Deny), r("ls *", Allow)}, command: "npm ci", want: Deny, wantBy: true,
		},
		{
			name:    "the session's last matching rule is the one that counts",
			session: []Rule{r("*", Deny), r("*", Allow)}, command: "rm x", want: Ask, wantIgnored: true,
		},
		{
			name:    "a session rule for another permission changes nothing",
			session: []Rule{{Permission: "edit", Pattern: "*", Action: Deny}}, command: "ls", want: Allow,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, by, ignored := Decide(userRules, tt.session, "bash", tt.command)
			if got != tt.want || (by != nil) != tt.wantBy || (ignored != nil) != tt.wantIgnored {
				t.Fatalf("Decide(%q) = %s, by %v, ignored %v; want %s, by %v, ignored %v", tt.command, got, by, ignored, tt.want, tt.wantBy, tt.wantIgnored)
			}
		})
	}
}

// TestClientRulesOnlyTighten runs calls through the gate: the user's configuration, remembered
// grants and a client's session rules together.
func TestClientRulesOnlyTighten(t *testing.T) {
	user, err := ParseConfig(json.RawMessage(`{"bash": {"*": "ask", "echo *": "allow", "git push *": "deny"}}`))
	if err != nil {
		t.Fatal(err)
	}
	allowAll := []Rule{{Permission: "bash", Pattern: "*", Action: Allow}}
	bash := func(cmd, family string) tool.Ask {
		return tool.Ask{Permission: "bash", Patterns: []string{cmd}, Always: []string{family}, Metadata: map[string]any{"command": cmd}}
	}
	tests := []struct {
		name    string
		session []Rule
		grant   *NewGrant // added by hand before the call
		ask     tool.Ask
		asks    bool // the call waits for a person (answered "once")
		refused bool
	}{
		{name: "an allow-all session cannot run what the user denies", session: allowAll, ask: bash("git push origin main", "git push *"), refused: true},
		{name: "an allow-all session still asks for what the user asks", session: allowAll, ask: bash("rm -rf build", "rm *"), asks: true},
		{name: "an allow-all session runs what the user allows", session: allowAll, ask: bash("echo hi", "echo *")},
		{name: "a session deny refuses what the user allows", session: []Rule{{Permission: "bash", Pattern: "echo *", Action: Deny}}, ask: bash("echo hi", "echo *"), refused: true},
		{name: "a session ask asks for what the user allows", session: []Rule{{Permission: "*", Pattern: "*", Action: Ask}}, ask: bash("echo hi", "echo *"), asks: true},
		{
			name:  "an always grant never beats a user deny",
			grant: &NewGrant{Permission: "bash", Pattern: "git push *", Action: Allow}, ask: bash("git push origin main", "git push *"), refused: true,
		},
		{
			name: "an always grant never beats a session deny", session: []Rule{{Permission: "bash", Pattern: "make *", Action: Deny}},
			grant: &NewGrant{Permission: "bash", Pattern: "make *", Action: Allow}, ask: bash("make test", "make *"), refused: true,
		},
		{
			name:  "an always grant answers what the user asks, whatever a session allows",
			grant: &NewGrant{Permission: "bash", Pattern: "make *", Action: Allow}, session: allowAll, ask: bash("make test", "make *"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestService(t, "ses_1")
			s.SetConfig(user)
			if tt.grant != nil {
				if _, err := s.AddGrant(t.Context(), "p", *tt.grant, pending.Who{Client: "test"}); err != nil {
					t.Fatal(err)
				}
			}
			sc := Scope{SessionID: "ses_1", Directory: "/p", ProjectID: "p", Session: tt.session}
			key := ""
			if tt.asks {
				key = KeyOnce
			}
			asked, err := checkAnswering(t, s, sc, tt.ask, key)
			if asked != tt.asks {
				t.Errorf("asked %v, want %v", asked, tt.asks)
			}
			if refused := errors.Is(err, ErrRejected); refused != tt.refused || (err != nil && !refused) {
				t.Errorf("check: %v, want refused %v", err, tt.refused)
			}
		})
	}
}

func TestAnIgnoredClientAllowIsShownToWhoeverAnswers(t *testing.T) {
	s := newTestService(t, "ses_1")
	allowAll := []Rule{{Permission: "bash", Pattern: "*", Action: Allow}}
	sc := Scope{SessionID: "ses_1", Directory: "/p", ProjectID: "p", Session: allowAll}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- s.Gate(sc).Check(ctx, tool.Ask{Permission: "bash", Patterns: []string{"rm x"}, Always: []string{"rm *"}})
	}()
	var waiting []Request
	testenv.Eventually(t, "the call asks", func() bool { waiting = s.List("ses_1", ""); return len(waiting) == 1 })
	ignored, _ := waiting[0].Metadata["ignoredSessionRules"].([]Rule)
	if len(ignored) != 1 || ignored[0] != allowAll[0] {
		t.Errorf("metadata %v, want the session's allow-all reported as ignored", waiting[0].Metadata)
	}
	if err := s.Reply(waiting[0].ID, Answer{Reply: Reject}, pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrRejected) {
		t.Fatalf("check: %v", err)
	}
}

// TestADenyConfiguredWhileARequestWaitsBeatsItsAnswer: a person's "once" and a grant that settles
// the waiting request both come after the deny, and the deny still wins.
func TestADenyConfiguredWhileARequestWaitsBeatsItsAnswer(t *testing.T) {
	deny, err := ParseConfig(json.RawMessage(`{"bash": {"rm *": "deny"}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		answer func(t *testing.T, s *Service, waiting Request)
	}{
		{"an answer of once", func(t *testing.T, s *Service, waiting Request) {
			if err := s.Reply(waiting.ID, Answer{Reply: Once}, pending.Who{Client: "test"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"an allow grant that settles it", func(t *testing.T, s *Service, _ Request) {
			if _, err := s.AddGrant(t.Context(), "p", NewGrant{Permission: "bash", Pattern: "rm *", Action: Allow}, pending.Who{Client: "test"}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestService(t, "ses_1")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- s.Gate(Scope{SessionID: "ses_1", Directory: "/p", ProjectID: "p"}).Check(ctx, tool.Ask{Permission: "bash", Patterns: []string{"rm x"}, Always: []string{"rm *"}})
			}()
			var waiting []Request
			testenv.Eventually(t, "the call asks", func() bool { waiting = s.List("ses_1", ""); return len(waiting) == 1 })
			s.SetConfig(deny)
			tt.answer(t, s, waiting[0])
			if err := <-done; !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "The user has specified a rule") {
				t.Fatalf("check: %v, want the configured deny", err)
			}
		})
	}
}
