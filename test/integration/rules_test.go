//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// userRules is the user's configuration of these tests: touch is denied, echo allowed, and
// everything else asks (the default).
const userRules = `{"permission": {"bash": {"touch *": "deny", "echo *": "allow"}}}`

// allowAll is what a client (an MCP client's model, a script) sends to approve its own commands.
var allowAll = []map[string]string{{"permission": "bash", "pattern": "*", "action": "allow"}}

// writeUserConfig writes the user's own configuration file under configHome ($XDG_CONFIG_HOME).
func writeUserConfig(t *testing.T, configHome, name, content string) {
	t.Helper()
	dir := filepath.Join(configHome, "tandem")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// lastToolPart is the last tool part of a session's messages, and what it says (output or error).
func lastToolPart(t *testing.T, msgs []session.WithParts) (status, detail string) {
	t.Helper()
	tools := toolParts(msgs)
	if len(tools) == 0 {
		t.Fatal("no tool part")
	}
	p := tools[len(tools)-1]
	if p.State.Status == "completed" && p.State.Output != nil {
		return p.State.Status, *p.State.Output
	}
	return p.State.Status, p.State.Error
}

func TestMCPClientsPermissionCannotApproveItsOwnCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	writeUserConfig(t, data, "tandem.json", userRules)
	port := testenv.UnusedPort(t)
	// `tandem mcp` with its default --approvals deny, and a client that cannot answer approvals.
	cmd := exec.Command(bin, "mcp", "--port", strconv.Itoa(port), "--data-dir", data, "--dir", project)
	cmd.Env = append(os.Environ(), "TANDEM_SERVER_PASSWORD="+testPassword, "XDG_STATE_HOME="+data, "XDG_CONFIG_HOME="+data, "HOME="+data)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "self-approver", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	messages := func(t *testing.T, sid string) []session.WithParts {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/session/%s/message", port, sid), nil)
		req.SetBasicAuth(testUser, testPassword)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var msgs []session.WithParts
		if err := json.NewDecoder(resp.Body).Decode(&msgs); err != nil {
			t.Fatal(err)
		}
		return msgs
	}

	tests := []struct {
		name    string
		command string
		made    string // the file the command would make, which must not exist
		want    string // in the tool's error
	}{
		{name: "a command the user's config denies is refused", command: "touch denied-by-user", made: "denied-by-user", want: "The user has specified a rule"},
		{name: "a command the user's config asks for is asked, and rejected under --approvals deny", command: "mkdir asked-dir", made: "asked-dir", want: "cannot answer approvals"},
		{name: "a command that cannot be judged is asked, and rejected under --approvals deny", command: "eval 'mkdir evaled'", made: "evaled", want: "cannot answer approvals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: " + tt.command, "permission": allowAll})
			sid, _ := out["sessionId"].(string)
			if !strings.HasPrefix(sid, "ses_") {
				t.Fatalf("tandem: %v", out)
			}
			if approvals, _ := out["approvals"].(string); !strings.Contains(approvals, "allow rules cannot allow what the user's rules ask or deny") {
				t.Errorf("approvals %q do not say that the allow rules were not the client's to use", approvals)
			}
			status, detail := lastToolPart(t, messages(t, sid))
			if status != "error" || !strings.Contains(detail, tt.want) {
				t.Errorf("tool %s %q, want an error saying %q", status, detail, tt.want)
			}
			if _, err := os.Lstat(filepath.Join(project, tt.made)); !os.IsNotExist(err) {
				t.Errorf("%s exists (%v): the client's allow-all ran the command", tt.made, err)
			}
		})
	}
	t.Run("a command the user's config allows runs", func(t *testing.T) {
		_, out := callTool(t, cs, "tandem", map[string]any{"prompt": "run: echo allowed", "permission": allowAll})
		if status, detail := lastToolPart(t, messages(t, out["sessionId"].(string))); status != "completed" || detail != "allowed\n" {
			t.Fatalf("tool %s %q", status, detail)
		}
	})
}

func TestASessionsAllowAllCannotOverruleTheUser(t *testing.T) {
	td := newTandem(t, setup{})
	writeUserConfig(t, td.env["XDG_CONFIG_HOME"], "tandem.jsonc", "// the user's own rules\n"+userRules)
	td.start(t)
	t.Cleanup(func() { td.stop(t) })

	body, _ := json.Marshal(map[string]any{"permission": allowAll})
	var sess session.Session
	td.call(t, http.MethodPost, "/session", string(body), http.StatusOK, &sess)
	if len(sess.Permission) != 1 || sess.Permission[0].Action != "allow" {
		t.Fatalf("the session's rules are not kept as sent: %+v", sess.Permission)
	}

	t.Run("a command the user's config denies is refused without asking", func(t *testing.T) {
		td.prompt(t, sess.ID, "run: touch denied-by-user")
		if status, detail := lastToolPart(t, td.messages(t, sess.ID)); status != "error" || !strings.Contains(detail, "The user has specified a rule") {
			t.Fatalf("tool %s %q", status, detail)
		}
		if _, err := os.Lstat(filepath.Join(td.project, "denied-by-user")); !os.IsNotExist(err) {
			t.Fatalf("the file exists (%v)", err)
		}
	})
	t.Run("a command the user's config asks for still asks, and says what the session would have allowed", func(t *testing.T) {
		td.promptAsync(t, sess.ID, "run: mkdir asked-dir")
		var waiting []permissionRequest
		testenv.Eventually(t, "the command asks", func() bool { waiting = td.pending(t, sess.ID); return len(waiting) == 1 })
		ignored, _ := json.Marshal(waiting[0].Metadata["ignoredSessionRules"])
		if want := `[{"action":"allow","pattern":"*","permission":"bash"}]`; string(ignored) != want {
			t.Errorf("metadata.ignoredSessionRules %s, want %s", ignored, want)
		}
		td.reply(t, waiting[0].ID, "reject", "")
		testenv.Eventually(t, "the turn ends", func() bool { _, busy := td.statuses(t)[sess.ID]; return !busy })
		if _, err := os.Lstat(filepath.Join(td.project, "asked-dir")); !os.IsNotExist(err) {
			t.Fatalf("the directory exists (%v)", err)
		}
	})
	t.Run("a command the user's config allows runs", func(t *testing.T) {
		td.prompt(t, sess.ID, "run: echo allowed")
		if status, detail := lastToolPart(t, td.messages(t, sess.ID)); status != "completed" || detail != "allowed\n" {
			t.Fatalf("tool %s %q", status, detail)
		}
	})
	t.Run("GET /config shows the rules in the file's order", func(t *testing.T) {
		var doc struct {
			Permission json.RawMessage `json:"permission"`
		}
		td.call(t, http.MethodGet, "/config", "", http.StatusOK, &doc)
		if want := `{"bash":{"touch *":"deny","echo *":"allow"}}`; string(doc.Permission) != want {
			t.Fatalf("permission %s, want %s", doc.Permission, want)
		}
	})
}

func TestRulesPatchedOverHTTPKeepTheirOrder(t *testing.T) {
	td := startTandem(t, setup{})
	// Sorted, "echo secret*" would come first and the allow after it would always win.
	patch := `{"permission": {"bash": {"echo*": "allow", "echo secret*": "deny"}}}`
	td.call(t, http.MethodPatch, "/config", patch, http.StatusOK, nil)
	var doc struct {
		Permission json.RawMessage `json:"permission"`
	}
	td.call(t, http.MethodGet, "/config", "", http.StatusOK, &doc)
	if want := `{"bash":{"echo*":"allow","echo secret*":"deny"}}`; string(doc.Permission) != want {
		t.Fatalf("GET /config permission %s, want %s", doc.Permission, want)
	}
	sid := td.newSession(t)
	td.prompt(t, sid, "run: echo secret")
	if status, detail := lastToolPart(t, td.messages(t, sid)); status != "error" || !strings.Contains(detail, "echo secret") {
		t.Fatalf("the later deny: tool %s %q", status, detail)
	}
	td.prompt(t, sid, "run: echo public")
	if status, detail := lastToolPart(t, td.messages(t, sid)); status != "completed" || detail != "public\n" {
		t.Fatalf("the earlier allow: tool %s %q", status, detail)
	}
}
