//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// sandboxedTandem starts a server whose user allows every command in their own configuration,
// with a temp directory of its own, so that outside (another directory) is writable by nothing.
func sandboxedTandem(t *testing.T) (td *tandem, outside string) {
	t.Helper()
	td = newTandem(t, setup{})
	td.env["TMPDIR"] = t.TempDir()
	outside = t.TempDir()
	user := filepath.Join(config.UserDir(func(k string) string { return td.env[k] }), "tandem.json")
	if err := os.WriteFile(user, fmt.Appendf(nil, `{"trust": [%q], "permission": {"bash": "allow"}}`, td.project), 0o600); err != nil {
		t.Fatal(err)
	}
	td.start(t)
	t.Cleanup(func() { td.stop(t) })
	var cfg struct {
		Status sandbox.Status `json:"sandbox_status"`
	}
	td.call(t, http.MethodGet, "/config", "", http.StatusOK, &cfg)
	if !cfg.Status.Enforced {
		testenv.Missing(t, "the kernel cannot confine commands: %s", cfg.Status.Reason)
	}
	if cfg.Status.Mode != sandbox.WorkspaceWrite || cfg.Status.Mechanism != "landlock" || cfg.Status.ABI < 1 {
		t.Fatalf("GET /config sandbox_status = %+v", cfg.Status)
	}
	t.Logf("sandbox: %s", cfg.Status)
	return td, outside
}

// runCommand has the demo model run command and waits for the turn to end. A request the command
// raises is rejected (asked reports it): then nothing ran at all.
func runCommand(t *testing.T, td *tandem, events *stream, sid, command string) (part session.Part, asked bool) {
	t.Helper()
	td.promptAsync(t, sid, "run: "+command)
	e := events.waitFor(t, "the turn's end or a request", func(e event) bool {
		return idle(sid)(e) || ofType("permission.asked", sid)(e)
	})
	if e.Type == "permission.asked" {
		asked = true
		td.reply(t, e.permission().ID, "reject", "not this one")
		events.waitFor(t, "the turn's end", idle(sid))
	}
	for _, p := range toolParts(td.messages(t, sid)) {
		if commandOf(p) == command {
			part = p
		}
	}
	if part.State == nil {
		t.Fatalf("no tool part ran %q", command)
	}
	return part, asked
}

func TestTheSandboxKeepsAnAllowedCommandFromWritingOutsideTheProject(t *testing.T) {
	python := testenv.Program(t, "python3", "install python3")
	td, outside := sandboxedTandem(t)
	if err := os.WriteFile(filepath.Join(td.project, "src"), []byte("source\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sid := td.newSession(t)
	events := td.subscribe(t)
	pyWrite := func(name string) string { return python + ` -c "open('` + filepath.Join(outside, name) + `','w')"` }

	// First, while the session is idle (a turn's session.idle comes just before it may take another).
	t.Run("the user's own ! command is confined too", func(t *testing.T) {
		target := filepath.Join(outside, "shell")
		var reply session.WithParts
		td.call(t, http.MethodPost, "/session/"+sid+"/shell", shellBody("cp src "+target), http.StatusOK, &reply)
		events.waitFor(t, "the shell command's end", idle(sid))
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("the ! command wrote %s", target)
		}
		if len(reply.Parts) != 1 || reply.Parts[0].State.Output == nil || !strings.Contains(*reply.Parts[0].State.Output, "The sandbox refused writing "+target) {
			t.Fatalf("reply parts %+v", reply.Parts)
		}
	})

	tests := []struct{ name, command, target string }{
		{"python opening a file for writing", pyWrite("py"), "py"},
		{"cp", "cp src " + filepath.Join(outside, "cp"), "cp"},
		{"tee", "echo hi | tee " + filepath.Join(outside, "tee"), "tee"},
		{"a redirection through /dev/fd/..", "echo x >> /dev/fd/../../.." + filepath.Join(outside, "fd"), "fd"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" creates nothing outside, and the result says the sandbox refused it", func(t *testing.T) {
			target := filepath.Join(outside, tt.target)
			part, asked := runCommand(t, td, events, sid, tt.command)
			if _, err := os.Stat(target); err == nil {
				t.Fatalf("%q wrote %s", tt.command, target)
			}
			if asked {
				return // a parser that sees the write asks first; rejected, nothing ran
			}
			out := ""
			if part.State.Output != nil {
				out = *part.State.Output
			}
			if !strings.Contains(out, "The sandbox refused writing "+target) || !strings.Contains(out, "external_directory "+outside+"/*") {
				t.Fatalf("the result does not say the sandbox refused %s:\n%s", target, out)
			}
		})
	}

	t.Run("once external_directory is approved for the directory, the same command writes there", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		td.promptAsync(t, sid, "read: "+filepath.Join(outside, "notes.txt"))
		e := events.waitFor(t, "the external_directory request", ofType("permission.asked", sid))
		if req := e.permission(); req.Permission != "external_directory" || len(req.Always) != 1 || req.Always[0] != outside+"/*" {
			t.Fatalf("asked %+v", req)
		} else {
			td.reply(t, req.ID, "always", "")
		}
		events.waitFor(t, "the read's end", idle(sid))

		part, asked := runCommand(t, td, events, sid, pyWrite("py"))
		if _, err := os.Stat(filepath.Join(outside, "py")); asked || err != nil {
			t.Fatalf("with %s approved the command did not write there (asked %v): %v\n%v", outside, asked, err, part.State.Output)
		}
	})

	t.Run("the banner says what the kernel enforces", func(t *testing.T) {
		var b bytes.Buffer
		td.m.Announce(&b)
		if !strings.Contains(b.String(), "sandbox: workspace-write, network allowed (Landlock ABI ") {
			t.Fatalf("banner:\n%s", b.String())
		}
	})
}

// TestTheRealBinaryConfinesItsCommandsThroughItself: `tandem serve` re-executes its own binary
// as the sandbox helper, so an allowed command still cannot write outside the project.
func TestTheRealBinaryConfinesItsCommandsThroughItself(t *testing.T) {
	bin := builtBinary(t)
	data, project, outside, temp := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", temp) // the server's temp directory, so that outside is writable by nothing
	if err := os.MkdirAll(filepath.Join(data, "tandem"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "tandem", "tandem.json"), []byte(`{"permission": {"bash": "allow"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "src"), []byte("source\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startBinary(t, bin, data, project)
	var sess struct {
		ID string `json:"id"`
	}
	srv.post("/session", map[string]any{}, &sess)
	// touch writes no redirection, so nothing but bash is asked (and the user allows bash).
	target, marker := filepath.Join(outside, "copied"), filepath.Join(project, "refused")
	command := "cp src " + target + " || touch refused"
	srv.post("/session/"+sess.ID+"/prompt_async", map[string]any{"parts": []map[string]string{{"type": "text", "text": "run: " + command}}}, nil)
	deadline := time.Now().Add(testenv.Patience)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if _, err := os.Stat(target); err == nil || time.Now().After(deadline) {
			t.Fatalf("cp was not refused within %s (wrote %s: %v)", testenv.Patience, target, err == nil)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("the real binary's command wrote %s", target)
	}
}

// BenchmarkACommandInTheSandbox is the cost the sandbox adds to each command: `true` through sh,
// unconfined and through the helper, which here is this test binary (tandem's packages and their
// init, as in the real binary).
func BenchmarkACommandInTheSandbox(b *testing.B) {
	dir := b.TempDir()
	for _, mode := range []sandbox.Mode{sandbox.Off, sandbox.WorkspaceWrite} {
		b.Run(string(mode), func(b *testing.B) {
			p := sandbox.Policy{Mode: mode, Protected: []string{filepath.Join(dir, "data")}}
			for b.Loop() {
				cmd, err := p.Command([]string{dir}, "sh", "-c", "true")
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
