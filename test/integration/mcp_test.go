package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/door/mcpserver"
)

// The protocol generations tandem's MCP server speaks: 2025-11-25 asks approvals with server-initiated
// elicitation/create; 2026-07-28 (stateless) returns them as input-required results that the go-sdk
// client answers and retries (multi-round-trip, SEP-2322).
var mcpVersions = []string{"2025-11-25", "2026-07-28"}

// connectMCP connects a go-sdk client to tandem's MCP server over in-memory transports; proto ""
// lets the client pick (the newest).
func connectMCP(t *testing.T, td *tandem, strategy mcpserver.Strategy, timeout time.Duration, opts *mcp.ClientOptions, proto string) *mcp.ClientSession {
	t.Helper()
	srv := td.m.MCPServer(strategy, timeout).MCP()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcp-test", Version: "1"}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	return res, sc
}

func TestMCPStartReplyAndSessions(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startTandem(t, setup{})
			cs := connectMCP(t, td, mcpserver.Deny, time.Minute, nil, proto)

			_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "hello there"})
			sid, _ := out["sessionId"].(string)
			if !strings.HasPrefix(sid, "ses_") || out["status"] != "completed" || out["answer"] == "" {
				t.Fatalf("tandem: %v", out)
			}
			_, again := callTool(t, cs, "tandem-reply", map[string]any{"sessionId": sid, "prompt": "and again"})
			if again["sessionId"] != sid || again["status"] != "completed" {
				t.Fatalf("tandem-reply: %v", again)
			}
			if n := len(td.messages(t, sid)); n != 4 {
				t.Fatalf("session has %d messages after two turns, want 4", n)
			}
			_, list := callTool(t, cs, "tandem-sessions", map[string]any{})
			sessions, _ := list["sessions"].([]any)
			if len(sessions) != 1 || sessions[0].(map[string]any)["client"] != "mcp-test" {
				t.Fatalf("tandem-sessions: %v", list)
			}
		})
	}
}

// TestMCPApprovalThroughElicitation: the approval form is the request's decision list, and each of
// its keys, chosen in the MCP client, has the effect it has over REST.
func TestMCPApprovalThroughElicitation(t *testing.T) {
	type grant struct{ Permission, Pattern, Action string }
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			for _, tc := range []struct {
				name, decision, message string
				wantOutput              bool
				wantGrants              []grant
				secondAsks              bool // the same command again in the session asks again
			}{
				{name: "allow once runs the command and remembers nothing", decision: "once", wantOutput: true, secondAsks: true},
				{name: "allow for the session runs it, and the same family again in the session without asking, storing no grant",
					decision: "session", wantOutput: true},
				{name: "allow always runs it and stores an allow grant for the family", decision: "always", wantOutput: true,
					wantGrants: []grant{{"bash", "echo *", "allow"}}},
				{name: "reject with a message stops the command and tells the agent", decision: "reject", message: "not today", secondAsks: true},
				{name: "reject-with-message stops the command and tells the agent", decision: "reject-with-message", message: "use printf", secondAsks: true},
				{name: "deny-always stops it and stores a deny grant, so the next call is refused without asking",
					decision: "deny-always", wantGrants: []grant{{"bash", "echo *", "deny"}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					td := startTandem(t, setup{})
					var asked atomic.Int32
					var first struct {
						message string
						schema  json.RawMessage
					}
					cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &mcp.ClientOptions{
						ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
							if asked.Add(1) == 1 {
								first.message = req.Params.Message
								first.schema, _ = json.Marshal(req.Params.RequestedSchema)
							}
							return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": tc.decision, "message": tc.message}}, nil
						},
					}, proto)
					_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo elicited"})
					sid := out["sessionId"].(string)
					if !strings.Contains(first.message, "echo elicited") || !strings.Contains(first.message, td.project) {
						t.Fatalf("elicitation message %q names neither the command nor the directory", first.message)
					}
					var schema struct {
						Properties struct {
							Decision struct {
								OneOf []struct{ Const, Title string }
							}
						}
					}
					if err := json.Unmarshal(first.schema, &schema); err != nil {
						t.Fatal(err)
					}
					var keys []string
					for _, c := range schema.Properties.Decision.OneOf {
						keys = append(keys, c.Const)
					}
					if !slices.Equal(keys, everyKey) || !strings.Contains(schema.Properties.Decision.OneOf[2].Title, "echo *") {
						t.Fatalf("the form offers %v (%s), want the request's decisions %v", keys, first.schema, everyKey)
					}
					status, detail := lastTool(t, td, sid)
					if tc.wantOutput != (status == "completed" && detail == "elicited\n") {
						t.Fatalf("%s: tool %s %q", tc.decision, status, detail)
					}
					if tc.message != "" && !strings.Contains(detail, tc.message) {
						t.Fatalf("reject message missing from %q", detail)
					}
					var grants []grant
					td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
					if !slices.Equal(grants, tc.wantGrants) {
						t.Fatalf("grants %+v, want %+v", grants, tc.wantGrants)
					}
					var history []struct{ Reply, Client string }
					td.call(t, http.MethodGet, "/permission/history?sessionID="+sid, "", http.StatusOK, &history)
					if len(history) != 1 || history[0].Reply != tc.decision || history[0].Client != "mcp:mcp-test" {
						t.Fatalf("decision log %+v, want %s by mcp:mcp-test", history, tc.decision)
					}

					callTool(t, cs, "tandem-reply", map[string]any{"sessionId": sid, "prompt": "run: echo again"})
					if got := asked.Load() == 2; got != tc.secondAsks {
						t.Fatalf("the same family again in the session: asked %d times in all", asked.Load())
					}
				})
			}
		})
	}
}

// TestMCPApprovalAnswerTheRequestRefusesIsAskedAgain: an answer the permission service refuses
// (reject-with-message without a message) is not taken; the client is asked again and its valid
// answer counts. (A key outside the form cannot arrive: the SDK checks the answer against the form.)
func TestMCPApprovalAnswerTheRequestRefusesIsAskedAgain(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				first map[string]any
			}{
				{"reject-with-message without a message", map[string]any{"decision": "reject-with-message"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					td := startTandem(t, setup{})
					var asked atomic.Int32
					cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &mcp.ClientOptions{
						ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
							if asked.Add(1) == 1 {
								return &mcp.ElicitResult{Action: "accept", Content: tc.first}, nil
							}
							return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "reject-with-message", "message": "second try"}}, nil
						},
					}, proto)
					_, out := callTool(t, cs, "tandem", map[string]any{"prompt": `run: eval "$(echo echo x)"`})
					status, detail := lastTool(t, td, out["sessionId"].(string))
					if asked.Load() != 2 || status != "error" || !strings.Contains(detail, "second try") {
						t.Fatalf("asked %d times; tool %s %q", asked.Load(), status, detail)
					}
				})
			}
		})
	}
}

func lastTool(t *testing.T, td *tandem, sid string) (status, detail string) {
	t.Helper()
	tools := toolParts(td.messages(t, sid))
	if len(tools) == 0 {
		t.Fatal("no tool part")
	}
	p := tools[len(tools)-1]
	if p.State.Status == "completed" {
		return p.State.Status, *p.State.Output
	}
	return p.State.Status, p.State.Error
}

func TestMCPQueryWritesNothingAndAsksNothing(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startTandem(t, setup{})
			cs := connectMCP(t, td, mcpserver.Wait, time.Minute, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					t.Errorf("tandem-query asked the client: %q", req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
				},
			}, proto)
			_, out := callTool(t, cs, "tandem-query", map[string]any{"prompt": "run: touch written-by-query"})
			if out["status"] != "completed" {
				t.Fatalf("tandem-query: %v", out)
			}
			if _, err := os.Stat(filepath.Join(td.project, "written-by-query")); !os.IsNotExist(err) {
				t.Fatalf("tandem-query wrote a file: %v", err)
			}
			for _, p := range toolParts(td.messages(t, out["sessionId"].(string))) {
				if p.State.Status == "completed" {
					t.Fatalf("the read-only session ran %s", p.Tool)
				}
			}
			t.Logf("answer: %v", out["answer"])
			if p := td.pending(t, ""); len(p) != 0 {
				t.Fatalf("tandem-query left requests waiting: %+v", p)
			}
		})
	}
}

func TestMCPApprovalAnsweredOverRESTFirstCancelsTheElicitation(t *testing.T) {
	td := startTandem(t, setup{})
	cancelled := make(chan struct{})
	cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// A person who never answers here: the REST answer must win and cancel this request.
			for {
				if code, body, err := td.try(http.MethodGet, "/permission", ""); err == nil && code == http.StatusOK {
					var reqs []permissionRequest
					if json.Unmarshal(body, &reqs) == nil && len(reqs) == 1 {
						if _, _, err := td.try(http.MethodPost, "/permission/"+reqs[0].ID+"/reply", `{"reply":"once"}`); err != nil {
							return nil, err
						}
						break
					}
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			select {
			case <-ctx.Done():
				close(cancelled)
				return nil, ctx.Err()
			case <-time.After(waitLimit):
				return nil, context.DeadlineExceeded
			}
		},
	}, "2025-11-25")
	_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo rest-won"})
	select {
	case <-cancelled:
	case <-time.After(waitLimit):
		t.Fatal("the elicitation was not cancelled")
	}
	if status, detail := lastTool(t, td, out["sessionId"].(string)); status != "completed" || detail != "rest-won\n" {
		t.Fatalf("tool %s %q", status, detail)
	}
}

func TestMCPClientWithoutElicitation(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			t.Run("deny rejects and says so", func(t *testing.T) {
				td := startTandem(t, setup{})
				cs := connectMCP(t, td, mcpserver.Deny, time.Minute, nil, proto)
				_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo denied"})
				if status, _ := lastTool(t, td, out["sessionId"].(string)); status != "error" {
					t.Fatalf("tool %s", status)
				}
				if !strings.HasPrefix(out["approvals"].(string), "deny") {
					t.Fatalf("approvals %q", out["approvals"])
				}
			})
			t.Run("allow-within-rules runs what the rules allow and rejects the rest", func(t *testing.T) {
				td := startTandem(t, setup{config: `{"permission": {"bash": {"echo *": "allow"}}}`})
				cs := connectMCP(t, td, mcpserver.AllowWithinRules, time.Minute, nil, proto)
				_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo ruled"})
				sid := out["sessionId"].(string)
				if status, detail := lastTool(t, td, sid); status != "completed" || detail != "ruled\n" {
					t.Fatalf("allowed command: %s %q", status, detail)
				}
				_, out = callTool(t, cs, "tandem-reply", map[string]any{"sessionId": sid, "prompt": "run: touch outside-rules"})
				if status, _ := lastTool(t, td, sid); status != "error" {
					t.Fatalf("command outside the rules: %s", status)
				}
				if !strings.HasPrefix(out["approvals"].(string), "allow-within-rules") {
					t.Fatalf("approvals %q", out["approvals"])
				}
			})
			t.Run("wait is rejected when the timeout passes", func(t *testing.T) {
				td := startTandem(t, setup{})
				cs := connectMCP(t, td, mcpserver.Wait, 300*time.Millisecond, nil, proto)
				_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo waited"})
				status, detail := lastTool(t, td, out["sessionId"].(string))
				if status != "error" || !strings.Contains(detail, "no answer within") {
					t.Fatalf("tool %s %q", status, detail)
				}
			})
		})
	}
}

func TestMCPQuestionsBecomeForms(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startTandem(t, setup{})
			var schema atomic.Value
			cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					schema.Store(req.Params.RequestedSchema)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q0": "SQLite"}}, nil
				},
			}, proto)
			_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "ask: Which DB? | Postgres | SQLite"})
			if b, _ := json.Marshal(schema.Load()); !strings.Contains(string(b), `"const":"Postgres"`) {
				t.Fatalf("form schema %s lacks the options", b)
			}
			status, detail := lastTool(t, td, out["sessionId"].(string))
			if status != "completed" || !strings.Contains(detail, `"Which DB?"="SQLite"`) {
				t.Fatalf("question tool: %s %q", status, detail)
			}
		})
	}
}

// TestMCPResultsSayWhatHappenedInThisCall: the approvals field names how this client answers, then
// each request this call asked and how it ended, and nothing that did not happen.
func TestMCPResultsSayWhatHappenedInThisCall(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startTandem(t, setup{})
			cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
				},
			}, proto)

			t.Run("a call that asked nothing says so", func(t *testing.T) {
				res, out := callTool(t, cs, "tandem", map[string]any{"prompt": "hello"})
				approvals, _ := out["approvals"].(string)
				if !strings.Contains(approvals, "nothing needed an answer in this call") || strings.Contains(approvals, "rejected") {
					t.Fatalf("approvals %q", approvals)
				}
				if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "approvals: "+approvals) || !strings.Contains(text, "status: completed") {
					t.Fatalf("the text result %q does not carry the status and the approvals", text)
				}
			})
			t.Run("an approval answered in the client is reported as answered, by whom", func(t *testing.T) {
				_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo reported"})
				approvals, _ := out["approvals"].(string)
				if out["status"] != "completed" || !strings.Contains(approvals, "1 asked in this call: bash echo reported: allowed once by mcp:mcp-test") ||
					strings.Contains(approvals, "rejected") || strings.Contains(approvals, "unanswered") {
					t.Fatalf("status %v, approvals %q", out["status"], approvals)
				}
			})
		})
	}
}

// TestMCPAQuestionTheClientCannotAnswerIsReportedUnanswered: the question is rejected (the agent
// never gets an empty answer), and the result says unanswered and names it, for every way a client
// can fail to answer.
func TestMCPAQuestionTheClientCannotAnswerIsReportedUnanswered(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				opts *mcp.ClientOptions
				why  string
			}{
				{"a client without forms", nil, "unanswered, this client cannot answer questions (strategy deny)"},
				{"a client that sends its form back empty", &mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
					},
				}, `unanswered, the client's form came back without an answer to "Which DB?"`},
			} {
				t.Run(tc.name, func(t *testing.T) {
					td := startTandem(t, setup{})
					cs := connectMCP(t, td, mcpserver.Deny, time.Minute, tc.opts, proto)
					res, out := callTool(t, cs, "tandem", map[string]any{"prompt": "ask: Which DB? | Postgres | SQLite"})
					approvals, _ := out["approvals"].(string)
					if out["status"] != "unanswered" || !reflect.DeepEqual(out["unanswered"], []any{`"Which DB?"`}) || !strings.Contains(approvals, tc.why) {
						t.Fatalf("status %v, unanswered %v, approvals %q", out["status"], out["unanswered"], approvals)
					}
					if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `Unanswered: the agent asked "Which DB?"`) {
						t.Fatalf("text result %q", text)
					}
					if status, detail := lastTool(t, td, out["sessionId"].(string)); status != "error" || !strings.Contains(detail, "dismissed") {
						t.Fatalf("question tool: %s %q, want it dismissed, not answered empty", status, detail)
					}
				})
			}
		})
	}
}
