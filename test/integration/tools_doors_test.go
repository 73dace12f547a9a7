//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
)

// A subagent's approval shown at the other doors (ACP, Codex's app-server, MCP), whose test
// helpers run the real binary and are Linux-only.

// TestAnACPEditorAnswersASubagentsApproval: the editor looks at the session that started a task;
// the subagent's bash request reaches it there, and the turn ends with the child's output.
func TestAnACPEditorAnswersASubagentsApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	data, project := t.TempDir(), t.TempDir()
	env := []string{"TANDEM_SERVER_PASSWORD=" + testPassword, "XDG_STATE_HOME=" + data, "XDG_CONFIG_HOME=" + data, "HOME=" + data}
	e := startACP(t, env, "--port", "0", "--dir", project, "--data-dir", data)
	s := newACPSession(t, e, project)
	e.setAnswer(choose("once"))
	from := e.mark()

	if stop := prompt(t, e, s.SessionId, "task: general | run: echo acp-child-$((6*7))"); stop != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %q", stop)
	}

	e.mu.Lock()
	var kinds []string
	for _, req := range e.asked {
		if req.ToolCall.Title != nil {
			kinds = append(kinds, *req.ToolCall.Title)
		}
	}
	n := len(e.asked)
	e.mu.Unlock()
	if n != 2 {
		t.Fatalf("the editor was asked %d times (%q), want the task and the child's bash", n, kinds)
	}
	if got := agentText(e.since(from)); !strings.Contains(got, "acp-child-42") {
		t.Fatalf("the answer %q lacks the child's output", got)
	}
}

// TestTheCodexDoorAsksASubagentsApprovalInTheParentsTurn: a Codex client's thread is the parent
// session; the subagent's command approval arrives in the thread's running turn, is accepted there,
// and the command runs.
func TestTheCodexDoorAsksASubagentsApprovalInTheParentsTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	env, data := appEnv(t)
	// The user's own configuration lets task start subagents without asking.
	if err := os.MkdirAll(filepath.Join(data, "tandem"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tandem", "tandem.json"), []byte(`{"permission": {"task": "allow"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	p := startAppServer(t, env, "--port", "0", "--dir", project, "--data-dir", data)
	c := p.stdioClient(t)
	c.t = t
	c.initialize()
	threadID := c.startThread(project)

	turnID, from := c.turn(threadID, "task: general | run: touch from-the-child.txt")
	req := c.asked(from, "item/commandExecution/requestApproval")
	if req.str("command") != "touch from-the-child.txt" || req.str("turnId") != turnID {
		t.Fatalf("approval params %s", req.Params)
	}
	c.answer(req, map[string]any{"decision": "accept"})
	if st := c.completed(from, turnID); st != "completed" {
		t.Fatalf("turn ended %s", st)
	}
	if _, err := os.Stat(filepath.Join(project, "from-the-child.txt")); err != nil {
		t.Fatalf("the child's command did not run: %v", err)
	}
}

// TestAnMCPClientIsAskedASubagentsApproval: the tandem MCP tool's session starts a task; the
// subagent's bash approval reaches the MCP client as a form, and the tool's answer carries the
// child's output.
func TestAnMCPClientIsAskedASubagentsApproval(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startTandem(t, setup{config: `{"permission": {"task": "allow"}}`})
			var messages []string
			var mu sync.Mutex
			cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					messages = append(messages, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
				},
			}, proto)
			res, _ := callTool(t, cs, "tandem", map[string]any{"prompt": "task: general | run: echo mcp-child"})
			mu.Lock()
			defer mu.Unlock()
			if len(messages) != 1 || !strings.Contains(messages[0], "echo mcp-child") {
				t.Fatalf("the MCP client was asked %q, want the child's command once", messages)
			}
			b, _ := json.Marshal(res.Content)
			if !strings.Contains(string(b), "mcp-child") {
				t.Fatalf("the tool's answer %s lacks the child's output", b)
			}
		})
	}
}
