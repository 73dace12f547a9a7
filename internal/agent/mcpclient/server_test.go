package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// The test binary doubles as a stdio MCP server: run with TANDEM_MCP_TEST_SERVER=stdio it serves
// newTestServer on stdin/stdout instead of running tests, so the manager starts a real child process.
func TestMain(m *testing.M) {
	sandbox.Main() // a confined server starts as the sandbox helper, which then execs it
	if os.Getenv("TANDEM_MCP_TEST_SERVER") == "stdio" {
		if f := os.Getenv("TANDEM_MCP_PIDFILE"); f != "" {
			_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
		if err := newTestServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// profileSchema is the form the ask_profile tool sends: every kind of field the spec allows.
const profileSchema = `{"type":"object","properties":{
 "name":{"type":"string","title":"Name","minLength":2,"maxLength":20},
 "email":{"type":"string","format":"email"},
 "age":{"type":"integer","minimum":0,"maximum":150},
 "color":{"type":"string","enum":["red","green","blue"],"default":"green"},
 "plan":{"type":"string","oneOf":[{"const":"free","title":"Free"},{"const":"pro","title":"Pro"}]},
 "tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]}},
 "subscribe":{"type":"boolean","default":false}},
 "required":["name","email"]}`

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// newTestServer is a real go-sdk MCP server with tools that exercise every path of the client.
func newTestServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "tandem-test", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes its text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return text("echo: " + in.Text), nil
		})
	s.AddTool(&sdk.Tool{Name: "ask_profile", Description: "Asks for a profile with a form.", InputSchema: objectSchema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var schema map[string]any
			_ = json.Unmarshal([]byte(profileSchema), &schema)
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Tell me about you", RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			out, _ := json.Marshal(res)
			return text("elicitation result: " + string(out)), nil
		})
	s.AddTool(&sdk.Tool{Name: "ask_briefly", Description: "Asks, but gives up after 200ms.", InputSchema: objectSchema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			_, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Quick!", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
			return text(fmt.Sprintf("gave up: %v", err != nil)), nil
		})
	s.AddTool(&sdk.Tool{Name: "open_link", Description: "Asks the user to visit a page.", InputSchema: objectSchema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", URL: "https://auth.example.com/connect?x=1", ElicitationID: "link-1", Message: "Connect your account"})
			if err != nil {
				return nil, err
			}
			if res.Action == "accept" {
				_ = req.Session.NotifyElicitationComplete(ctx, &sdk.ElicitationCompleteParams{ElicitationID: "link-1"})
			}
			return text("url elicitation: " + res.Action), nil
		})
	var authorised sync.Map // session ID (or "stdio") → true once the -32042 step was shown
	s.AddTool(&sdk.Tool{Name: "needs_url", Description: "Refuses to run until a page was visited.", InputSchema: objectSchema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			key := req.Session.ID() + "/"
			if _, ok := authorised.LoadOrStore(key, true); !ok {
				return nil, sdk.URLElicitationRequiredError([]*sdk.ElicitParams{{
					Mode: "url", URL: "https://login.example.org/authorize", ElicitationID: "pre-1", Message: "Sign in first",
				}})
			}
			return text("authorised call done"), nil
		})
	s.AddTool(&sdk.Tool{Name: "add_tool", Description: "Adds a tool named by its argument.", InputSchema: objectSchema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			s.AddTool(&sdk.Tool{Name: in.Name, InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text("new tool"), nil
			})
			return text("added " + in.Name), nil
		})
	s.AddTool(&sdk.Tool{Name: "write_file", Description: "Writes a file and says whether it could.", InputSchema: objectSchema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Path string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			if err := os.WriteFile(in.Path, []byte("x"), 0o600); err != nil {
				return text("not written: " + err.Error()), nil
			}
			return text("written"), nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: objectSchema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "it broke"}
		})
	return s
}

// httpTestServer serves newTestServer over Streamable HTTP on loopback; when token is non-empty it
// wants "Authorization: Bearer <token>".
func httpTestServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	srv := newTestServer()
	t.Cleanup(func() { // after ts.Close: sessions of clients that vanished without saying goodbye
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}
