package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// env is a Manager on a real bus, with every event it publishes recorded.
type env struct {
	m   *Manager
	sub *bus.Subscription
}

func newEnv(t *testing.T, o Options) *env {
	t.Helper()
	b := bus.New(bus.Options{})
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Bus = b
	if o.Directory == "" {
		o.Directory = t.TempDir()
	}
	m := New(t.Context(), o)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		sub.Close()
		b.Close()
	})
	return &env{m: m, sub: sub}
}

type event struct {
	Type       string
	Properties map[string]any
	Raw        json.RawMessage
}

// waitEvent returns the next event of type typ for which match (if any) holds, skipping others.
func (e *env) waitEvent(t *testing.T, typ string, match func(map[string]any) bool) event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		ev, err := e.sub.Next(ctx)
		if err != nil {
			t.Fatalf("no %s event within 30s: %v", typ, err)
		}
		var env struct {
			Type       string          `json:"type"`
			Properties json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(ev.Payload, &env); err != nil {
			t.Fatal(err)
		}
		if env.Type != typ {
			continue
		}
		var props map[string]any
		_ = json.Unmarshal(env.Properties, &props)
		if match == nil || match(props) {
			return event{Type: env.Type, Properties: props, Raw: env.Properties}
		}
	}
}

// stdioConfig runs this test binary as a stdio MCP server; its PID is written to the returned file.
func stdioConfig(t *testing.T) (json.RawMessage, string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg, _ := json.Marshal(map[string]any{
		"type":    "local",
		"command": []string{os.Args[0], "-test.run=^$"},
		// GORACE: a race-enabled child otherwise sleeps a second at exit.
		"environment": map[string]string{"TANDEM_MCP_TEST_SERVER": "stdio", "TANDEM_MCP_PIDFILE": pidFile, "GORACE": "atexit_sleep_ms=0"},
	})
	return cfg, pidFile
}

func remoteConfig(url string, headers map[string]string) json.RawMessage {
	cfg, _ := json.Marshal(map[string]any{"type": "remote", "url": url + "/mcp", "headers": headers})
	return cfg
}

func serverPID(t *testing.T, pidFile string) int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func mustAdd(t *testing.T, e *env, name string, cfg json.RawMessage) {
	t.Helper()
	st, err := e.m.Add(t.Context(), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st[name].Status != Connected {
		t.Fatalf("status of %s = %+v, want connected", name, st[name])
	}
}

// transports runs a test once over stdio and once over Streamable HTTP.
func transports(t *testing.T, run func(t *testing.T, e *env)) {
	t.Run("over stdio", func(t *testing.T) {
		e := newEnv(t, Options{})
		cfg, _ := stdioConfig(t)
		mustAdd(t, e, "go", cfg)
		run(t, e)
	})
	t.Run("over streamable HTTP", func(t *testing.T) {
		ts := httpTestServer(t, "")
		e := newEnv(t, Options{})
		mustAdd(t, e, "go", remoteConfig(ts.URL, nil))
		run(t, e)
	})
}

type callResult struct {
	res *sdk.CallToolResult
	err error
}

func (e *env) callAsync(ctx context.Context, name string, args string, info CallInfo) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		res, err := e.m.CallTool(ctx, name, json.RawMessage(args), info)
		done <- callResult{res, err}
	}()
	return done
}

func waitCall(t *testing.T, done <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("tool call did not return within 30s")
		return callResult{}
	}
}

func resultText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var call1 = CallInfo{SessionID: "ses_1", MessageID: "msg_1", CallID: "call_1"}

func TestToolsAreOfferedAndCalled(t *testing.T) {
	transports(t, func(t *testing.T, e *env) {
		names := map[string]ToolInfo{}
		for _, ti := range e.m.ToolInfos() {
			names[ti.Name] = ti
		}
		echo, ok := names["go_echo"]
		if !ok || echo.Tool != "echo" || echo.Server != "go" || !strings.Contains(string(echo.InputSchema), `"text"`) {
			t.Fatalf("go_echo = %+v (tools %v)", echo, names)
		}
		res, err := e.m.CallTool(t.Context(), "go_echo", json.RawMessage(`{"text":"hi"}`), call1)
		if err != nil || resultText(res) != "echo: hi" {
			t.Fatalf("echo = %v, %v", res, err)
		}
		if _, err := e.m.CallTool(t.Context(), "go_fail", nil, call1); err == nil || !strings.Contains(err.Error(), "it broke") {
			t.Fatalf("fail = %v, want the server's error", err)
		}
		if _, err := e.m.CallTool(t.Context(), "go_nope", nil, call1); !errs.Is(err, errs.NotFound) {
			t.Fatalf("unknown tool = %v, want NotFound", err)
		}
		if _, err := e.m.CallTool(t.Context(), "go_echo", json.RawMessage(`[1]`), call1); !errs.Is(err, errs.Invalid) {
			t.Fatalf("array arguments = %v, want Invalid", err)
		}
	})
}

func TestAFormElicitationIsAnsweredOverTheAPI(t *testing.T) {
	transports(t, func(t *testing.T, e *env) {
		done := e.callAsync(t.Context(), "go_ask_profile", `{}`, call1)
		asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
		list := e.m.Elicitations("")
		if len(list) != 1 {
			t.Fatalf("Elicitations = %+v, want one", list)
		}
		el := list[0]
		if el.ID != asked.Properties["id"] || !strings.HasPrefix(el.ID, "eli_") || el.Server != "go" || el.SessionID != "ses_1" ||
			el.Tool == nil || el.Tool.CallID != "call_1" || el.Mode != "form" || el.Message != "Tell me about you" {
			t.Fatalf("elicitation = %+v", el)
		}
		schema, _ := asked.Properties["requestedSchema"].(map[string]any)
		if props, _ := schema["properties"].(map[string]any); len(props) != 7 {
			t.Fatalf("asked event schema = %v", asked.Properties["requestedSchema"])
		}
		if got := e.m.Elicitations("ses_other"); len(got) != 0 {
			t.Fatalf("listed for another session: %+v", got)
		}

		bad := map[string]any{"name": "Al", "email": "not-an-email"}
		err := e.m.ReplyElicitation(el.ID, ElicitationReply{Action: "accept", Content: bad}, pending.Who{})
		if !errs.Is(err, errs.Invalid) || !strings.HasPrefix(err.Error(), "content.email:") {
			t.Fatalf("invalid content = %v, want Invalid naming content.email", err)
		}
		if _, ok := e.m.Elicitation(el.ID); !ok {
			t.Fatal("the elicitation stopped waiting after invalid content")
		}

		good := map[string]any{"name": "Ada", "email": "ada@example.com", "age": 36.0, "tags": []any{"a", "c"}, "plan": "pro"}
		if err := e.m.ReplyElicitation(el.ID, ElicitationReply{Action: "accept", Content: good}, pending.Who{}); err != nil {
			t.Fatal(err)
		}
		r := waitCall(t, done)
		if r.err != nil {
			t.Fatal(r.err)
		}
		want := `elicitation result: {"action":"accept","content":{"age":36,"color":"green","email":"ada@example.com","name":"Ada","plan":"pro","subscribe":false,"tags":["a","c"]}}`
		if got := resultText(r.res); got != want {
			t.Fatalf("tool result\n got %s\nwant %s", got, want)
		}
		replied := e.waitEvent(t, "mcp.elicitation.replied", nil)
		if replied.Properties["id"] != el.ID || replied.Properties["action"] != "accept" || replied.Properties["cause"] != "reply" {
			t.Fatalf("replied event = %v", replied.Properties)
		}
		if err := e.m.ReplyElicitation(el.ID, ElicitationReply{Action: "decline"}, pending.Who{}); !errs.Is(err, errs.Conflict) {
			t.Fatalf("late reply = %v, want Conflict", err)
		}
	})
}

func TestDeclineAndCancelReachTheServer(t *testing.T) {
	for _, action := range []string{"decline", "cancel"} {
		t.Run("the person chooses "+action, func(t *testing.T) {
			e := newEnv(t, Options{})
			cfg, _ := stdioConfig(t)
			mustAdd(t, e, "go", cfg)
			done := e.callAsync(t.Context(), "go_ask_profile", `{}`, call1)
			asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
			// Content sent with a refusal is dropped, not validated.
			if err := e.m.ReplyElicitation(asked.Properties["id"].(string), ElicitationReply{Action: action, Content: map[string]any{"x": 1}}, pending.Who{}); err != nil {
				t.Fatal(err)
			}
			r := waitCall(t, done)
			if r.err != nil || resultText(r.res) != `elicitation result: {"action":"`+action+`"}` {
				t.Fatalf("result = %v, %v", r.res, r.err)
			}
		})
	}
}

func TestBadRepliesAreRefused(t *testing.T) {
	e := newEnv(t, Options{})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	done := e.callAsync(t.Context(), "go_ask_profile", `{}`, call1)
	asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
	elID := asked.Properties["id"].(string)
	tests := []struct {
		name  string
		reply ElicitationReply
		want  string
	}{
		{"no action", ElicitationReply{}, "action: required"},
		{"an unknown action", ElicitationReply{Action: "maybe"}, "action: must be"},
		{"a missing required field", ElicitationReply{Action: "accept", Content: map[string]any{"email": "a@b.co"}}, "content.name: required"},
		{"a field not in the form", ElicitationReply{Action: "accept", Content: map[string]any{"name": "Ada", "email": "a@b.co", "shoe": 42}}, "content.shoe:"},
		{"a value outside the enum", ElicitationReply{Action: "accept", Content: map[string]any{"name": "Ada", "email": "a@b.co", "color": "pink"}}, "content.color:"},
		{"a number below the minimum", ElicitationReply{Action: "accept", Content: map[string]any{"name": "Ada", "email": "a@b.co", "age": -1.0}}, "content.age: must be at least 0"},
		{"a fraction for an integer", ElicitationReply{Action: "accept", Content: map[string]any{"name": "Ada", "email": "a@b.co", "age": 1.5}}, "content.age: must be a whole number"},
		{"too many choices", ElicitationReply{Action: "accept", Content: map[string]any{"name": "Ada", "email": "a@b.co", "tags": []any{"a", "b", "c"}}}, "content.tags: choose at most 2"},
		{"a string too short", ElicitationReply{Action: "accept", Content: map[string]any{"name": "A", "email": "a@b.co"}}, "content.name: must be at least 2"},
		{"a wrong type", ElicitationReply{Action: "accept", Content: map[string]any{"name": "Ada", "email": "a@b.co", "subscribe": "yes"}}, "content.subscribe: must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.m.ReplyElicitation(elID, tt.reply, pending.Who{})
			if !errs.Is(err, errs.Invalid) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %v, want Invalid starting %q", err, tt.want)
			}
		})
	}
	if err := e.m.ReplyElicitation("eli_unknown", ElicitationReply{Action: "cancel"}, pending.Who{}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("unknown = %v, want NotFound", err)
	}
	if err := e.m.ReplyElicitation(elID, ElicitationReply{Action: "cancel"}, pending.Who{}); err != nil {
		t.Fatal(err)
	}
	waitCall(t, done)
}

func TestURLElicitations(t *testing.T) {
	transports(t, func(t *testing.T, e *env) {
		t.Run("the request path shows the URL and relays completion", func(t *testing.T) {
			done := e.callAsync(t.Context(), "go_open_link", `{}`, call1)
			asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
			p := asked.Properties
			if p["mode"] != "url" || p["url"] != "https://auth.example.com/connect?x=1" || p["domain"] != "auth.example.com" || p["elicitationId"] != "link-1" {
				t.Fatalf("asked = %v", p)
			}
			if err := e.m.ReplyElicitation(p["id"].(string), ElicitationReply{Action: "accept", Content: map[string]any{"a": 1}}, pending.Who{}); !errs.Is(err, errs.Invalid) {
				t.Fatalf("URL accept with content = %v, want Invalid", err)
			}
			if err := e.m.ReplyElicitation(p["id"].(string), ElicitationReply{Action: "accept"}, pending.Who{}); err != nil {
				t.Fatal(err)
			}
			completed := e.waitEvent(t, "mcp.elicitation.completed", nil)
			if completed.Properties["elicitationId"] != "link-1" || completed.Properties["server"] != "go" {
				t.Fatalf("completed = %v", completed.Properties)
			}
			if r := waitCall(t, done); r.err != nil || resultText(r.res) != "url elicitation: accept" {
				t.Fatalf("result = %v, %v", r.res, r.err)
			}
		})
		t.Run("a -32042 error becomes a pending URL and the call is retried", func(t *testing.T) {
			done := e.callAsync(t.Context(), "go_needs_url", `{}`, call1)
			asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
			p := asked.Properties
			if p["mode"] != "url" || p["required"] != true || p["domain"] != "login.example.org" || p["sessionID"] != "ses_1" {
				t.Fatalf("asked = %v", p)
			}
			select {
			case r := <-done:
				t.Fatalf("the call finished before the person answered: %v %v", r.res, r.err)
			default:
			}
			if err := e.m.ReplyElicitation(p["id"].(string), ElicitationReply{Action: "accept"}, pending.Who{}); err != nil {
				t.Fatal(err)
			}
			if r := waitCall(t, done); r.err != nil || resultText(r.res) != "authorised call done" {
				t.Fatalf("result = %v, %v", r.res, r.err)
			}
		})
	})
	t.Run("declining a -32042 URL fails the call", func(t *testing.T) {
		e := newEnv(t, Options{})
		cfg, _ := stdioConfig(t)
		mustAdd(t, e, "go", cfg)
		done := e.callAsync(t.Context(), "go_needs_url", `{}`, call1)
		asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
		if err := e.m.ReplyElicitation(asked.Properties["id"].(string), ElicitationReply{Action: "decline"}, pending.Who{}); err != nil {
			t.Fatal(err)
		}
		if r := waitCall(t, done); r.err == nil || !strings.Contains(r.err.Error(), "the user chose decline") {
			t.Fatalf("result = %v, %v", r.res, r.err)
		}
	})
}

func TestAnUnansweredElicitationTimesOutAsCancel(t *testing.T) {
	e := newEnv(t, Options{ElicitationTimeout: 100 * time.Millisecond})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	r := waitCall(t, e.callAsync(t.Context(), "go_ask_profile", `{}`, call1))
	if r.err != nil || resultText(r.res) != `elicitation result: {"action":"cancel"}` {
		t.Fatalf("result = %v, %v", r.res, r.err)
	}
	if ev := e.waitEvent(t, "mcp.elicitation.replied", nil); ev.Properties["cause"] != "timeout" {
		t.Fatalf("replied = %v", ev.Properties)
	}
}

func TestAnElicitationTheServerCancelsGoesAway(t *testing.T) {
	e := newEnv(t, Options{})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	done := e.callAsync(t.Context(), "go_ask_briefly", `{}`, call1)
	asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
	gone := e.waitEvent(t, "mcp.elicitation.replied", nil)
	if gone.Properties["id"] != asked.Properties["id"] || gone.Properties["cause"] != "cancel" {
		t.Fatalf("replied = %v", gone.Properties)
	}
	if r := waitCall(t, done); r.err != nil || resultText(r.res) != "gave up: true" {
		t.Fatalf("result = %v, %v", r.res, r.err)
	}
	if len(e.m.Elicitations("")) != 0 {
		t.Fatal("a cancelled elicitation is still pending")
	}
}

func TestAbortingTheCallDropsItsElicitation(t *testing.T) {
	e := newEnv(t, Options{})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := e.callAsync(ctx, "go_ask_profile", `{}`, call1)
	e.waitEvent(t, "mcp.elicitation.asked", nil)
	cancel()
	if r := waitCall(t, done); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("aborted call = %v, %v", r.res, r.err)
	}
	if ev := e.waitEvent(t, "mcp.elicitation.replied", nil); ev.Properties["cause"] != "cancel" {
		t.Fatalf("replied = %v", ev.Properties)
	}
	if got := e.m.Elicitations(""); len(got) != 0 {
		t.Fatalf("still pending: %+v", got)
	}
}

func TestACrashedServerFailsAndCanBeReconnected(t *testing.T) {
	t.Run("killed while idle", func(t *testing.T) {
		e := newEnv(t, Options{})
		cfg, pidFile := stdioConfig(t)
		mustAdd(t, e, "go", cfg)
		if err := syscall.Kill(serverPID(t, pidFile), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		ev := e.waitEvent(t, "mcp.status.changed", func(p map[string]any) bool { return p["status"] == Failed })
		if ev.Properties["server"] != "go" || !strings.Contains(ev.Properties["error"].(string), "killed") {
			t.Fatalf("status event = %v", ev.Properties)
		}
		if st := e.m.Status()["go"]; st.Status != Failed || st.Error == "" {
			t.Fatalf("status = %+v", st)
		}
		if len(e.m.ToolInfos()) != 0 {
			t.Fatal("a failed server's tools are still offered")
		}
		st, err := e.m.Connect(t.Context(), "go")
		if err != nil || st.Status != Connected {
			t.Fatalf("reconnect = %+v, %v", st, err)
		}
		res, err := e.m.CallTool(t.Context(), "go_echo", json.RawMessage(`{"text":"back"}`), call1)
		if err != nil || resultText(res) != "echo: back" {
			t.Fatalf("echo after reconnect = %v, %v", res, err)
		}
	})
	t.Run("killed in the middle of an elicitation", func(t *testing.T) {
		e := newEnv(t, Options{})
		cfg, pidFile := stdioConfig(t)
		mustAdd(t, e, "go", cfg)
		done := e.callAsync(t.Context(), "go_ask_profile", `{}`, call1)
		asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
		if err := syscall.Kill(serverPID(t, pidFile), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r := waitCall(t, done)
		if r.err == nil {
			t.Fatalf("the call succeeded after the server died: %v", resultText(r.res))
		}
		gone := e.waitEvent(t, "mcp.elicitation.replied", nil)
		if gone.Properties["id"] != asked.Properties["id"] || gone.Properties["cause"] != "cancel" {
			t.Fatalf("replied = %v", gone.Properties)
		}
		e.waitEvent(t, "mcp.status.changed", func(p map[string]any) bool { return p["status"] == Failed })
		if got := e.m.Elicitations(""); len(got) != 0 {
			t.Fatalf("still pending: %+v", got)
		}
	})
}

func TestDisconnectAndConnect(t *testing.T) {
	e := newEnv(t, Options{})
	cfg, pidFile := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	pid := serverPID(t, pidFile)
	if err := e.m.Disconnect(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if st := e.m.Status()["go"]; st.Status != Disabled {
		t.Fatalf("status = %+v, want disabled", st)
	}
	if alive(pid) {
		t.Fatal("the server process survived its disconnect")
	}
	if len(e.m.ToolInfos()) != 0 {
		t.Fatal("a disconnected server's tools are still offered")
	}
	e.waitEvent(t, "mcp.status.changed", func(p map[string]any) bool { return p["status"] == Disabled })
	if st, err := e.m.Connect(t.Context(), "go"); err != nil || st.Status != Connected {
		t.Fatalf("connect = %+v, %v", st, err)
	}
	for _, op := range []func() error{
		func() error { return e.m.Disconnect(t.Context(), "nope") },
		func() error { _, err := e.m.Connect(t.Context(), "nope"); return err },
	} {
		if err := op(); !errs.Is(err, errs.NotFound) {
			t.Fatalf("unknown server = %v, want NotFound", err)
		}
	}
}

func TestToolListChangesArePickedUp(t *testing.T) {
	e := newEnv(t, Options{})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	if _, err := e.m.CallTool(t.Context(), "go_add_tool", json.RawMessage(`{"name":"late.tool"}`), call1); err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, "mcp.tools.changed", func(p map[string]any) bool { return p["server"] == "go" })
	deadline := time.Now().Add(10 * time.Second)
	for {
		found := false
		for _, ti := range e.m.ToolInfos() {
			found = found || (ti.Name == QualifiedName("go", "late.tool") && ti.Tool == "late.tool")
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late.tool never appeared: %+v", e.m.ToolInfos())
		}
		e.waitEvent(t, "mcp.tools.changed", nil)
	}
	// "late.tool" had a character replaced, so its name carries a hash: go_late_tool stays free.
	res, err := e.m.CallTool(t.Context(), QualifiedName("go", "late.tool"), nil, call1)
	if err != nil || resultText(res) != "new tool" {
		t.Fatalf("late tool = %v, %v", res, err)
	}
}

func TestServersFromConfig(t *testing.T) {
	ts := httpTestServer(t, "s3cret")
	cfg, pidFile := stdioConfig(t)
	servers := map[string]Config{}
	for name, raw := range map[string]json.RawMessage{
		"local":    cfg,
		"remote":   remoteConfig(ts.URL, map[string]string{"Authorization": "Bearer s3cret"}),
		"badtoken": remoteConfig(ts.URL, map[string]string{"Authorization": "Bearer wrong"}),
		"off":      json.RawMessage(`{"type":"local","command":["false"],"enabled":false}`),
		"broken":   json.RawMessage(`{"type":"local"}`),
		"missing":  json.RawMessage(`{"type":"local","command":["/nonexistent/mcp-server"]}`),
	} {
		var c Config // as tandem.json's loader decodes it: unchecked
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		servers[name] = c
	}
	e := newEnv(t, Options{Servers: servers})
	e.m.Start(t.Context())
	st := e.m.Status()
	for name, want := range map[string]string{"local": Connected, "remote": Connected, "badtoken": Failed, "off": Disabled, "broken": Failed, "missing": Failed} {
		if st[name].Status != want {
			t.Errorf("%s = %+v, want %s", name, st[name], want)
		}
		if want == Failed && st[name].Error == "" {
			t.Errorf("%s failed without an error", name)
		}
	}
	if !strings.Contains(st["broken"].Error, "command") {
		t.Errorf("broken's error %q does not name the command", st["broken"].Error)
	}
	pid := serverPID(t, pidFile)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatal("a local server outlived the manager")
	}
}

func TestAddRefusesBadConfigsAndReportsUnreachableServers(t *testing.T) {
	e := newEnv(t, Options{})
	bad := map[string]string{
		"no type":            `{"command":["x"]}`,
		"an unknown type":    `{"type":"sse","url":"http://x"}`,
		"an empty command":   `{"type":"local","command":[]}`,
		"a non-http url":     `{"type":"remote","url":"ftp://x"}`,
		"an unknown field":   `{"type":"local","command":["x"],"cmd":"y"}`,
		"a url for a local":  `{"type":"local","command":["x"],"url":"http://x"}`,
		"a negative timeout": `{"type":"local","command":["x"],"timeout":-1}`,
		"not an object":      `[1]`,
	}
	for name, cfg := range bad {
		t.Run("a config with "+name+" is refused", func(t *testing.T) {
			if _, err := e.m.Add(t.Context(), "x", json.RawMessage(cfg)); !errs.Is(err, errs.Invalid) {
				t.Fatalf("Add = %v, want Invalid", err)
			}
			if _, ok := e.m.Status()["x"]; ok {
				t.Fatal("a refused config was registered")
			}
		})
	}
	t.Run("an unreachable remote is listed as failed", func(t *testing.T) {
		st, err := e.m.Add(t.Context(), "gone", json.RawMessage(`{"type":"remote","url":"http://127.0.0.1:1/mcp","timeout":3000}`))
		if err != nil || st["gone"].Status != Failed || st["gone"].Error == "" {
			t.Fatalf("Add = %+v, %v", st, err)
		}
	})
}

func TestARemoteServerThatGoesAwayIsMarkedFailed(t *testing.T) {
	ts := httpTestServer(t, "")
	e := newEnv(t, Options{})
	mustAdd(t, e, "remote", remoteConfig(ts.URL, nil))
	ts.CloseClientConnections()
	ts.Close()
	ev := e.waitEvent(t, "mcp.status.changed", func(p map[string]any) bool { return p["status"] == Failed })
	if ev.Properties["server"] != "remote" || ev.Properties["error"] == "" {
		t.Fatalf("status event = %v", ev.Properties)
	}
}
