//go:build linux

package integration

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// The ACP clients in this file were written by others (npm, installed by `npm ci` in
// internal/door/mcpserver/testdata/clients): the official TypeScript SDK (@agentclientprotocol/sdk) and the acpx
// headless CLI. Each starts the real binary as `tandem acp` over stdio, as an editor does.

func TestACPTypeScriptSDKClientOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dir, node := testenv.MCPClients(t)
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runNode(t, dir, node, []string{"TANDEM_SERVER_PASSWORD=" + testPassword},
		"acp-client.mjs", bin, project, data, strconv.Itoa(testenv.UnusedPort(t)))
	if err != nil {
		t.Fatalf("acp-client.mjs: %v\n%s\n%s", err, out, tail(errOut, 3000))
	}
	checkTypeScriptEditor(t, out, project)
}

func TestACPTypeScriptSDKClientOverStreamableHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dir, node := testenv.MCPClients(t)
	data, project := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := startBinary(t, builtBinary(t), data, project)

	t.Run("without credentials the endpoint answers 401", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url+"/acp", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d", res.StatusCode)
		}
	})
	t.Run("the official SDK's HTTP client works through a task with approvals", func(t *testing.T) {
		out, errOut, err := runNode(t, dir, node, []string{"TANDEM_SERVER_PASSWORD=" + srv.pass}, "acp-client.mjs", srv.url+"/acp", project)
		if err != nil {
			t.Fatalf("acp-client.mjs over HTTP: %v\n%s\n%s", err, out, tail(errOut, 3000))
		}
		checkTypeScriptEditor(t, out, project)
	})
}

// checkTypeScriptEditor checks what acp-client.mjs saw, and what is on disk after its task: the
// write it allowed happened with its diff shown, the rm -rf it rejected did not run.
func checkTypeScriptEditor(t *testing.T, out, project string) {
	t.Helper()
	var seen struct {
		Permissions []struct {
			Title   string   `json:"title"`
			Options []string `json:"options"`
		} `json:"permissions"`
		Updates     []map[string]any `json:"updates"`
		Stops       []string         `json:"stops"`
		Modes       []string         `json:"modes"`
		LoadSession bool             `json:"loadSession"`
	}
	if err := json.Unmarshal([]byte(out), &seen); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(seen.Stops, " ") != "end_turn end_turn" || !seen.LoadSession || strings.Join(seen.Modes, " ") != "build plan" {
		t.Fatalf("stops %v, loadSession %v, modes %v", seen.Stops, seen.LoadSession, seen.Modes)
	}
	if len(seen.Permissions) != 2 || !strings.Contains(seen.Permissions[0].Title, "hello.txt") || seen.Permissions[1].Title != "rm -rf build" {
		t.Fatalf("the editor was asked: %+v", seen.Permissions)
	}
	want := "once:allow_once session:allow_always always:allow_always reject:reject_once deny-always:reject_always"
	for _, p := range seen.Permissions {
		if got := strings.Join(p.Options, " "); got != want {
			t.Errorf("%s: options %s, want the request's decisions %s", p.Title, got, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(project, "hello.txt")); err != nil || string(b) != "from the TypeScript SDK\n" {
		t.Errorf("the allowed write: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(project, "build")); err != nil {
		t.Errorf("the rejected rm -rf build ran: %v", err)
	}
	var diffs, failed int
	for _, u := range seen.Updates {
		if u["sessionUpdate"] != "tool_call_update" {
			continue
		}
		if u["status"] == "failed" && u["kind"] == "execute" {
			failed++
		}
		content, _ := u["content"].([]any)
		for _, c := range content {
			if c := c.(map[string]any); c["type"] == "diff" && c["newText"] == "from the TypeScript SDK\n" && c["path"] == filepath.Join(project, "hello.txt") {
				diffs++
			}
		}
	}
	if diffs != 1 || failed != 1 {
		t.Fatalf("%d diffs of hello.txt and %d failed commands in the updates, want 1 and 1:\n%s", diffs, failed, tail(out, 4000))
	}
}

func TestACPXCLIThroughATaskWithApprovals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dir, node := testenv.MCPClients(t)
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"TANDEM_SERVER_PASSWORD=" + testPassword, "XDG_STATE_HOME=" + data, "XDG_CONFIG_HOME=" + data}
	agent := bin + " acp --port 0 --data-dir " + data + " --dir " + project
	// acpx exits 5 (its PERMISSION_DENIED) after a turn in which it denied a permission.
	var methods map[string]int // what tandem asked acpx, by method, in the last run
	var output string          // acpx's last output
	acpx := func(t *testing.T, policy, prompt string, wantExit int) (requests, answers []map[string]any, stop string) {
		t.Helper()
		out, errOut, err := runNode(t, dir, node, env, "node_modules/acpx/dist/cli.js", "--agent", agent, "--cwd", project,
			policy, "--format", "json", "exec", prompt)
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == wantExit {
			err = nil
		}
		if err == nil && wantExit != 0 && exit == nil {
			t.Errorf("acpx %s exited 0, want %d", policy, wantExit)
		}
		if err != nil {
			t.Fatalf("acpx %s %q: %v\n%s\n%s", policy, prompt, err, tail(out, 3000), tail(errOut, 2000))
		}
		asked := map[any]bool{}
		methods, output = map[string]int{}, out
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var msg map[string]any
			if json.Unmarshal([]byte(line), &msg) != nil {
				continue
			}
			if m, ok := msg["method"].(string); ok {
				methods[m]++
			}
			switch {
			case msg["method"] == "session/request_permission":
				requests = append(requests, msg["params"].(map[string]any))
				asked[msg["id"]] = true
			case msg["method"] == nil && asked[msg["id"]] && msg["result"] != nil:
				answers = append(answers, msg["result"].(map[string]any)["outcome"].(map[string]any))
			case msg["method"] == nil && msg["result"] != nil:
				if r, ok := msg["result"].(map[string]any)["stopReason"].(string); ok {
					stop = r
				}
			}
		}
		return requests, answers, stop
	}

	t.Run("with --approve-all the write it is asked about happens", func(t *testing.T) {
		requests, answers, stop := acpx(t, "--approve-all", "write: notes/acpx.txt\nwritten through acpx", 0)
		if len(requests) != 1 || len(answers) != 1 || answers[0]["optionId"] != "once" || stop != "end_turn" {
			t.Fatalf("requests %v, answers %v, stop %q", requests, answers, stop)
		}
		if b, err := os.ReadFile(filepath.Join(project, "notes/acpx.txt")); err != nil || string(b) != "written through acpx" {
			t.Fatalf("the approved write: %q %v", b, err)
		}
		// acpx declares the file-system capabilities: the editor wrote the file.
		if methods["fs/write_text_file"] != 1 {
			t.Fatalf("tandem asked acpx %v", methods)
		}
	})
	t.Run("acpx runs the command in its own terminal", func(t *testing.T) {
		_, answers, stop := acpx(t, "--approve-all", "run: echo from-acpx-terminal", 0)
		if len(answers) != 1 || stop != "end_turn" {
			t.Fatalf("answers %v, stop %q", answers, stop)
		}
		for _, m := range []string{"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"} {
			if methods[m] != 1 {
				t.Fatalf("tandem asked acpx %v", methods)
			}
		}
		if !strings.Contains(output, `output:\nfrom-acpx-terminal`) { // in a JSON-encoded message chunk
			t.Fatalf("the terminal's output did not reach the model:\n%s", tail(output, 3000))
		}
	})
	t.Run("with --deny-all the command it is asked about does not run", func(t *testing.T) {
		requests, answers, stop := acpx(t, "--deny-all", "run: rm -rf build", 5)
		if len(requests) != 1 || len(answers) != 1 || answers[0]["optionId"] != "reject" || stop != "end_turn" {
			t.Fatalf("requests %v, answers %v, stop %q", requests, answers, stop)
		}
		if _, err := os.Stat(filepath.Join(project, "build")); err != nil {
			t.Fatalf("the denied rm -rf build ran: %v", err)
		}
	})
}
