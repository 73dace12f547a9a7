package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// gateFunc is a permission checkpoint that records what it was asked.
type gateFunc struct {
	mu     sync.Mutex
	asks   []tool.Ask
	decide func(tool.Ask) error
}

func (g *gateFunc) Check(_ context.Context, a tool.Ask) error {
	g.mu.Lock()
	g.asks = append(g.asks, a)
	g.mu.Unlock()
	return g.decide(a)
}

func findTool(t *testing.T, m *Manager, name string) tool.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func TestMCPToolsAskPermissionUnderTheirOwnName(t *testing.T) {
	e := newEnv(t, Options{})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	echo := findTool(t, e.m, "go_echo")
	if echo.Description() != "Echoes its text." || !strings.Contains(string(echo.Parameters()), `"required":["text"]`) {
		t.Fatalf("echo tool = %q %s", echo.Description(), echo.Parameters())
	}

	allow := &gateFunc{decide: func(tool.Ask) error { return nil }}
	res, err := echo.Run(t.Context(), &tool.Call{ID: "call_1", SessionID: "ses_1", Input: json.RawMessage(`{"text":"hi"}`), Gate: allow})
	if err != nil || res.Output != "echo: hi" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if len(allow.asks) != 1 || allow.asks[0].Permission != "go_echo" || len(allow.asks[0].Patterns) != 1 || allow.asks[0].Patterns[0] != "*" {
		t.Fatalf("asks = %+v", allow.asks)
	}

	refused := errors.New("The user rejected permission to use this specific tool call.")
	deny := &gateFunc{decide: func(tool.Ask) error { return refused }}
	if _, err := echo.Run(t.Context(), &tool.Call{ID: "call_2", SessionID: "ses_1", Input: json.RawMessage(`{"text":"hi"}`), Gate: deny}); err != refused {
		t.Fatalf("refused Run = %v, want the gate's error unchanged", err)
	}

	if _, err := findTool(t, e.m, "go_fail").Run(t.Context(), &tool.Call{ID: "call_3", Gate: allow}); err == nil || !strings.Contains(err.Error(), "it broke") {
		t.Fatalf("failing tool = %v", err)
	}
}

func TestAnElicitationNamesTheToolCallThatCausedIt(t *testing.T) {
	e := newEnv(t, Options{})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	allow := &gateFunc{decide: func(tool.Ask) error { return nil }}
	done := make(chan error, 1)
	turn, abort := context.WithCancel(t.Context())
	defer abort()
	go func() {
		_, err := findTool(t, e.m, "go_open_link").Run(turn, &tool.Call{ID: "call_77", MessageID: "msg_77", SessionID: "ses_77", Dir: "/work/x", Gate: allow})
		done <- err
	}()
	asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
	el, ok := e.m.Elicitation(asked.Properties["id"].(string))
	if !ok || el.SessionID != "ses_77" || el.Tool == nil || *el.Tool != (ToolRef{MessageID: "msg_77", CallID: "call_77"}) || el.directory != "/work/x" {
		t.Fatalf("elicitation = %+v", el)
	}
	abort() // the turn is aborted: its elicitation is withdrawn and the tool fails
	if err, _ := testenv.Recv(t, done, "the tool's result"); err == nil {
		t.Fatal("the tool succeeded although its turn was aborted")
	}
	if _, ok := e.m.Elicitation(el.ID); ok {
		t.Fatal("the aborted turn's elicitation is still pending")
	}
}
