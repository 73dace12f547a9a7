package mcpclient

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/process"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// These tests run @modelcontextprotocol/server-everything, the reference MCP server, installed by
// `npm ci` in testdata/everything (CI does that). Without it they skip locally and fail in CI.

func everythingEntry(t *testing.T) string {
	t.Helper()
	return testenv.ServerEverything(t)
}

func everythingStdio(t *testing.T) json.RawMessage {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"type": "local", "command": []string{"node", everythingEntry(t), "stdio"}})
	return cfg
}

// everythingHTTP starts server-everything's Streamable HTTP mode on a free loopback port.
func everythingHTTP(t *testing.T) json.RawMessage {
	t.Helper()
	entry := everythingEntry(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	process.OwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killProcessGroup(cmd)
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return remoteConfig("http://"+addr, nil)
}

var adaProfile = map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "untitledMultipleSelectEnum": []any{"Piano", "Drums"}}

func TestEverythingFormElicitation(t *testing.T) {
	for _, tr := range []struct {
		name string
		cfg  func(*testing.T) json.RawMessage
	}{{"over stdio", everythingStdio}, {"over streamable HTTP", everythingHTTP}} {
		t.Run("accepted with valid content "+tr.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			mustAdd(t, e, "everything", tr.cfg(t))
			done := e.callAsync(t.Context(), "everything_trigger-elicitation-request", `{}`, call1)
			asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
			id := asked.Properties["id"].(string)
			if asked.Properties["server"] != "everything" || asked.Properties["mode"] != "form" || asked.Properties["sessionID"] != "ses_1" {
				t.Fatalf("asked = %v", asked.Properties)
			}
			// The form keeps server-everything's property order, in the event and in the pending list.
			listed, ok := e.m.Elicitation(id)
			if !ok {
				t.Fatalf("elicitation %s is not pending", id)
			}
			pendingJSON, err := json.Marshal(listed)
			if err != nil {
				t.Fatal(err)
			}
			for where, raw := range map[string]json.RawMessage{"the event": asked.Raw, "the pending list": pendingJSON} {
				if diff := cmp.Diff(everythingFieldOrder, propertyOrder(t, raw)); diff != "" {
					t.Errorf("property order in %s (-want +got):\n%s", where, diff)
				}
			}
			// Invalid first: 400 naming the field, and the request stays pending.
			err = e.m.ReplyElicitation(id, ElicitationReply{Action: "accept", Content: map[string]any{"name": "Ada", "integer": 500.0}}, pending.Who{})
			if !errs.Is(err, errs.Invalid) || !strings.HasPrefix(err.Error(), "content.integer: must be at most 100") {
				t.Fatalf("invalid reply = %v", err)
			}
			err = e.m.ReplyElicitation(id, ElicitationReply{Action: "accept", Content: map[string]any{"check": true}}, pending.Who{})
			if !errs.Is(err, errs.Invalid) || !strings.HasPrefix(err.Error(), "content.name: required") {
				t.Fatalf("reply without the required name = %v", err)
			}
			if err := e.m.ReplyElicitation(id, ElicitationReply{Action: "accept", Content: adaProfile}, pending.Who{}); err != nil {
				t.Fatal(err)
			}
			r := waitCall(t, done)
			if r.err != nil || r.res.IsError {
				t.Fatalf("result = %+v, %v", r.res, r.err)
			}
			out := resultText(r.res)
			for _, want := range []string{"User provided the requested information", `"name": "Ada Lovelace"`, `"Drums"`, `"integer": 42`} {
				if !strings.Contains(out, want) {
					t.Errorf("result lacks %s:\n%s", want, out)
				}
			}
		})
	}
	for action, want := range map[string]string{"decline": "declined", "cancel": "cancelled"} {
		t.Run("the person chooses "+action, func(t *testing.T) {
			e := newEnv(t, Options{})
			mustAdd(t, e, "everything", everythingStdio(t))
			done := e.callAsync(t.Context(), "everything_trigger-elicitation-request", `{}`, call1)
			asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
			if err := e.m.ReplyElicitation(asked.Properties["id"].(string), ElicitationReply{Action: action}, pending.Who{}); err != nil {
				t.Fatal(err)
			}
			r := waitCall(t, done)
			if r.err != nil || !strings.Contains(resultText(r.res), want) {
				t.Fatalf("result = %v, %v", resultText(r.res), r.err)
			}
		})
	}
}

func TestEverythingURLElicitation(t *testing.T) {
	t.Run("the request path", func(t *testing.T) {
		e := newEnv(t, Options{})
		mustAdd(t, e, "everything", everythingStdio(t))
		done := e.callAsync(t.Context(), "everything_trigger-url-elicitation", `{"url":"https://example.com/consent","elicitationId":"el-1"}`, call1)
		asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
		p := asked.Properties
		if p["mode"] != "url" || p["url"] != "https://example.com/consent" || p["domain"] != "example.com" || p["elicitationId"] != "el-1" {
			t.Fatalf("asked = %v", p)
		}
		if err := e.m.ReplyElicitation(p["id"].(string), ElicitationReply{Action: "accept"}, pending.Who{}); err != nil {
			t.Fatal(err)
		}
		if r := waitCall(t, done); r.err != nil || !strings.Contains(resultText(r.res), "User completed the URL elicitation flow") {
			t.Fatalf("result = %v, %v", r.res, r.err)
		}
	})
	t.Run("the -32042 error path", func(t *testing.T) {
		e := newEnv(t, Options{})
		mustAdd(t, e, "everything", everythingStdio(t))
		done := e.callAsync(t.Context(), "everything_trigger-url-elicitation", `{"url":"https://example.com/consent","elicitationId":"el-2","errorPath":true}`, call1)
		first := e.waitEvent(t, "mcp.elicitation.asked", nil)
		if first.Properties["required"] != true || first.Properties["domain"] != "modelcontextprotocol.io" {
			t.Fatalf("first = %v", first.Properties)
		}
		if err := e.m.ReplyElicitation(first.Properties["id"].(string), ElicitationReply{Action: "accept"}, pending.Who{}); err != nil {
			t.Fatal(err)
		}
		// The retried call falls through to the request path: a second, ordinary URL elicitation.
		second := e.waitEvent(t, "mcp.elicitation.asked", nil)
		if second.Properties["required"] == true || second.Properties["url"] != "https://example.com/consent" {
			t.Fatalf("second = %v", second.Properties)
		}
		if err := e.m.ReplyElicitation(second.Properties["id"].(string), ElicitationReply{Action: "accept"}, pending.Who{}); err != nil {
			t.Fatal(err)
		}
		if r := waitCall(t, done); r.err != nil || !strings.Contains(resultText(r.res), "User completed the URL elicitation flow") {
			t.Fatalf("result = %v, %v", r.res, r.err)
		}
	})
}

func TestEverythingKilledMidElicitation(t *testing.T) {
	e := newEnv(t, Options{})
	mustAdd(t, e, "everything", everythingStdio(t))
	done := e.callAsync(t.Context(), "everything_trigger-elicitation-request", `{}`, call1)
	asked := e.waitEvent(t, "mcp.elicitation.asked", nil)
	e.m.mu.Lock()
	pid := e.m.servers["everything"].conn.cmd.Process.Pid
	e.m.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := waitCall(t, done); r.err == nil {
		t.Fatalf("the call succeeded after the server died: %s", resultText(r.res))
	}
	gone := e.waitEvent(t, "mcp.elicitation.replied", nil)
	if gone.Properties["id"] != asked.Properties["id"] || gone.Properties["cause"] != "cancel" {
		t.Fatalf("replied = %v", gone.Properties)
	}
	e.waitEvent(t, "mcp.status.changed", func(p map[string]any) bool { return p["status"] == Failed })
	if st := e.m.Status()["everything"]; st.Status != Failed || !strings.Contains(st.Error, "killed") {
		t.Fatalf("status = %+v", st)
	}
	if len(e.m.Elicitations("")) != 0 {
		t.Fatal("the elicitation is still pending")
	}
}

// everythingFieldOrder is the order in which server-everything lists the fields of its form.
var everythingFieldOrder = []string{"name", "check", "firstLine", "email", "homepage", "birthdate", "integer", "number",
	"untitledSingleSelectEnum", "untitledMultipleSelectEnum", "titledSingleSelectEnum", "titledMultipleSelectEnum", "legacyTitledEnum"}

// propertyOrder lists the keys of requestedSchema.properties in an elicitation's JSON, in order.
func propertyOrder(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var e struct {
		RequestedSchema struct {
			Properties json.RawMessage `json:"properties"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(e.RequestedSchema.Properties))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("properties: %v in %s", err, raw)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
