package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"tandem/mcp"
	"tandem/testenv"
)

// TestTheAgentCallsServerEverythingAndItsFormIsAnsweredOverREST drives the whole elicitation path
// the way a person does: the demo model calls server-everything's trigger-elicitation-request, the
// tool is approved over REST, the form waits at GET /mcp/elicitation, an invalid answer is refused
// and leaves it pending, and a valid one completes the tool with the answer in its result.
func TestTheAgentCallsServerEverythingAndItsFormIsAnsweredOverREST(t *testing.T) {
	entry := testenv.ServerEverything(t)
	cfg, _ := json.Marshal(map[string]any{"mcp": map[string]any{
		"everything": map[string]any{"type": "local", "command": []string{"node", entry, "stdio"}},
	}})
	td := startTandem(t, setup{config: string(cfg)})
	events := td.subscribe(t)

	testenv.Eventually(t, "server-everything connected", func() bool {
		var status map[string]mcp.Status
		td.call(t, http.MethodGet, "/mcp", "", http.StatusOK, &status)
		return status["everything"].Status == "connected"
	})
	sid := td.newSession(t)
	td.promptAsync(t, sid, "mcp: everything trigger-elicitation-request {}")

	// MCP tools ask by default; the permission key is the tool's name.
	var asked []permissionRequest
	testenv.Eventually(t, "the MCP tool asks permission", func() bool { asked = td.pending(t, sid); return len(asked) == 1 })
	if asked[0].Permission != "everything_trigger-elicitation-request" {
		t.Fatalf("permission = %q", asked[0].Permission)
	}
	td.reply(t, asked[0].ID, "once", "")

	var pending []mcp.Elicitation
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
