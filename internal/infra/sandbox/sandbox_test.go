package sandbox

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestMain lets this test binary serve as the helper, as the tandem binary does.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

// needLandlock ends the test where the kernel cannot confine (a failure under CI, which has it).
func needLandlock(t *testing.T) {
	t.Helper()
	if kernelABI() == 0 {
		testenv.Missing(t, "the kernel has no Landlock: %s", unsupported())
	}
}

// run runs script with sh under p, the project writable, started as the bash tool starts it
// (Start), and returns its output and exit code.
func run(t *testing.T, p Policy, writable []string, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := p.Start(cmd, writable); err != nil {
		t.Fatalf("starting %q: %v", script, err)
	}
	return result(t, script, out.String, cmd.Wait())
}

// runHelper is run through the helper binary (Command), as MCP servers are started.
func runHelper(t *testing.T, p Policy, writable []string, script string) (string, int) {
	t.Helper()
	cmd, err := p.Command(writable, "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return result(t, script, func() string { return string(out) }, err)
}

func result(t *testing.T, script string, out func() string, err error) (string, int) {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out(), exit.ExitCode()
	case err != nil:
		t.Fatalf("running %q: %v", script, err)
	}
	return out(), 0
}

// layout is a project, tandem's data directory, a temp directory, and a directory outside all of
// them; home is a project holding the data directory, as when tandem serves a home directory.
type layout struct{ project, home, data, temp, outside string }

func newLayout(t *testing.T) layout {
	t.Helper()
	l := layout{project: t.TempDir(), home: t.TempDir(), temp: t.TempDir(), outside: t.TempDir()}
	l.data = filepath.Join(l.home, ".local", "share", "tandem")
	for _, d := range []string{l.data, filepath.Join(l.home, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(l.home, ".local", "existing"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l layout) policy(mode Mode) Policy {
	return Policy{Mode: mode, Protected: []string{l.data}, TempDir: l.temp}
}

func TestALandlockConfinedCommandWritesOnlyWhereThePolicySays(t *testing.T) {
	home := func(l layout) []string { return []string{l.home} }
	needLandlock(t)
	t.Logf("kernel Landlock ABI %d", kernelABI())
	tests := []struct {
		name   string
		mode   Mode
		target func(layout) string
		extra  func(layout) []string // approved directories besides the project
		wrote  bool
	}{
		{"the project is writable", WorkspaceWrite, func(l layout) string { return filepath.Join(l.project, "f") }, nil, true},
		{"a new subdirectory of the project is writable", WorkspaceWrite, func(l layout) string { return filepath.Join(l.project, "sub", "f") }, nil, true},
		{"the temp directory is writable", WorkspaceWrite, func(l layout) string { return filepath.Join(l.temp, "f") }, nil, true},
		{"a directory outside is refused", WorkspaceWrite, func(l layout) string { return filepath.Join(l.outside, "f") }, nil, false},
		{"an approved directory outside is writable", WorkspaceWrite, func(l layout) string { return filepath.Join(l.outside, "f2") }, func(l layout) []string { return []string{l.outside} }, true},
		{"tandem's data directory inside a writable one is refused", WorkspaceWrite, func(l layout) string { return filepath.Join(l.data, "tandem.db") }, home, false},
		{"an existing file beside the data directory stays writable", WorkspaceWrite, func(l layout) string { return filepath.Join(l.home, ".local", "existing") }, home, true},
		{"a directory beside the data directory stays writable", WorkspaceWrite, func(l layout) string { return filepath.Join(l.home, "src", "new") }, home, true},
		{"a new file in a directory holding the data directory is refused", WorkspaceWrite, func(l layout) string { return filepath.Join(l.home, "new") }, home, false},
		{"read-only refuses the project", ReadOnly, func(l layout) string { return filepath.Join(l.project, "g") }, nil, false},
		{"read-only keeps the temp directory", ReadOnly, func(l layout) string { return filepath.Join(l.temp, "g") }, nil, true},
		{"off writes anywhere", Off, func(l layout) string { return filepath.Join(l.outside, "h") }, nil, true},
	}
	for _, start := range []struct {
		name string
		run  func(*testing.T, Policy, []string, string) (string, int)
	}{{"started by a confined thread", run}, {"started through the helper", runHelper}} {
		l := newLayout(t)
		for _, tt := range tests {
			t.Run(start.name+": "+tt.name, func(t *testing.T) {
				target := tt.target(l)
				writable := []string{l.project}
				if tt.extra != nil {
					writable = append(writable, tt.extra(l)...)
				}
				script := "mkdir -p '" + filepath.Dir(target) + "' 2>/dev/null; echo written > '" + target + "'"
				out, code := start.run(t, l.policy(tt.mode), writable, script)
				b, err := os.ReadFile(target)
				if got := err == nil && string(b) == "written\n"; got != tt.wrote {
					t.Fatalf("wrote %s = %v, want %v (exit %d, output %q)", target, got, tt.wrote, code, out)
				}
				if !tt.wrote && !strings.Contains(out, "Permission denied") {
					t.Fatalf("output %q does not say the write was denied", out)
				}
			})
		}
	}
}

func TestACommandKeepsTheDevicesAndStreamsItNeeds(t *testing.T) {
	needLandlock(t)
	l := newLayout(t)
	out, code := run(t, l.policy(ReadOnly), nil, "echo a > /dev/null && echo b >/dev/stderr && echo c > /dev/stdout && head -c1 /dev/zero | wc -c")
	if code != 0 || !strings.Contains(out, "b\nc\n1") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

func TestADevFdRedirectIsJudgedWhereItLands(t *testing.T) {
	needLandlock(t)
	l := newLayout(t)
	target := filepath.Join(l.outside, "bashrc")
	out, code := run(t, l.policy(WorkspaceWrite), []string{l.project}, "echo x >> /dev/fd/../../.."+target)
	if _, err := os.Stat(target); err == nil || code == 0 {
		t.Fatalf("the /dev/fd redirect wrote %s (exit %d, output %q)", target, code, out)
	}
	if got := l.policy(WorkspaceWrite).Refused(out, []string{l.project}); !slices.Contains(got, target) {
		t.Fatalf("Refused(%q) = %v, want %s", out, got, target)
	}
}

func TestTheNetworkIsDeniedOnlyWhenAsked(t *testing.T) {
	needLandlock(t)
	if kernelABI() < 4 {
		t.Skipf("denying the network needs Landlock ABI 4; this kernel has %d (Status reports it)", kernelABI())
	}
	python := testenv.Program(t, "python3", "install python3")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	connect := "import socket; socket.create_connection(('127.0.0.1', " + strings.TrimPrefix(ln.Addr().String()[strings.LastIndex(ln.Addr().String(), ":"):], ":") + ")); print('connected')"
	l := newLayout(t)
	for _, deny := range []bool{false, true} {
		p := l.policy(WorkspaceWrite)
		p.DenyNetwork = deny
		cmd, err := p.Command([]string{l.project}, python, "-c", connect)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := cmd.CombinedOutput()
		if connected := strings.Contains(string(out), "connected"); connected == deny {
			t.Fatalf("deny=%v: connected=%v, output %q", deny, connected, out)
		}
		if st := p.Status(); !st.Enforced || (st.Network == "denied") != deny {
			t.Fatalf("deny=%v: status %+v", deny, st)
		}
	}
}

func TestRefusedNamesThePathsOutsideWhatWasWritable(t *testing.T) {
	needLandlock(t)
	l := newLayout(t)
	p := l.policy(WorkspaceWrite)
	out := filepath.Join(l.outside, "x")
	tests := []struct {
		name     string
		output   string
		want     []string
		writable string // besides the project
	}{
		{"python's PermissionError", "PermissionError: [Errno 13] Permission denied: '" + out + "'\n", []string{out}, ""},
		{"cp's message", "cp: cannot create regular file '" + out + "': Permission denied\n", []string{out}, ""},
		{"tee's message", "tee: " + out + ": Permission denied\n", []string{out}, ""},
		{"dash's redirection", "sh: 1: cannot create " + out + ": Permission denied\n", []string{out}, ""},
		{"bash's redirection names bash by its path first", "/usr/bin/bash: line 1: " + out + ": Permission denied\n", []string{out}, ""},
		{"a message that starts with the refused path", out + ": Permission denied\n", []string{out}, ""},
		{"the data directory", "touch: cannot touch '" + filepath.Join(l.data, "db") + "': Permission denied\n", []string{filepath.Join(l.data, "db")}, ""},
		{"the data directory inside an approved one", "touch: cannot touch '" + filepath.Join(l.data, "db") + "': Permission denied\n", []string{filepath.Join(l.data, "db")}, l.home},
		{"a path inside the project is not the sandbox's", "cp: cannot create regular file '" + filepath.Join(l.project, "ro") + "': Permission denied\n", nil, ""},
		{"a line without a denial", "cp: " + out + ": No such file or directory\n", nil, ""},
		{"a path tandem could not write either is not the sandbox's", "touch: cannot touch '/nonexistent-tandem-dir/x': Permission denied\n", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writable := []string{l.project}
			if tt.writable != "" {
				writable = append(writable, tt.writable)
			}
			if got := p.Refused(tt.output, writable); !slices.Equal(got, tt.want) {
				t.Fatalf("Refused = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseModeRefusesWhatItDoesNotKnow(t *testing.T) {
	for in, want := range map[string]Mode{"": WorkspaceWrite, "off": Off, "read-only": ReadOnly, "workspace-write": WorkspaceWrite} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Fatalf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("readonly"); err == nil || !strings.Contains(err.Error(), `"read-only"`) {
		t.Fatalf("ParseMode(readonly) error = %v", err)
	}
	if Stricter(Off, ReadOnly) != ReadOnly || Stricter(WorkspaceWrite, Off) != WorkspaceWrite {
		t.Fatal("Stricter does not pick the stricter mode")
	}
}

// BenchmarkPlainStart is the floor the sandboxed start is measured against: `bash -c true` run
// unconfined, from start to exit.
func BenchmarkPlainStart(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSandboxedStart is `bash -c true` confined in workspace-write mode as the bash tool
// starts it (Start); its budget is 5 ms over BenchmarkPlainStart (docs/benchmarks.md).
func BenchmarkSandboxedStart(b *testing.B) {
	p, dir := benchPolicy(b)
	for b.Loop() {
		cmd := exec.Command("bash", "-c", "true")
		if err := p.Start(cmd, []string{dir}); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHelperStart is the same command through the helper binary (Command), as MCP servers
// start: it pays a second start of the (test) binary.
func BenchmarkHelperStart(b *testing.B) {
	p, dir := benchPolicy(b)
	for b.Loop() {
		cmd, err := p.Command([]string{dir}, "bash", "-c", "true")
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPolicy(b *testing.B) (Policy, string) {
	b.Helper()
	if kernelABI() == 0 {
		b.Skipf("the kernel has no Landlock: %s", unsupported())
	}
	// As tandem runs: its data directory outside the project and the temp directory (a protected
	// directory inside a writable one makes every start list that directory's entries).
	dir := b.TempDir()
	for _, d := range []string{"project", "tmp", "data"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p := Policy{Mode: WorkspaceWrite, TempDir: filepath.Join(dir, "tmp"), Protected: []string{filepath.Join(dir, "data")}}
	return p, filepath.Join(dir, "project")
}

func TestADirectoryTheUserMadeWritableIsWritableByEveryCommand(t *testing.T) {
	needLandlock(t)
	l := newLayout(t)
	p := l.policy(WorkspaceWrite)
	p.Writable = []string{l.outside}
	target := filepath.Join(l.outside, "cache")
	if out, code := run(t, p, []string{l.project}, "echo c > "+target); code != 0 {
		t.Fatalf("exit %d, output %q", code, out)
	}
	p.Mode = ReadOnly
	if out, code := run(t, p, nil, "echo c > "+target+"2"); code == 0 {
		t.Fatalf("read-only wrote the user's writable directory (output %q)", out)
	}
}
