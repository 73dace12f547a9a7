package integration

import (
	"github.com/tandem-dev/tandem/api"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// uuidPattern is what Codex clients accept as a thread ID.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// appEnv is the environment of an app-server test process: its own data, config and home.
func appEnv(t *testing.T) (env []string, data string) {
	data = t.TempDir()
	return []string{"TANDEM_SERVER_PASSWORD=" + testPassword, "XDG_STATE_HOME=" + data, "XDG_CONFIG_HOME=" + data, "HOME=" + data}, data
}

// pendingFor polls GET /permission until a request of the session's command is listed.
func pendingCommand(t *testing.T, rest *client.Client, command string) api.PermissionRequest {
	t.Helper()
	var found api.PermissionRequest
	testenv.Eventually(t, "GET /permission lists "+command, func() bool {
		list, err := rest.Permissions(context.Background())
		if err != nil {
			return false
		}
		for _, r := range list {
			if c, _ := r.Metadata["command"].(string); c == command {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

// The Codex protocol over stdio: the handshake, a streamed answer, approvals answered in the
// client, over REST and refused, an interrupt, and a thread read back with the same turns. Every
// message tandem sends validates against the pinned Codex's schema.
func TestAppServerOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	schema := loadCodexSchema(t)
	env, data := appEnv(t)
	project := t.TempDir()
	p := startAppServer(t, env, "--port", "0", "--dir", project, "--data-dir", data)
	c := p.stdioClient(t)
	rest := client.New(p.url, "tandem", testPassword)
	defer func() {
		c.t = t
		schema.conforms(t, c.conversation())
	}()

	t.Run("a request before initialize is refused, as is a second initialize", func(t *testing.T) {
		c.t = t
		if m := c.call("account/read", map[string]any{}); m.Error == nil || m.Error.Message != "Not initialized" {
			t.Fatalf("before initialize: %+v", m)
		}
		c.initialize()
		if m := c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "again", "version": "1"}}); m.Error == nil || m.Error.Message != "Already initialized" {
			t.Fatalf("second initialize: %+v", m)
		}
	})

	var threadID string
	t.Run("the startup reads answer: no ChatGPT account, tandem's models, its approvals", func(t *testing.T) {
		c.t = t
		var account struct {
			Account            any  `json:"account"`
			RequiresOpenaiAuth bool `json:"requiresOpenaiAuth"`
		}
		c.result("account/read", map[string]any{}, &account)
		if account.Account != nil || account.RequiresOpenaiAuth {
			t.Errorf("account/read: %+v", account)
		}
		var models struct {
			Data []struct {
				ID        string `json:"id"`
				IsDefault bool   `json:"isDefault"`
			} `json:"data"`
		}
		c.result("model/list", map[string]any{"includeHidden": true}, &models)
		if !slices.ContainsFunc(models.Data, func(m struct {
			ID        string `json:"id"`
			IsDefault bool   `json:"isDefault"`
		}) bool {
			return m.ID == "demo/demo" && m.IsDefault
		}) {
			t.Errorf("model/list: %+v, want the demo model as the default", models.Data)
		}
		for _, m := range []string{"hooks/list", "config/read", "configRequirements/read", "collaborationMode/list", "skills/list", "plugin/installed", "thread/loaded/list"} {
			c.result(m, map[string]any{"cwds": []string{project}}, nil)
		}
		if m := c.call("no/such/method", map[string]any{}); m.Error == nil || !strings.Contains(m.Error.Message, "no/such/method") {
			t.Errorf("an unknown method: %+v", m)
		}
		from := c.mark()
		threadID = c.startThread(project)
		if !uuidPattern.MatchString(threadID) {
			t.Fatalf("thread ID %q is not a UUID", threadID)
		}
		c.notified(from, "thread/started", func(m rpcMsg) bool { return m.str("thread", "id") == threadID })
	})

	t.Run("a prompt streams its answer as an agent message", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "hello codex")
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		c.notified(from, "item/agentMessage/delta", nil)
		done := c.notified(from, "item/completed", func(m rpcMsg) bool { return m.str("item", "type") == "agentMessage" })
		if got := done.str("item", "text"); got != "You said: hello codex" {
			t.Errorf("agent message %q", got)
		}
		c.notified(from, "thread/tokenUsage/updated", nil)
	})

	t.Run("a command approval is the pending request: accepted in the client, the command runs", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "run: touch accepted.txt")
		req := c.asked(from, "item/commandExecution/requestApproval")
		if req.str("command") != "touch accepted.txt" || req.str("turnId") != turnID {
			t.Errorf("approval params %s", req.Params)
		}
		decisions, _ := json.Marshal(req.param("availableDecisions"))
		if !strings.Contains(string(decisions), `"accept"`) || !strings.Contains(string(decisions), `"cancel"`) {
			t.Errorf("availableDecisions %s", decisions)
		}
		pendingCommand(t, rest, "touch accepted.txt")
		c.answer(req, map[string]any{"decision": "accept"})
		c.notified(from, "serverRequest/resolved", func(m rpcMsg) bool { return string(mustJSON(m.param("requestId"))) == string(req.ID) })
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		item := c.notified(from, "item/completed", func(m rpcMsg) bool { return m.str("item", "type") == "commandExecution" })
		if item.str("item", "status") != "completed" {
			t.Errorf("command item %s", item.Params)
		}
		if _, err := os.Stat(filepath.Join(project, "accepted.txt")); err != nil {
			t.Error(err)
		}
	})

	t.Run("an approval answered over REST is resolved in the client", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "run: touch by-rest.txt")
		req := c.asked(from, "item/commandExecution/requestApproval")
		pending := pendingCommand(t, rest, "touch by-rest.txt")
		if err := rest.ReplyPermission(context.Background(), pending.ID, permission.Reply(permission.KeyOnce), ""); err != nil {
			t.Fatal(err)
		}
		c.notified(from, "serverRequest/resolved", func(m rpcMsg) bool { return string(mustJSON(m.param("requestId"))) == string(req.ID) })
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		if _, err := os.Stat(filepath.Join(project, "by-rest.txt")); err != nil {
			t.Error(err)
		}
	})

	t.Run("a declined command does not run and the turn goes on", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "run: touch declined.txt")
		req := c.asked(from, "item/commandExecution/requestApproval")
		c.answer(req, map[string]any{"decision": "decline"})
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		if _, err := os.Stat(filepath.Join(project, "declined.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("declined.txt: %v", err)
		}
	})

	t.Run("an interrupt withdraws the pending approval before turn/completed says interrupted", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "run: touch never.txt")
		req := c.asked(from, "item/commandExecution/requestApproval")
		c.result("turn/interrupt", map[string]any{"threadId": threadID, "turnId": turnID}, nil)
		resolved := c.notified(from, "serverRequest/resolved", func(m rpcMsg) bool { return string(mustJSON(m.param("requestId"))) == string(req.ID) })
		done := c.notified(from, "turn/completed", func(m rpcMsg) bool { return m.str("turn", "id") == turnID })
		if done.str("turn", "status") != "interrupted" {
			t.Errorf("turn ended %s", done.str("turn", "status"))
		}
		if indexOf(c, resolved) > indexOf(c, done) {
			t.Error("serverRequest/resolved came after turn/completed")
		}
		if _, err := os.Stat(filepath.Join(project, "never.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("never.txt: %v", err)
		}
	})

	t.Run("thread/read lists the turns under the IDs the live turns had", func(t *testing.T) {
		c.t = t
		var res struct {
			Thread struct {
				Turns []struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				} `json:"turns"`
			} `json:"thread"`
		}
		c.result("thread/read", map[string]any{"threadId": threadID, "includeTurns": true}, &res)
		if len(res.Thread.Turns) != 5 {
			t.Fatalf("%d turns, want 5: %+v", len(res.Thread.Turns), res.Thread.Turns)
		}
		if last := res.Thread.Turns[4]; last.Status != "interrupted" {
			t.Errorf("the interrupted turn reads back as %s", last.Status)
		}
	})

	t.Run("a command's output streams as outputDelta notifications that add up to it", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "run: for i in $(seq 1 40); do echo out-$i; sleep 0.005; done")
		c.answer(c.asked(from, "item/commandExecution/requestApproval"), map[string]any{"decision": "accept"})
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		item := c.notified(from, "item/completed", func(m rpcMsg) bool { return m.str("item", "type") == "commandExecution" })
		var streamed strings.Builder
		deltas := 0
		c.mu.Lock()
		for _, raw := range c.in[from:] {
			var m rpcMsg
			if json.Unmarshal(raw, &m) == nil && m.Method == "item/commandExecution/outputDelta" && m.str("itemId") == item.str("item", "id") {
				streamed.WriteString(m.str("delta"))
				deltas++
			}
		}
		c.mu.Unlock()
		var want strings.Builder
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&want, "out-%d\n", i)
		}
		if deltas == 0 || streamed.String() != want.String() || item.str("item", "aggregatedOutput") != want.String() {
			t.Fatalf("%d deltas streamed %q; the item's output %q", deltas, streamed.String(), item.str("item", "aggregatedOutput"))
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// indexOf is the position of a message among those tandem sent.
func indexOf(c *appClient, m rpcMsg) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, raw := range c.in {
		var x rpcMsg
		if json.Unmarshal(raw, &x) == nil && x.Method == m.Method && string(x.Params) == string(m.Params) {
			return i
		}
	}
	return -1
}

// The WebSocket listener: the token is checked before anything is read, a page's Origin is
// refused, and a client with the token works a thread: a file change shown with its diff and
// approved, and a question answered. A trace of the whole conversation validates against the
// pinned Codex's schema.
func TestAppServerOverWebSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	schema := loadCodexSchema(t)
	env, data := appEnv(t)
	project := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.UnusedPort(t))
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	p := startAppServer(t, env, "--port", "0", "--dir", project, "--data-dir", data, "--listen", "ws://"+addr, "--trace", trace)
	rest := client.New(p.url, "tandem", testPassword)

	t.Run("a connection without the token, with another token, or from a web page is refused", func(t *testing.T) {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("/readyz: %d", res.StatusCode)
		}
		for _, tc := range []struct {
			name   string
			header http.Header
			want   int
		}{
			{"no token", http.Header{}, http.StatusUnauthorized},
			{"another token", http.Header{"Authorization": {"Bearer not-it"}}, http.StatusUnauthorized},
			{"basic credentials", http.Header{"Authorization": {"Basic dGFuZGVtOmhhcm5lc3MtcGFzc3dvcmQ="}}, http.StatusUnauthorized},
			{"an Origin", http.Header{"Authorization": {"Bearer " + testPassword}, "Origin": {"http://127.0.0.1:1"}}, http.StatusForbidden},
		} {
			conn, res, err := dialApp(t.Context(), addr, tc.header)
			if err == nil {
				conn.CloseNow()
				t.Errorf("%s: connected", tc.name)
				continue
			}
			if res == nil || res.StatusCode != tc.want {
				t.Errorf("%s: %v, want status %d", tc.name, err, tc.want)
			}
		}
	})

	c := wsClient(t, addr, testPassword)
	c.initialize()
	threadID := c.startThread(project)

	t.Run("a file change shows its diff, asks, and is written once accepted", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "write: notes.txt\nfirst line")
		started := c.notified(from, "item/started", func(m rpcMsg) bool { return m.str("item", "type") == "fileChange" })
		changes, _ := json.Marshal(started.param("item", "changes"))
		if !strings.Contains(string(changes), "notes.txt") || !strings.Contains(string(changes), "+first line") {
			t.Errorf("the file change item shows %s", changes)
		}
		req := c.asked(from, "item/fileChange/requestApproval")
		if req.str("itemId") != started.str("item", "id") {
			t.Errorf("the approval is about item %q, the change is %q", req.str("itemId"), started.str("item", "id"))
		}
		c.answer(req, map[string]any{"decision": "accept"})
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		done := c.notified(from, "item/completed", func(m rpcMsg) bool { return m.str("item", "type") == "fileChange" })
		if done.str("item", "status") != "completed" {
			t.Errorf("file change %s", done.Params)
		}
		if b, err := os.ReadFile(filepath.Join(project, "notes.txt")); err != nil || string(b) != "first line" {
			t.Errorf("notes.txt: %q %v", b, err)
		}
	})

	t.Run("a question is asked as a request for user input and the answer reaches the agent", func(t *testing.T) {
		c.t = t
		turnID, from := c.turn(threadID, "ask: Which DB? | Postgres | SQLite")
		req := c.asked(from, "item/tool/requestUserInput")
		qs, _ := json.Marshal(req.param("questions"))
		if !strings.Contains(string(qs), "Which DB?") || !strings.Contains(string(qs), "SQLite") {
			t.Errorf("questions %s", qs)
		}
		c.answer(req, map[string]any{"answers": map[string]any{"q0": map[string]any{"answers": []string{"SQLite"}}}})
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		msg := c.notified(from, "item/completed", func(m rpcMsg) bool {
			return m.str("item", "type") == "agentMessage" && strings.Contains(m.str("item", "text"), "SQLite")
		})
		_ = msg
	})

	t.Run("a path outside the project is a permissions request, granted for the turn", func(t *testing.T) {
		c.t = t
		outside := t.TempDir()
		if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("the outside text"), 0o600); err != nil {
			t.Fatal(err)
		}
		turnID, from := c.turn(threadID, "read: "+filepath.Join(outside, "secret.txt"))
		req := c.asked(from, "item/permissions/requestApproval")
		read, _ := json.Marshal(req.param("permissions", "fileSystem", "read"))
		if string(read) != string(mustJSON([]string{outside})) {
			t.Errorf("permissions asked %s", req.Params)
		}
		c.answer(req, map[string]any{"permissions": map[string]any{"fileSystem": map[string]any{"read": []string{outside}}}, "scope": "turn"})
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		c.notified(from, "item/completed", func(m rpcMsg) bool {
			return m.str("item", "type") == "agentMessage" && strings.Contains(m.str("item", "text"), "the outside text")
		})
	})

	t.Run("an MCP tool is approved as Codex asks about MCP tools, and its server's link is a URL elicitation", func(t *testing.T) {
		c.t = t
		everything := testenv.ServerEverything(t)
		if err := rest.AddMCP(t.Context(), "everything", map[string]any{"type": "local", "command": []string{"node", everything, "stdio"}}); err != nil {
			t.Fatal(err)
		}
		link := "https://connect.example.test/authorize?state=codex"
		turnID, from := c.turn(threadID, `mcp: everything trigger-url-elicitation {"url":"`+link+`","elicitationId":"el-codex"}`)
		approval := c.asked(from, "mcpServer/elicitation/request")
		if approval.str("serverName") != "everything" || approval.str("_meta", "codex_approval_kind") != "mcp_tool_call" {
			t.Errorf("the tool approval %s", approval.Params)
		}
		c.answer(approval, map[string]any{"action": "accept", "content": nil, "_meta": nil})
		url := c.waitFor(from, "the URL elicitation", func(m rpcMsg) bool {
			return m.Method == "mcpServer/elicitation/request" && len(m.ID) > 0 && m.str("mode") == "url"
		})
		if url.str("url") != link {
			t.Errorf("the URL elicitation %s", url.Params)
		}
		c.answer(url, map[string]any{"action": "accept", "content": nil, "_meta": nil})
		if st := c.completed(from, turnID); st != "completed" {
			t.Fatalf("turn ended %s", st)
		}
		done := c.notified(from, "item/completed", func(m rpcMsg) bool { return m.str("item", "type") == "mcpToolCall" })
		result, _ := json.Marshal(done.param("item", "result"))
		if done.str("item", "status") != "completed" || !strings.Contains(string(result), "User completed the URL elicitation flow") {
			t.Errorf("the MCP tool call %s", done.Params)
		}
	})

	c.t = t
	c.result("thread/unsubscribe", map[string]any{"threadId": threadID}, nil)
	schema.conforms(t, c.conversation())
	schema.conforms(t, readTrace(t, trace))
}

// Codex's reasoning efforts are the model's variants: model/list offers them, and an effort in
// turn/start reaches the model as that variant's options; the token usage carries the model's
// context window.
func TestAppServerReasoningEffortIsTheModelsVariant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	schema := loadCodexSchema(t)
	srv := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"thought hard"}})
	env, data := appEnv(t)
	for k, v := range openAIEnv(srv) {
		env = append(env, k+"="+v)
	}
	env = append(env, "TANDEM_MODEL=openai/o4-mini") // a model with OpenCode's reasoning variants
	project := t.TempDir()
	p := startAppServer(t, env, "--port", "0", "--dir", project, "--data-dir", data)
	c := p.stdioClient(t)
	defer func() { schema.conforms(t, c.conversation()) }()
	c.initialize()

	var models struct {
		Data []struct {
			ID      string `json:"id"`
			Efforts []struct {
				Effort string `json:"reasoningEffort"`
			} `json:"supportedReasoningEfforts"`
		} `json:"data"`
	}
	c.result("model/list", map[string]any{}, &models)
	var efforts []string
	for _, m := range models.Data {
		if m.ID == "openai/o4-mini" {
			for _, e := range m.Efforts {
				efforts = append(efforts, e.Effort)
			}
		}
	}
	if strings.Join(efforts, " ") != "high low medium" {
		t.Errorf("o4-mini's efforts %v, want its variants high low medium", efforts)
	}

	threadID := c.startThread(project)
	from := c.mark()
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	c.result("turn/start", map[string]any{"threadId": threadID, "effort": "high",
		"input": []any{map[string]any{"type": "text", "text": "think", "text_elements": []any{}}}}, &res)
	if st := c.completed(from, res.Turn.ID); st != "completed" {
		t.Fatalf("turn ended %s", st)
	}
	usage := c.notified(from, "thread/tokenUsage/updated", nil)
	if w, _ := usage.param("tokenUsage", "modelContextWindow").(float64); w <= 0 {
		t.Errorf("the token usage gives no context window: %s", usage.Params)
	}
	var body struct {
		Model  string `json:"model"`
		Effort string `json:"reasoning_effort"`
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not called")
	}
	if err := reqs[len(reqs)-1].Decode(&body); err != nil || body.Effort != "high" {
		t.Errorf("the model was called with reasoning_effort %q (%v), want high", body.Effort, err)
	}
}
