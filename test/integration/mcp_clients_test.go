//go:build linux

package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// The MCP clients in this file were written by others (npm, installed by `npm ci` in
// internal/door/mcpserver/testdata/clients): the MCP conformance suite, the MCP Inspector CLI and the official
// TypeScript SDK. They run against the real binary, over Streamable HTTP and over stdio.

// runNode runs a Node program from the clients directory, bounded by the test deadline.
func runNode(t *testing.T, dir, node string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	home := t.TempDir() // the Inspector keeps a catalog under HOME
	cmd.Env = append(append(os.Environ(), "HOME="+home, "NO_COLOR=1"), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

func TestMCPConformanceSuiteServerScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dir, node := testenv.MCPClients(t)
	srv := startBinary(t, builtBinary(t), t.TempDir(), t.TempDir())
	// The suite cannot send headers; auth_token is the query form of the same Basic credentials.
	token := base64.StdEncoding.EncodeToString([]byte("tandem:" + srv.pass))
	out, errOut, err := runNode(t, dir, node, nil, "node_modules/@modelcontextprotocol/conformance/dist/index.js", "server",
		"--url", srv.url+"/mcp-server?auth_token="+token, "--spec-version", "2025-11-25",
		"--expected-failures", "conformance-baseline.yml", "-o", t.TempDir())
	if err != nil || !strings.Contains(out, "Baseline check passed") {
		t.Fatalf("conformance: %v\n%s\n%s", err, tail(out, 4000), tail(errOut, 2000))
	}
	for _, scenario := range []string{"server-initialize", "ping", "logging-set-level", "tools-list", "dns-rebinding-protection"} {
		if !strings.Contains(out, "✓ "+scenario+":") {
			t.Errorf("scenario %s did not pass:\n%s", scenario, tail(out, 4000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func TestMCPInspectorCLIListsAndCallsTheTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dir, node := testenv.MCPClients(t)
	bin := builtBinary(t)
	srv := startBinary(t, bin, t.TempDir(), t.TempDir())
	inspector := "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
	basic := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("tandem:"+srv.pass))
	overHTTP := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		args = append([]string{inspector, "--cli", "--transport", "http", srv.url + "/mcp-server", "--header", basic}, args...)
		out, errOut, err := runNode(t, dir, node, nil, args...)
		var v map[string]any
		if err != nil || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("inspector %v: %v\n%s\n%s", args[1:], err, out, errOut)
		}
		if strings.Contains(errOut, "Warning") {
			t.Errorf("inspector warns about tandem's tools:\n%s", errOut)
		}
		return v
	}

	t.Run("over HTTP it lists the four tools with portable schemas", func(t *testing.T) {
		list := overHTTP(t, "--strict", "--method", "tools/list")
		var names []string
		for _, tool := range list["tools"].([]any) {
			names = append(names, tool.(map[string]any)["name"].(string))
		}
		if strings.Join(names, " ") != "tandem tandem-query tandem-reply tandem-sessions" {
			t.Fatalf("tools: %v", names)
		}
	})
	t.Run("over HTTP it starts a session and finds it again", func(t *testing.T) {
		res := overHTTP(t, "--method", "tools/call", "--tool-name", "tandem", "--tool-arg", "prompt=hello inspector")
		sc := res["structuredContent"].(map[string]any)
		if sc["answer"] != "You said: hello inspector" || sc["status"] != "completed" {
			t.Fatalf("tandem: %v", res)
		}
		list := overHTTP(t, "--method", "tools/call", "--tool-name", "tandem-sessions")
		sessions := list["structuredContent"].(map[string]any)["sessions"].([]any)
		first := sessions[0].(map[string]any)
		if first["sessionId"] != sc["sessionId"] || first["client"] != "inspector-cli" {
			t.Fatalf("tandem-sessions: %v", list)
		}
	})
	t.Run("over stdio it asks a read-only question", func(t *testing.T) {
		data, project := t.TempDir(), t.TempDir()
		port := strconv.Itoa(testenv.UnusedPort(t))
		out, errOut, err := runNode(t, dir, node, nil, inspector, "--cli",
			"-e", "XDG_STATE_HOME="+data, "-e", "XDG_CONFIG_HOME="+data, "-e", "HOME="+data,
			"--method", "tools/call", "--tool-name", "tandem-query", "--tool-arg", "prompt=what is in here?",
			"--", bin, "mcp", "--port", port, "--dir", project, "--data-dir", data)
		var res struct {
			StructuredContent mcpResult `json:"structuredContent"`
		}
		if err != nil || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("inspector over stdio: %v\n%s\n%s", err, out, errOut)
		}
		if res.StructuredContent.Status != "completed" || res.StructuredContent.Answer == "" {
			t.Fatalf("tandem-query: %+v", res.StructuredContent)
		}
	})
}

// mcpResult is the structuredContent of tandem's turn tools, as a client decodes it.
type mcpResult struct {
	SessionID string `json:"sessionId"`
	Answer    string `json:"answer"`
	Status    string `json:"status"`
	Approvals string `json:"approvals"`
}

func TestMCPTypeScriptSDKClientOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dir, node := testenv.MCPClients(t)
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	port := testenv.UnusedPort(t)
	out, errOut, err := runNode(t, dir, node, []string{"TANDEM_SERVER_PASSWORD=" + testPassword},
		"sdk-client.mjs", bin, project, data, strconv.Itoa(port))
	if err != nil {
		t.Fatalf("sdk-client.mjs: %v\n%s\n%s", err, out, tail(errOut, 3000))
	}
	var seen struct {
		Elicitations []struct {
			Message   string   `json:"message"`
			SessionID string   `json:"sessionId"`
			Fields    []string `json:"fields"`
		} `json:"elicitations"`
		Progress []string `json:"progress"`
		Calls    []struct {
			Name       string         `json:"name"`
			Structured map[string]any `json:"structured"`
			IsError    bool           `json:"isError"`
		} `json:"calls"`
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &seen); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sid, _ := seen.Calls[0].Structured["sessionId"].(string)
	if len(seen.Elicitations) != 3 {
		t.Fatalf("the person was asked %d times, want 3 (echo, rm, question): %+v", len(seen.Elicitations), seen.Elicitations)
	}
	for i, want := range []string{"echo from-the-ts-sdk", "rm -rf build", "Which database?"} {
		e := seen.Elicitations[i]
		if !strings.Contains(e.Message, want) || e.SessionID != sid {
			t.Errorf("elicitation %d: %q (session %q), want it to name %q in %s", i, e.Message, e.SessionID, want, sid)
		}
	}
	if !strings.Contains(seen.Elicitations[0].Message, project) {
		t.Errorf("the approval does not name the directory: %q", seen.Elicitations[0].Message)
	}
	if len(seen.Progress) == 0 {
		t.Error("no progress notification reached the client")
	}
	for _, c := range seen.Calls[:3] {
		if c.Structured["status"] != "completed" || c.Structured["sessionId"] != sid {
			t.Errorf("%s: %v", c.Name, c.Structured)
		}
	}

	// What the person decided is what ran. The stdio server exited with its client; a server on the
	// same data directory shows what is stored.
	srv := startBinary(t, bin, data, project)
	var msgs []session.WithParts
	srv.get("/session/"+sid+"/message", &msgs)
	tools := toolParts(msgs)
	if len(tools) != 3 {
		t.Fatalf("%d tool parts, want 3", len(tools))
	}
	if tools[0].State.Status != "completed" || *tools[0].State.Output != "from-the-ts-sdk\n" {
		t.Errorf("the allowed echo: %s %v", tools[0].State.Status, tools[0].State.Output)
	}
	if tools[1].State.Status != "error" || !strings.Contains(tools[1].State.Error, "keep the build directory") {
		t.Errorf("the rejected rm: %s %q", tools[1].State.Status, tools[1].State.Error)
	}
	if _, err := os.Stat(filepath.Join(project, "build")); err != nil {
		t.Errorf("the rejected rm -rf build ran: %v", err)
	}
	if tools[2].State.Status != "completed" || !strings.Contains(*tools[2].State.Output, "SQLite") {
		t.Errorf("the question: %s %v", tools[2].State.Status, fmt.Sprint(tools[2].State.Output))
	}
}
