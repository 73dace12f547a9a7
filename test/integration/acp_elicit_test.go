//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestACPPutsAnMCPServersRequestToTheEditor runs server-everything under `tandem acp`: its link
// request reaches the editor as a permission request it answers, and its form with text to type
// stays in the pending list, where REST answers it while the editor is never asked.
func TestACPPutsAnMCPServersRequestToTheEditor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	entry := testenv.ServerEverything(t)
	data, project := t.TempDir(), t.TempDir()
	env := []string{"TANDEM_SERVER_PASSWORD=" + testPassword, "XDG_STATE_HOME=" + data, "XDG_CONFIG_HOME=" + data, "HOME=" + data}
	e := startACP(t, env, "--port", "0", "--dir", project, "--data-dir", data)
	ctx, cancel := context.WithTimeout(t.Context(), 2*waitLimit)
	defer cancel()
	if err := e.rest.AddMCP(ctx, "everything", map[string]any{"type": "local", "command": []string{"node", entry, "stdio"}}); err != nil {
		t.Fatal(err)
	}
	s := newACPSession(t, e, project)

	// The editor allows the MCP tool once and answers the server's request with the option whose ID
	// starts with pick; what it was asked is kept.
	var (
		mu       sync.Mutex
		mcpAsked []acp.RequestPermissionRequest
	)
	asked := func() []acp.RequestPermissionRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]acp.RequestPermissionRequest(nil), mcpAsked...)
	}
	answer := func(pick string) {
		e.setAnswer(func(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
			key := "once"
			if tandem, _ := p.Meta["tandem"].(map[string]any); tandem["elicitationID"] != nil {
				mu.Lock()
				mcpAsked = append(mcpAsked, p)
				mu.Unlock()
				key = pick
			}
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: acp.PermissionOptionId(key)}}}, nil
		})
	}

	t.Run("a link to open is asked in the editor, with the URL and its domain, and Open completes the tool", func(t *testing.T) {
		answer("tandem-open")
		from := e.mark()
		link := "https://connect.example.test/authorize?state=acp"
		if stop := prompt(t, e, s.SessionId, `mcp: everything trigger-url-elicitation {"url":"`+link+`","elicitationId":"el-acp"}`); stop != acp.StopReasonEndTurn {
			t.Fatalf("stop reason %q", stop)
		}
		if n := len(asked()); n != 1 {
			t.Fatalf("the editor was asked %d times about the link, want once", n)
		}
		req := asked()[0]
		var offered []string
		for _, o := range req.Options {
			offered = append(offered, string(o.OptionId)+":"+string(o.Kind))
		}
		if got := strings.Join(offered, " "); got != "tandem-open:allow_once tandem-decline:reject_once" {
			t.Fatalf("options %s", got)
		}
		shown := ""
		for _, c := range req.ToolCall.Content {
			if c.Content != nil && c.Content.Content.Text != nil {
				shown += c.Content.Content.Text.Text
			}
		}
		if req.ToolCall.Title == nil || !strings.Contains(*req.ToolCall.Title, "connect.example.test") || !strings.Contains(shown, link) {
			t.Fatalf("the request shows title %v and %q; want the domain and the link", req.ToolCall.Title, shown)
		}
		done := false
		for _, tc := range toolsIn(e.since(from)) {
			if tc.status == acp.ToolCallStatusCompleted && strings.Contains(contentText(tc.content), "User completed the URL elicitation flow") {
				done = true
			}
		}
		if !done {
			t.Fatalf("the tool did not complete with the accepted link; updates: %s", agentText(e.since(from)))
		}
	})

	t.Run("a form with text to type waits in the pending list and REST answers it; the editor is not asked", func(t *testing.T) {
		answer("tandem-accept")
		mu.Lock()
		mcpAsked = nil
		mu.Unlock()
		stopped := promptAsync(t, e, s.SessionId, "mcp: everything trigger-elicitation-request {}")
		var form client.Elicitation
		testenv.Eventually(t, "the form to wait in GET /mcp/elicitation", func() bool {
			list, err := e.rest.Elicitations(ctx)
			if err != nil || len(list) != 1 {
				return false
			}
			form = list[0]
			return true
		})
		if form.SessionID != string(s.SessionId) {
			t.Fatalf("the form belongs to %q, want the editor's session", form.SessionID)
		}
		if err := e.rest.ReplyElicitation(ctx, form.ID, "accept", map[string]any{"name": "Ada Lovelace"}); err != nil {
			t.Fatal(err)
		}
		awaitStop(t, stopped, acp.StopReasonEndTurn, "the turn whose form REST answered")
		if len(asked()) != 0 {
			raw, _ := json.Marshal(asked())
			t.Fatalf("the editor was asked about a form it cannot fill in: %s", raw)
		}
	})
}

// contentText is the text of a tool call's content blocks.
func contentText(content []acp.ToolCallContent) string {
	var b strings.Builder
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
		}
	}
	return b.String()
}
