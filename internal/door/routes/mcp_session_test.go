package routes_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// demoProviders offers the demo model alone, which calls an MCP tool on "mcp: SERVER TOOL {json}".
type demoProviders struct{ demo *provider.Demo }

func (d demoProviders) Get(id string) (provider.Provider, bool) {
	return d.demo, id == provider.DemoID
}

func (demoProviders) Default() (string, string) { return provider.DemoID, provider.DemoID }

func (demoProviders) Cost(string, string, provider.Usage) float64 { return 0 }

// echoMCPServer is a real MCP server over Streamable HTTP with one tool, "echo".
func echoMCPServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "editor", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes its text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echoed " + in.Text}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

func TestAServerAddedForASessionIsOfferedToItsTurnsAloneAndGoesWithIt(t *testing.T) {
	ts := echoMCPServer(t)
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	m := mcpclient.New(t.Context(), mcpclient.Options{Bus: b, Added: db})
	sessions := session.New(session.Options{DB: db, Bus: b, Version: "test", Deleted: m.EndSession,
		Agent: &session.Agent{Providers: demoProviders{provider.NewDemo()}, Tools: m.Tools, SessionTools: m.SessionTools}})
	s := startAskServer(t, &routes.Sessions{Service: sessions}, &routes.MCP{Manager: m, Sessions: sessions})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
		defer cancel()
		sessions.Shutdown(ctx)
		_ = m.Close()
		b.Close()
		_ = db.Close()
	})

	newSession := func() string {
		var sess session.Session
		if err := json.Unmarshal([]byte(s.expect(t, "POST", "/session", `{}`, 200)), &sess); err != nil {
			t.Fatal(err)
		}
		return sess.ID
	}
	mine, other := newSession(), newSession()
	cfg := `{"type":"remote","url":"` + ts.URL + `"}`
	key := mcpclient.SessionKey("editor", mine)
	s.expect(t, "POST", "/mcp", `{"name":"editor","config":`+cfg+`,"sessionID":"`+mine+`"}`, 200,
		`"`+key+`":{"status":"connected","sessionID":"`+mine+`"}`)
	s.expect(t, "GET", "/mcp", "", 200, `"`+key+`":{"status":"connected","sessionID":"`+mine+`"}`)

	callEcho := `{"parts":[{"type":"text","text":"mcp: editor echo {\"text\":\"hi\"}"}]}`
	t.Run("the session it was added for calls its tool in a turn", func(t *testing.T) {
		s.expect(t, "POST", "/session/"+mine+"/message", callEcho, 200, "`editor_echo` returned:\\nechoed hi")
	})
	t.Run("another session's turn is not offered the tool", func(t *testing.T) {
		got := s.expect(t, "POST", "/session/"+other+"/message", callEcho, 200, "`editor_echo` tool, but it is not available in this session")
		if strings.Contains(got, "echoed hi") {
			t.Fatalf("the other session reached the tool: %s", got)
		}
	})
	t.Run("an unknown session, a malformed one and a project server's name are refused", func(t *testing.T) {
		s.expect(t, "POST", "/mcp", `{"name":"x","config":`+cfg+`,"sessionID":"ses_0000000000000000000000000z"}`, 404)
		s.expect(t, "POST", "/mcp", `{"name":"x","config":`+cfg+`,"sessionID":"nope"}`, 400, "malformed session ID")
		s.expect(t, "POST", "/mcp", `{"name":"editor","config":`+cfg+`}`, 409, "MCP server editor is connected for session "+mine)
		s.expect(t, "POST", "/mcp", `{"name":"project","config":`+cfg+`}`, 200, `"project":{"status":"connected"}`)
		s.expect(t, "POST", "/mcp", `{"name":"project","config":`+cfg+`,"sessionID":"`+other+`"}`, 409, "MCP server project is a server of the project")
		s.expect(t, "DELETE", "/mcp/project", "", 200)
	})
	t.Run("its name works escaped in the URL, as a browser sends it", func(t *testing.T) {
		escaped := "editor%40" + mine
		s.expect(t, "POST", "/mcp/"+escaped+"/disconnect", "", 200, "true")
		s.expect(t, "GET", "/mcp", "", 200, `"`+key+`":{"status":"disabled","sessionID":"`+mine+`"}`)
		s.expect(t, "POST", "/mcp/"+escaped+"/connect", "", 200, "true")
		s.expect(t, "GET", "/mcp", "", 200, `"`+key+`":{"status":"connected","sessionID":"`+mine+`"}`)
	})
	t.Run("deleting the session removes its server", func(t *testing.T) {
		s.expect(t, "DELETE", "/session/"+mine, "", 200)
		if got := s.expect(t, "GET", "/mcp", "", 200); strings.Contains(got, "editor") {
			t.Fatalf("GET /mcp after the session was deleted = %s", got)
		}
		if got := m.SessionToolInfos(mine); len(got) != 0 {
			t.Fatalf("still offered: %+v", got)
		}
		s.expect(t, "DELETE", "/mcp/"+key, "", 404)
		s.expect(t, "POST", "/session/"+other+"/message", callEcho, 200, "not available in this session")
	})
}
