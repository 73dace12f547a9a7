package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/sandbox"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// confined is a bash tool whose commands the kernel confines, with a temp directory of its own so
// that the other test directories lie outside everything writable.
func confined(t *testing.T) (*Bash, sandbox.Policy) {
	t.Helper()
	p := sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: projectDir(t), Protected: []string{projectDir(t)}}
	if st := p.Status(); !st.Enforced {
		testenv.Missing(t, "the kernel cannot confine commands: %s", st.Reason)
	}
	return NewBash(Options{Sandbox: &p}), p
}

func TestTheSandboxRefusesAWriteOutsideAndSaysHowToGetTheDirectory(t *testing.T) {
	python := testenv.Program(t, "python3", "install python3")
	bash, _ := confined(t)
	project, outside := projectDir(t), projectDir(t)
	target := filepath.Join(outside, "x")
	command := python + ` -c "open('` + target + `','w')"`

	call, gate := newCall(t, project, map[string]any{"command": command})
	res := mustRun(t, bash, call)
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("the command wrote %s", target)
	}
	for _, want := range []string{"The sandbox refused writing " + target, "workdir", "external_directory " + outside + "/*"} {
		if !strings.Contains(res.Output, want) {
			t.Fatalf("output %q does not say %q", res.Output, want)
		}
	}
	if res.Metadata["sandboxRefused"] != true {
		t.Fatalf("metadata = %v", res.Metadata)
	}
	for _, a := range gate.asked() {
		if a.Permission == "external_directory" {
			t.Fatalf("asked %+v for a command that named no directory", a)
		}
	}

	// Run in that directory, the command asks for it; approved, the kernel lets it write there.
	call, gate = newCall(t, project, map[string]any{"command": command, "workdir": outside})
	res = mustRun(t, bash, call)
	if ask := gate.askFor(t, "external_directory"); ask.Metadata["parentDir"] != outside {
		t.Fatalf("external_directory ask = %+v", ask)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("with %s approved the command did not write there: %v (output %q)", outside, err, res.Output)
	}
}

func TestAnApprovedRedirectionTargetOutsideIsWritable(t *testing.T) {
	bash, _ := confined(t)
	project, outside := projectDir(t), projectDir(t)
	target := filepath.Join(outside, "out.txt")
	call, _ := newCall(t, project, map[string]any{"command": "echo hi > " + target})
	res := mustRun(t, bash, call)
	if got, err := os.ReadFile(target); err != nil || string(got) != "hi\n" {
		t.Fatalf("redirection into an approved directory: %q, %v (output %q)", got, err, res.Output)
	}
}

func TestCpOutsideTheProjectIsRefusedWhileTheProjectStaysWritable(t *testing.T) {
	bash, _ := confined(t)
	project, outside := projectDir(t), projectDir(t)
	writeFile(t, filepath.Join(project, "src"), "x")
	call, gate := newCall(t, project, map[string]any{"command": "cp src " + outside + "/copied; echo done > " + project + "/inside"})
	res := mustRun(t, bash, call)
	if _, err := os.Stat(filepath.Join(outside, "copied")); err == nil {
		t.Fatalf("cp wrote outside the project (output %q)", res.Output)
	}
	if got := readFile(t, filepath.Join(project, "inside")); got != "done\n" {
		t.Fatalf("the project was not writable: %q", got)
	}
	if !strings.Contains(res.Output, "The sandbox refused writing "+filepath.Join(outside, "copied")) {
		t.Fatalf("output %q, asks %+v", res.Output, gate.asked())
	}
}
