package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// codexDir is where `npm ci` installs the pinned Codex CLI (its package.json holds the version).
const codexDir = "internal/door/appserver/testdata/codex"

// codexBinary is the pinned Codex CLI's native binary, or the test ends through testenv.Missing.
func codexBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		testenv.Missing(t, "the pinned Codex binary is installed for linux/amd64 only")
	}
	bin := filepath.Join(testenv.ModuleRoot(t), codexDir, "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "the Codex CLI is not installed: run `npm ci` in %s", codexDir)
	}
	return bin
}

// codexSchema is the JSON Schema of the app-server protocol as the pinned Codex generates it
// (with its experimental parts: the Codex TUI opts in to them), written into a temporary directory
// for this test; it is never committed.
type codexSchema struct {
	dir      string
	resolved map[string]*jsonschema.Resolved
	params   map[string]*jsonschema.Resolved // "<file> <method>" -> that method's params
}

func loadCodexSchema(t *testing.T) *codexSchema {
	t.Helper()
	bin := codexBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "app-server", "generate-json-schema", "--experimental", "--out", dir)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CODEX_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codex app-server generate-json-schema: %v\n%s", err, out)
	}
	return &codexSchema{dir: dir, resolved: map[string]*jsonschema.Resolved{}, params: map[string]*jsonschema.Resolved{}}
}

// schema resolves one generated file (ServerNotification, v2/ThreadStartResponse, …).
func (cs *codexSchema) schema(t *testing.T, name string) *jsonschema.Resolved {
	t.Helper()
	if rs, ok := cs.resolved[name]; ok {
		return rs
	}
	raw, err := os.ReadFile(filepath.Join(cs.dir, name+".json"))
	if err != nil {
		t.Fatalf("the pinned Codex has no schema %s: %v", name, err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cs.resolved[name] = rs
	return rs
}

// methodParams resolves the params schema of one method of a union file (ServerNotification,
// ServerRequest), so that a violation names the field rather than every variant; nil when the
// union has no such method.
func (cs *codexSchema) methodParams(t *testing.T, file, method string) *jsonschema.Resolved {
	t.Helper()
	key := file + " " + method
	if rs, ok := cs.params[key]; ok {
		return rs
	}
	raw, err := os.ReadFile(filepath.Join(cs.dir, file+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var rs *jsonschema.Resolved
	for _, v := range root.OneOf {
		m := v.Properties["method"]
		if m == nil || len(m.Enum) != 1 || m.Enum[0] != method {
			continue
		}
		p := v.Properties["params"]
		if p == nil {
			break
		}
		one := &jsonschema.Schema{Schema: root.Schema, Definitions: root.Definitions, Ref: p.Ref, Type: p.Type, Types: p.Types}
		if rs, err = one.Resolve(nil); err != nil {
			t.Fatalf("%s %s: %v", file, method, err)
		}
		break
	}
	cs.params[key] = rs
	return rs
}

// responseSchemas name the result schema of every request tandem answers.
var responseSchemas = map[string]string{
	"initialize":              "v1/InitializeResponse",
	"account/read":            "v2/GetAccountResponse",
	"account/rateLimits/read": "v2/GetAccountRateLimitsResponse",
	"account/bedrock/checkGovCloudRequirements": "v2/BedrockCheckGovCloudRequirementsResponse",
	"config/read":             "v2/ConfigReadResponse",
	"configRequirements/read": "v2/ConfigRequirementsReadResponse",
	"model/list":              "v2/ModelListResponse",
	"hooks/list":              "v2/HooksListResponse",
	"skills/list":             "v2/SkillsListResponse",
	"plugin/installed":        "v2/PluginInstalledResponse",
	"collaborationMode/list":  "v2/CollaborationModeListResponse",
	"mcpServerStatus/list":    "v2/ListMcpServerStatusResponse",
	"thread/start":            "v2/ThreadStartResponse",
	"thread/resume":           "v2/ThreadResumeResponse",
	"thread/list":             "v2/ThreadListResponse",
	"thread/loaded/list":      "v2/ThreadLoadedListResponse",
	"thread/read":             "v2/ThreadReadResponse",
	"thread/turns/list":       "v2/ThreadTurnsListResponse",
	"thread/name/set":         "v2/ThreadSetNameResponse",
	"thread/unsubscribe":      "v2/ThreadUnsubscribeResponse",
	"turn/start":              "v2/TurnStartResponse",
	"turn/steer":              "v2/TurnSteerResponse",
	"turn/interrupt":          "v2/TurnInterruptResponse",
}

// wireMessage is one message of a conversation: in ("<<" sent by tandem) or out (">>").
type wireMessage struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// problems checks every message tandem sent in a conversation against the pinned schema: a
// notification against ServerNotification, a request against ServerRequest, a result against
// the response schema of the request it answers (an error against JSONRPCError). It returns one
// line per message that does not conform, and the number checked.
func (cs *codexSchema) problems(t *testing.T, conv []wireMessage) (bad []string, checked int) {
	t.Helper()
	asked := map[string]string{} // the client's request id -> method
	for _, m := range conv {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(m.Msg, &msg); err != nil {
			bad = append(bad, fmt.Sprintf("%s: not JSON: %v", m.Msg, err))
			continue
		}
		if m.Dir == ">>" {
			if msg.Method != "" && len(msg.ID) > 0 {
				asked[string(msg.ID)] = msg.Method
			}
			continue
		}
		var doc any
		_ = json.Unmarshal(m.Msg, &doc)
		var rs *jsonschema.Resolved
		switch {
		case msg.Method != "":
			file := "ServerNotification"
			if len(msg.ID) > 0 {
				file = "ServerRequest"
			}
			if rs = cs.methodParams(t, file, msg.Method); rs == nil {
				bad = append(bad, fmt.Sprintf("%s has no method %q: %s", file, msg.Method, truncate(string(m.Msg), 300)))
				continue
			}
			var whole struct {
				Params any `json:"params"`
			}
			_ = json.Unmarshal(m.Msg, &whole)
			doc = whole.Params
		case len(msg.Error) > 0:
			rs = cs.schema(t, "JSONRPCError")
		default:
			method := asked[string(msg.ID)]
			name, ok := responseSchemas[method]
			if !ok {
				bad = append(bad, fmt.Sprintf("a result to %q, which has no schema listed here: %s", method, m.Msg))
				continue
			}
			rs = cs.schema(t, name)
			_ = json.Unmarshal(msg.Result, &doc)
		}
		checked++
		if err := rs.Validate(doc); err != nil {
			bad = append(bad, fmt.Sprintf("%v\n    in %s", err, truncate(string(m.Msg), 600)))
		}
	}
	return bad, checked
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// conforms fails the test for every message tandem sent that the pinned schema refuses.
func (cs *codexSchema) conforms(t *testing.T, conv []wireMessage) {
	t.Helper()
	bad, checked := cs.problems(t, conv)
	for _, b := range bad {
		t.Errorf("not Codex's app-server protocol: %s", b)
	}
	if checked == 0 {
		t.Error("no message of tandem's was checked against the schema")
	}
}

// readTrace reads a --trace file.
func readTrace(t *testing.T, path string) []wireMessage {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []wireMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	for dec.More() {
		var m wireMessage
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}
