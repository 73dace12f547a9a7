package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	tandemclient "github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestMCPOverStreamableHTTP(t *testing.T) {
	td := startTandem(t, setup{})
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
		},
	})

	t.Run("without credentials the endpoint refuses", func(t *testing.T) {
		_, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: td.base + "/mcp-server", MaxRetries: -1}, nil)
		if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("connect without credentials: %v", err)
		}
	})
	// Every protocol version `tandem mcp` serves over stdio is served over HTTP too: 2026-07-28 is
	// stateless, so its requests go to a stateless handler of the same server.
	for _, proto := range mcpVersions {
		t.Run("with credentials a task runs through an approval over "+proto, func(t *testing.T) {
			hc := tandemclient.New(td.base, testUser, testPassword).HTTPClient()
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: td.base + "/mcp-server", HTTPClient: hc},
				&mcp.ClientSessionOptions{ProtocolVersion: proto})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != proto {
				t.Fatalf("negotiated %s, want %s", got, proto)
			}
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil || len(tools.Tools) != 4 {
				t.Fatalf("tools: %v %v", tools, err)
			}
			_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo over-http"})
			if status, detail := lastTool(t, td, out["sessionId"].(string)); status != "completed" || detail != "over-http\n" {
				t.Fatalf("tool %s %q", status, detail)
			}
		})
	}
}

func TestMCPProgressAndLogsCarryTheSessionID(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startTandem(t, setup{})
			var mu sync.Mutex
			var progress, logs []mcp.Meta
			cs := connectMCP(t, td, mcpserver.Deny, time.Minute, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, r.Params.Meta)
				},
				//lint:ignore SA1019 tandem sends notifications/message on 2025-11-25 sessions; this checks them
				LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
					mu.Lock()
					defer mu.Unlock()
					logs = append(logs, r.Params.Meta)
				},
			}, proto)
			//lint:ignore SA1019 the level is what makes tandem send log lines at all
			if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			params := &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: echo progress"}}
			params.SetProgressToken("p1")
			if proto >= "2026-07-28" {
				//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still served; this checks tandem's log lines
				params.Meta[mcp.MetaKeyLogLevel] = "info" // stateless: the level travels with each request
			}
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			sid := res.StructuredContent.(map[string]any)["sessionId"]
			// Notifications are delivered asynchronously: wait (bounded) until they arrived.
			deadline := time.Now().Add(waitLimit)
			for {
				mu.Lock()
				n, m := len(progress), len(logs)
				mu.Unlock()
				if n >= 2 && m >= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("got %d progress and %d log notifications", n, m)
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, meta := range append(progress, logs...) {
				if meta["sessionId"] != sid {
					t.Fatalf("notification _meta %v lacks sessionId %v", meta, sid)
				}
			}
		})
	}
}

func TestMCPCancellingTheCallAbortsTheTurn(t *testing.T) {
	for _, proto := range mcpVersions {
		t.Run("over "+proto, func(t *testing.T) {
			td := startTandem(t, setup{})
			cs := connectMCP(t, td, mcpserver.Wait, time.Minute, nil, proto)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: echo never"}})
				done <- err
			}()
			var sid string
			deadline := time.Now().Add(waitLimit)
			for sid == "" {
				if reqs := td.pending(t, ""); len(reqs) == 1 {
					sid = reqs[0].SessionID
				} else if time.Now().After(deadline) {
					t.Fatal("no approval became pending")
				} else {
					time.Sleep(10 * time.Millisecond)
				}
			}
			cancel()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("the cancelled call returned a result")
				}
			case <-time.After(waitLimit):
				t.Fatal("the cancelled call did not return")
			}
			for {
				if _, busy := td.statuses(t)[sid]; !busy && len(td.pending(t, "")) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the turn of %s still runs after the call was cancelled", sid)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if status, _ := lastTool(t, td, sid); status == "completed" {
				t.Fatal("the command ran after the call was cancelled")
			}
		})
	}
}

func TestMCPOverStdioWithTheBuiltBinary(t *testing.T) {
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	port := testenv.UnusedPort(t)
	cmd := exec.Command(bin, "mcp", "--port", strconv.Itoa(port), "--data-dir", data, "--dir", project)
	cmd.Env = append(os.Environ(), "TANDEM_SERVER_PASSWORD="+testPassword, "XDG_STATE_HOME="+data, "XDG_CONFIG_HOME="+data, "HOME="+data)
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo from-stdio"})
	sid, _ := out["sessionId"].(string)
	if out["status"] != "completed" || !strings.HasPrefix(sid, "ses_") {
		t.Fatalf("tandem: %v", out)
	}
	_, again := callTool(t, cs, "tandem-reply", map[string]any{"sessionId": sid, "prompt": "thanks"})
	if again["sessionId"] != sid {
		t.Fatalf("tandem-reply: %v", again)
	}
	// The HTTP listener of the same process sees the session and the command's output.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/session/%s/message", port, sid), nil)
	req.SetBasicAuth(testUser, testPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msgs []session.WithParts
	if err := json.NewDecoder(resp.Body).Decode(&msgs); err != nil || len(msgs) < 4 {
		t.Fatalf("GET messages over HTTP: %d messages, %v", len(msgs), err)
	}
	if tools := toolParts(msgs); len(tools) != 1 || tools[0].State.Output == nil || *tools[0].State.Output != "from-stdio\n" {
		t.Fatalf("the command's output is not in the session: %+v", tools)
	}
}
