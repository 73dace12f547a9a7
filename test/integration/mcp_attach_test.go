//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// TestMCPAttachRelaysToARunningServer drives `tandem mcp --attach` (the real binary) with the go-sdk
// client: the task runs in the `tandem serve` process, and its approval comes back through the relay
// as an elicitation.
func TestMCPAttachRelaysToARunningServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, bin, data, project)
	isolated := []string{"XDG_STATE_HOME=" + data, "XDG_CONFIG_HOME=" + data, "HOME=" + data, "TANDEM_SERVER_PASSWORD="}

	for _, tc := range []struct {
		name   string
		attach string
		env    []string
	}{
		{"local finds the server and its password in the state file", "local", nil},
		{"a URL takes the password from the environment", srv.url, []string{"TANDEM_SERVER_PASSWORD=" + srv.pass}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "mcp", "--attach", tc.attach)
			cmd.Env = append(append(os.Environ(), isolated...), tc.env...)
			cmd.Stderr = os.Stderr
			var asked atomic.Value
			client := mcp.NewClient(&mcp.Implementation{Name: "attach-test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Store(req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
				},
			})
			cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo attached"})
			sid, _ := out["sessionId"].(string)
			if out["status"] != "completed" || !strings.HasPrefix(sid, "ses_") {
				t.Fatalf("tandem: %v", out)
			}
			if msg, _ := asked.Load().(string); !strings.Contains(msg, "echo attached") {
				t.Fatalf("the approval did not reach the client through the relay (asked %q)", msg)
			}
			// The session lives in the serve process: its REST API has the command's output.
			var msgs []session.WithParts
			srv.get("/session/"+sid+"/message", &msgs)
			if tools := toolParts(msgs); len(tools) != 1 || tools[0].State.Output == nil || *tools[0].State.Output != "attached\n" {
				t.Fatalf("the serve process does not hold the command's output: %+v", tools)
			}
		})
	}
	t.Run("a server that is not there is a clear error", func(t *testing.T) {
		cmd := exec.Command(bin, "mcp", "--attach", "local")
		empty := t.TempDir()
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+empty, "XDG_CONFIG_HOME="+empty, "HOME="+empty)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "no local server found") {
			t.Fatalf("mcp --attach local without a server: %v\n%s", err, out)
		}
	})
}
