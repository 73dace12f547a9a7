package routes_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// formMCPServer is a real MCP server over Streamable HTTP whose "signup" tool asks for a form.
func formMCPServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "forms", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "signup", Description: "Signs the user up.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var schema map[string]any
			_ = json.Unmarshal([]byte(`{"type":"object","properties":{"name":{"type":"string"},"plan":{"type":"string","enum":["free","pro"],"default":"free"}},"required":["name"]}`), &schema)
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Sign up", RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

type toolCall struct {
	text string
	err  error
}

// callMCPTool runs a tool as the agent would, in the background.
func callMCPTool(m *mcpclient.Manager, name, args string) <-chan toolCall {
	done := make(chan toolCall, 1)
	go func() {
		res, err := m.CallTool(context.Background(), name, json.RawMessage(args), mcpclient.CallInfo{SessionID: "ses_m1", MessageID: "msg_m1", CallID: "call_m1"})
		if err != nil {
			done <- toolCall{err: err}
			return
		}
		done <- toolCall{text: mcpclient.ResultText(res)}
	}()
	return done
}

func awaitTool(t *testing.T, done <-chan toolCall) toolCall {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the tool call did not return")
		return toolCall{}
	}
}

// pendingElicitation polls GET /mcp/elicitation until one is listed.
func pendingElicitation(t *testing.T, s *askServer) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var list []map[string]any
		if err := json.Unmarshal([]byte(s.expect(t, "GET", "/mcp/elicitation", "", 200)), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			return list[0]
		}
	}
	t.Fatal("no elicitation became pending")
	return nil
}

func TestMCPRoutes(t *testing.T) {
	ts := formMCPServer(t)
	m := mcpclient.New(t.Context(), mcpclient.Options{})
	s := startAskServer(t, &routes.MCP{Manager: m})
	t.Cleanup(func() { _ = m.Close() }) // first: its connections hold the MCP server's handlers open

	add := `{"name":"forms","config":{"type":"remote","url":"` + ts.URL + `"}}`
	s.expect(t, "POST", "/mcp", add, 200, `"forms":{"status":"connected"}`)
	if got := s.expect(t, "GET", "/mcp", "", 200); got != `{"forms":{"status":"connected"}}` {
		t.Fatalf("GET /mcp = %s", got)
	}

	t.Run("an elicitation is listed, refused when invalid and answered over REST", func(t *testing.T) {
		done := callMCPTool(m, "forms_signup", `{}`)
		el := pendingElicitation(t, s)
		elID, _ := el["id"].(string)
		if !strings.HasPrefix(elID, "eli_") || el["server"] != "forms" || el["sessionID"] != "ses_m1" || el["mode"] != "form" || el["message"] != "Sign up" {
			t.Fatalf("listed = %v", el)
		}
		if tool, _ := el["tool"].(map[string]any); tool["callID"] != "call_m1" {
			t.Fatalf("tool = %v", el["tool"])
		}
		s.expect(t, "POST", "/mcp/elicitation/"+elID+"/reply", `{"action":"accept","content":{"plan":"pro"}}`, 400, "content.name: required")
		s.expect(t, "POST", "/mcp/elicitation/"+elID+"/reply", `{"action":"accept","content":{"name":"Ada","plan":"gold"}}`, 400, "content.plan")
		s.expect(t, "POST", "/mcp/elicitation/"+elID+"/reply", `{"action":"maybe"}`, 400, "action")
		s.expect(t, "GET", "/mcp/elicitation", "", 200, elID)
		s.expect(t, "POST", "/mcp/elicitation/"+elID+"/reply", `{"action":"accept","content":{"name":"Ada"}}`, 200, "true")
		if r := awaitTool(t, done); r.err != nil || r.text != `{"action":"accept","content":{"name":"Ada","plan":"free"}}` {
			t.Fatalf("tool = %q, %v", r.text, r.err)
		}
		s.expect(t, "GET", "/mcp/elicitation", "", 200, "[]")
		s.expect(t, "POST", "/mcp/elicitation/"+elID+"/reply", `{"action":"cancel"}`, 409)
	})

	t.Run("decline reaches the server", func(t *testing.T) {
		done := callMCPTool(m, "forms_signup", `{}`)
		el := pendingElicitation(t, s)
		s.expect(t, "POST", "/mcp/elicitation/"+el["id"].(string)+"/reply", `{"action":"decline"}`, 200)
		if r := awaitTool(t, done); r.err != nil || r.text != `{"action":"decline"}` {
			t.Fatalf("tool = %q, %v", r.text, r.err)
		}
	})

	t.Run("unknown and malformed elicitation IDs", func(t *testing.T) {
		s.expect(t, "POST", "/mcp/elicitation/eli_nothere/reply", `{"action":"cancel"}`, 404)
		s.expect(t, "POST", "/mcp/elicitation/nothere/reply", `{"action":"cancel"}`, 400, "elicitationID")
	})

	t.Run("disconnect and connect", func(t *testing.T) {
		s.expect(t, "POST", "/mcp/forms/disconnect", "", 200, "true")
		s.expect(t, "GET", "/mcp", "", 200, `{"forms":{"status":"disabled"}}`)
		s.expect(t, "POST", "/mcp/forms/connect", "", 200, "true")
		s.expect(t, "GET", "/mcp", "", 200, `{"forms":{"status":"connected"}}`)
		s.expect(t, "POST", "/mcp/nope/connect", "", 404, "MCP server not found: nope")
		s.expect(t, "POST", "/mcp/nope/disconnect", "", 404)
	})

	t.Run("bad configs get 400 and change nothing", func(t *testing.T) {
		for body, field := range map[string]string{
			`{"name":"x","config":{"type":"local"}}`:                  "config.command",
			`{"name":"x","config":{"type":"remote","url":"file:/x"}}`: "config.url",
			`{"name":"x"}`: "config: required",
			`{"config":{"type":"local","command":["x"]}}`:                      "name: required",
			`{"name":"x","config":{"type":"local","command":["x"],"bogus":1}}`: "bogus",
		} {
			s.expect(t, "POST", "/mcp", body, 400, field)
		}
		s.expect(t, "GET", "/mcp", "", 200, `{"forms":{"status":"connected"}}`)
	})

	t.Run("an unreachable server is listed as failed", func(t *testing.T) {
		s.expect(t, "POST", "/mcp", `{"name":"gone","config":{"type":"remote","url":"http://127.0.0.1:1/mcp"}}`, 200, `"gone":{"status":"failed","error":`)
	})
}

// TestMCPRoutesWithServerEverything is the README's walkthrough: add the reference server with one
// POST /mcp and answer its elicitation over REST.
func TestMCPRoutesWithServerEverything(t *testing.T) {
	entry := testenv.ServerEverything(t)
	m := mcpclient.New(t.Context(), mcpclient.Options{})
	s := startAskServer(t, &routes.MCP{Manager: m})
	t.Cleanup(func() { _ = m.Close() })
	cfg, _ := json.Marshal(map[string]any{"name": "everything", "config": map[string]any{"type": "local", "command": []string{"node", entry, "stdio"}}})
	s.expect(t, "POST", "/mcp", string(cfg), 200, `"everything":{"status":"connected"}`)

	done := callMCPTool(m, "everything_trigger-elicitation-request", `{}`)
	el := pendingElicitation(t, s)
	s.expect(t, "POST", "/mcp/elicitation/"+el["id"].(string)+"/reply", `{"action":"accept","content":{"name":"Ada Lovelace","email":"nope"}}`, 400, "content.email")
	s.expect(t, "POST", "/mcp/elicitation/"+el["id"].(string)+"/reply", `{"action":"accept","content":{"name":"Ada Lovelace","email":"ada@example.com"}}`, 200)
	if r := awaitTool(t, done); r.err != nil || !strings.Contains(r.text, "User provided the requested information") || !strings.Contains(r.text, "ada@example.com") {
		t.Fatalf("tool = %q, %v", r.text, r.err)
	}
}

func TestQuestionAndMCPOperationsAreDocumented(t *testing.T) {
	api := &routes.API{Modules: []routes.Module{&routes.Questions{}, &routes.MCP{}}}
	doc, err := api.Document()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	for path, ops := range map[string]map[string]string{
		"/question":                              {"get": "question.list"},
		"/question/{requestID}/reply":            {"post": "question.reply"},
		"/question/{requestID}/reject":           {"post": "question.reject"},
		"/mcp":                                   {"get": "mcp.status", "post": "mcp.add"},
		"/mcp/{name}/connect":                    {"post": "mcp.connect"},
		"/mcp/{name}/disconnect":                 {"post": "mcp.disconnect"},
		"/mcp/elicitation":                       {"get": "mcp.elicitation.list"},
		"/mcp/elicitation/{elicitationID}/reply": {"post": "mcp.elicitation.reply"},
	} {
		for method, opID := range ops {
			if got := d.Paths[path][method].OperationID; got != opID {
				t.Errorf("%s %s operationId = %q, want %q", method, path, got, opID)
			}
		}
	}
}
