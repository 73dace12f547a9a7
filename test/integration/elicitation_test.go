package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// startWithEverything starts tandem with the reference MCP server (server-everything) configured as
// "everything", and waits until it is connected.
func startWithEverything(t *testing.T) *tandem {
	t.Helper()
	entry := testenv.ServerEverything(t)
	cfg, _ := json.Marshal(map[string]any{"mcp": map[string]any{
		"everything": map[string]any{"type": "local", "command": []string{"node", entry, "stdio"}},
	}})
	td := startTandem(t, setup{config: string(cfg)})
	testenv.Eventually(t, "server-everything connected", func() bool {
		var status map[string]mcpclient.Status
		td.call(t, http.MethodGet, "/mcp", "", http.StatusOK, &status)
		return status["everything"].Status == "connected"
	})
	return td
}

// TestTheAgentCallsServerEverythingAndItsFormIsAnsweredOverREST drives the whole elicitation path
// the way a person does: the demo model calls server-everything's trigger-elicitation-request, the
// tool is approved over REST, the form waits at GET /mcp/elicitation, an invalid answer is refused
// and leaves it pending, and a valid one completes the tool with the answer in its result.
func TestTheAgentCallsServerEverythingAndItsFormIsAnsweredOverREST(t *testing.T) {
	td := startWithEverything(t)
	events := td.subscribe(t)

	sid := td.newSession(t)
	td.promptAsync(t, sid, "mcp: everything trigger-elicitation-request {}")

	// MCP tools ask by default; the permission key is the tool's name.
	var asked []permissionRequest
	testenv.Eventually(t, "the MCP tool asks permission", func() bool { asked = td.pending(t, sid); return len(asked) == 1 })
	if asked[0].Permission != "everything_trigger-elicitation-request" {
		t.Fatalf("permission = %q", asked[0].Permission)
	}
	td.reply(t, asked[0].ID, "once", "")

	var pending []mcpclient.Elicitation
	testenv.Eventually(t, "the form is pending", func() bool {
		td.call(t, http.MethodGet, "/mcp/elicitation", "", http.StatusOK, &pending)
		return len(pending) == 1
	})
	e := pending[0]
	if e.Server != "everything" || e.SessionID != sid || e.Mode != "form" || e.Tool == nil || e.Tool.CallID == "" || e.RequestedSchema == nil {
		t.Fatalf("elicitation = %+v", e)
	}
	events.waitFor(t, "mcp.elicitation.asked", func(ev event) bool { return ev.Type == "mcp.elicitation.asked" })

	status, body := td.request(t, http.MethodPost, "/mcp/elicitation/"+e.ID+"/reply",
		`{"action":"accept","content":{"name":"Ada","integer":500}}`)
	if status != http.StatusBadRequest || !strings.Contains(string(body), "integer") {
		t.Fatalf("invalid content: %d %s, want 400 naming the field", status, body)
	}
	td.call(t, http.MethodGet, "/mcp/elicitation", "", http.StatusOK, &pending)
	if len(pending) != 1 || pending[0].ID != e.ID {
		t.Fatalf("after a refused answer the form must still wait: %+v", pending)
	}

	td.call(t, http.MethodPost, "/mcp/elicitation/"+e.ID+"/reply", `{"action":"accept","content":{"name":"Ada Lovelace"}}`, http.StatusOK, nil)
	events.waitFor(t, "the turn ends", idle(sid))

	var result toolOutcome
	for _, p := range toolParts(td.messages(t, sid)) {
		if p.Tool == "everything_trigger-elicitation-request" {
			result = toolOutcome{status: p.State.Status}
			if p.State.Output != nil {
				result.output = *p.State.Output
			}
		}
	}
	if result.status != "completed" || !strings.Contains(result.output, "Ada Lovelace") {
		t.Fatalf("tool part = %+v, want completed with the answer", result)
	}
	td.call(t, http.MethodGet, "/mcp/elicitation", "", http.StatusOK, &pending)
	if len(pending) != 0 {
		t.Fatalf("answered form still listed: %+v", pending)
	}
}

type toolOutcome struct{ status, output string }

// TestMCPClientsAreAskedWhatTandemsOwnMCPServersAsk: when an MCP server that tandem uses asks for a
// form during a turn started over MCP, the MCP client that started the turn is asked it (on both
// protocol generations), and its answer completes the downstream tool.
func TestMCPClientsAreAskedWhatTandemsOwnMCPServersAsk(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startWithEverything(t)
			var forms []string
			var mu sync.Mutex
			cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &sdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					forms = append(forms, req.Params.Message)
					mu.Unlock()
					if strings.Contains(req.Params.Message, "tandem wants to use") {
						return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
					}
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}, nil
				},
			}, proto)
			_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "mcp: everything trigger-elicitation-request {}"})
			mu.Lock()
			defer mu.Unlock()
			if len(forms) != 2 || !strings.Contains(forms[1], "asked by the MCP server everything") {
				t.Fatalf("the client was asked %q, want the tool's approval then the server's form", forms)
			}
			status, detail := lastTool(t, td, out["sessionId"].(string))
			if status != "completed" || !strings.Contains(detail, "Ada Lovelace") {
				t.Fatalf("tool %s %q", status, detail)
			}
		})
	}
}
