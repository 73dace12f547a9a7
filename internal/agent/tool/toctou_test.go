package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/shelljudge"
)

// swapGate approves every request, but first runs swap once when the edit is asked: what an attacker
// could do on the file system while a person reads the diff.
type swapGate struct {
	swap func()
	done bool
}

func (g *swapGate) Check(_ context.Context, ask Ask) error {
	if (ask.Permission == "edit" || ask.Permission == "bash") && !g.done {
		g.done = true
		g.swap()
	}
	return nil
}

func TestASymlinkSwappedInDuringTheApprovalWaitIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		tool Tool
		prep string // content of sub/f.txt before the call ("" = absent)
		in   map[string]any
	}{
		{"write", Write{}, "", map[string]any{"filePath": "sub/f.txt", "content": "payload"}},
		{"edit", Edit{}, "old", map[string]any{"filePath": "sub/f.txt", "oldString": "old", "newString": "payload"}},
		{"multiedit", MultiEdit{}, "old", map[string]any{"filePath": "sub/f.txt", "edits": []map[string]any{{"oldString": "old", "newString": "payload"}}}},
		{"apply_patch's update", ApplyPatch{}, "old", map[string]any{"patchText": "*** Begin Patch\n*** Update File: sub/f.txt\n-old\n+payload\n*** End Patch"}},
		{"apply_patch's add", ApplyPatch{}, "", map[string]any{"patchText": "*** Begin Patch\n*** Add File: sub/f.txt\n+payload\n*** End Patch"}},
		{"bash's redirection", NewBash(Options{}), "", map[string]any{"command": "echo payload > sub/f.txt", "description": "write"}},
	} {
		t.Run(tt.name+" refuses to follow the swapped directory outside the project", func(t *testing.T) {
			project, outside := t.TempDir(), t.TempDir()
			sub := filepath.Join(project, "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.prep != "" {
				for _, d := range []string{sub, outside} {
					if err := os.WriteFile(filepath.Join(d, "f.txt"), []byte(tt.prep), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			call, _ := newCall(t, project, tt.in)
			call.Gate = &swapGate{swap: func() {
				if err := os.RemoveAll(sub); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, sub); err != nil {
					t.Error(err)
				}
			}}
			_, err := tt.tool.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), "changed while waiting for approval") {
				t.Fatalf("Run = %v, want a refusal naming the change", err)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); strings.Contains(string(b), "payload") {
				t.Fatal("the write landed outside the project")
			}
		})
	}
}

func TestAWriteToConfigurationIsAskedEveryTime(t *testing.T) {
	for _, tt := range []struct{ name, path string }{
		{"the project's tandem.json", "tandem.json"},
		{"git's configuration", ".git/config"},
		{"a git hook", ".git/hooks/pre-commit"},
		{"git's attributes", ".git/info/attributes"},
	} {
		t.Run("writing "+tt.name+" offers no always and is never granted", func(t *testing.T) {
			call, gate := newCall(t, projectDir(t), map[string]any{"filePath": tt.path, "content": "x"})
			mustRun(t, Write{}, call)
			ask := gate.askFor(t, "edit")
			if len(ask.Always) != 0 || len(ask.Unjudged) == 0 {
				t.Fatalf("edit ask = %+v, want no always and a reason", ask)
			}
		})
	}
	t.Run("an ordinary file may be remembered", func(t *testing.T) {
		call, gate := newCall(t, projectDir(t), map[string]any{"filePath": ".gitattributes", "content": "x"})
		mustRun(t, Write{}, call)
		if ask := gate.askFor(t, "edit"); len(ask.Always) != 1 || len(ask.Unjudged) != 0 {
			t.Fatalf("edit ask = %+v, want the path offered for always", ask)
		}
	})
}

// TestCommandsRunInTheDialectTheyAreJudgedIn: the bash tool runs the shell whose grammar judged the
// command, without the startup files the environment could name.
func TestCommandsRunInTheDialectTheyAreJudgedIn(t *testing.T) {
	dir := projectDir(t)
	rc := filepath.Join(t.TempDir(), "rc")
	if err := os.WriteFile(rc, []byte("touch "+filepath.Join(dir, "from-rc")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BASH_ENV", rc)
	t.Setenv("ENV", rc)
	bash := NewBash(Options{})
	for _, command := range []string{"echo hi && [[ x > y ]]", "((1>38))", "echo $'X\\' ; touch F ; #'"} {
		call, gate := newCall(t, dir, map[string]any{"command": command, "description": "test"})
		res := mustRun(t, bash, call)
		if ask := gate.askFor(t, "bash"); len(ask.With) != 0 {
			t.Errorf("%q was judged to write %+v", command, ask.With)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%q left %v (output %q)", command, entries, res.Output)
		}
	}
	// Where commands run under sh, the judge reads them as sh does: [[ x > y ]] writes y.
	sh := NewBash(Options{Shell: shelljudge.Shell{Path: "sh", Dialect: shelljudge.POSIX}})
	call, gate := newCall(t, dir, map[string]any{"command": "echo hi && [[ x > y ]]", "description": "test"})
	gate.refuse["bash"] = errRefused
	if _, err := sh.Run(context.Background(), call); !errors.Is(err, errRefused) {
		t.Fatalf("Run = %v, want the gate's refusal", err)
	}
	if ask := gate.askFor(t, "bash"); len(ask.With) != 1 || ask.With[0].Pattern != "y" || len(ask.Unjudged) == 0 || !strings.Contains(fmt.Sprint(ask.Metadata["shell"]), "sh -c") {
		t.Fatalf("under sh the ask is %+v, want the write to y, unjudged", ask)
	}
}
