package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/permission"
)

// oneToolServer serves one tool over Streamable HTTP that answers with who it is.
func oneToolServer(t *testing.T, tool, says string) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: says, Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: tool, InputSchema: objectSchema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text(says), nil })
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

func TestCollidingToolNamesStayDistinct(t *testing.T) {
	for _, order := range [][2]string{{"a_b", "a"}, {"a", "a_b"}} {
		t.Run("connecting "+order[0]+" first", func(t *testing.T) {
			servers := map[string]*httptest.Server{ // before the manager: it must close first
				"a_b": oneToolServer(t, "c", "server a_b, tool c"),
				"a":   oneToolServer(t, "b_c", "server a, tool b_c"),
			}
			e := newEnv(t, Options{})
			for _, name := range order {
				mustAdd(t, e, name, remoteConfig(servers[name].URL, nil))
			}
			infos := e.m.ToolInfos()
			if len(infos) != 2 || infos[0].Name == infos[1].Name {
				t.Fatalf("tools = %+v, want two distinct names", infos)
			}
			for _, info := range infos {
				// "a_b_c" reads only as server a, tool b_c: server a_b's tool c is named apart.
				if (info.Name == "a_b_c") != (info.Server == "a") {
					t.Fatalf("%s/%s is named %s", info.Server, info.Tool, info.Name)
				}
				if want := QualifiedName(info.Server, info.Tool); info.Name != want {
					t.Fatalf("%s/%s is named %s, want %s whatever the order", info.Server, info.Tool, info.Name, want)
				}
				res, err := e.m.CallTool(t.Context(), info.Name, json.RawMessage(`{}`), call1)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := resultText(res), "server "+info.Server+", tool "+info.Tool; got != want {
					t.Fatalf("calling %s reached %q, want %q", info.Name, got, want)
				}
				// A rule written for a_b_c allows server a's tool b_c and never server a_b's tool c.
				rules := append(permission.Defaults(), permission.Rule{Permission: "a_b_c", Pattern: "*", Action: permission.Allow})
				if allowed := permission.Evaluate(rules, info.Name, "*") == permission.Allow; allowed != (info.Server == "a") {
					t.Fatalf("a rule on a_b_c: allowed=%v for %s/%s", allowed, info.Server, info.Tool)
				}
			}
		})
	}
}
