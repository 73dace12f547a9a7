package shelljudge

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/process"
)

// posixCases are judged in the POSIX dialect: what bash reads as one thing and dash, busybox ash or
// bash in POSIX mode read as another is never judged harmless there.
var posixCases = []struct {
	name, command string
	want          want
}{
	{"$'…' is a $ and a quoted word to dash", `echo $'X\' ; touch F ; #'`, want{[]string{`echo $X\`, "touch F"}, []string{"echo *", "touch *"}, nil, "$'"}},
	{"[[ is a command whose > is a redirection", `echo hi && [[ x > ~/.bashrc ]]`, want{[]string{"echo hi", "[[ x ]]"}, []string{"echo *", ""}, []string{"/home/u/.bashrc"}, "[["}},
	{"[[ with a pipe is a pipeline", `echo hi; [[ x =~ a|touch${IFS}F ]]`, want{[]string{"echo hi", "[[ x =~ a", "touch${IFS}F ]]"}, []string{"echo *", "", ""}, nil, "[["}},
	{"(( is two subshells to dash", "((1>38))", want{nil, nil, []string{"38"}, "(("}},
	{"let is not a dash builtin", "let x=1", want{[]string{"let x=1"}, []string{""}, nil, "let"}},
	{"local parses its names", `local 'a[$(touch X)]=1'`, want{[]string{"local a[$(touch X)]=1"}, []string{"local *"}, nil, "subscript"}},
	{"a plain list", "echo hi; touch F", want{[]string{"echo hi", "touch F"}, []string{"echo *", "touch *"}, nil, ""}},
}

func TestAnalyzeInThePOSIXDialect(t *testing.T) {
	for _, tt := range posixCases {
		t.Run(tt.name, func(t *testing.T) {
			check(t, Analyze(tt.command, POSIX, "/home/u"), tt.want)
		})
	}
}

func TestACommandNamedByAPathIsAlsoMatchedByItsName(t *testing.T) {
	tests := []struct{ command, named string }{
		{"/usr/bin/git push origin main", "git push origin main"},
		{"/usr/bin/git -C . push", "git push"},
		{"./git push", "git push"},
		{"../bin/rm -rf x", "rm -rf x"},
		{"git push", ""},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			got := Analyze(tt.command, Bash, "/home/u")
			if len(got.Commands) != 1 || got.Commands[0].Named != tt.named {
				t.Fatalf("commands = %+v, want one named %q", got.Commands, tt.named)
			}
		})
	}
}

func TestTheShellRunsWithoutStartupFiles(t *testing.T) {
	sh := Shell{Path: "/bin/bash", Dialect: Bash}
	if got := sh.Args("ls"); !slices.Equal(got, []string{"--noprofile", "--norc", "-c", "ls"}) {
		t.Errorf("bash args = %q", got)
	}
	if got := (Shell{Path: "sh", Dialect: POSIX}).Args("ls"); !slices.Equal(got, []string{"-c", "ls"}) {
		t.Errorf("sh args = %q", got)
	}
	env := sh.Env([]string{"PATH=/bin", "BASH_ENV=/tmp/x", "ENV=/tmp/y", "SHELLOPTS=xtrace", "BASHOPTS=x", "BASH_FUNC_echo%%=() { touch X; }", "HOME=/h"})
	if !slices.Equal(env, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("env = %q", env)
	}
}

// grantedByEcho says whether an "echo *" grant alone would let a command run without asking: every
// command it runs is an echo, it writes no file and nothing in it is unjudged.
func grantedByEcho(a Analysis) bool {
	if len(a.Unjudged) > 0 || len(a.Writes) > 0 {
		return false
	}
	for _, c := range a.Commands {
		if c.Pattern != "echo" && !strings.HasPrefix(c.Pattern, "echo ") || c.Named != "" {
			return false
		}
	}
	return true
}

// realShell is a shell installed here, as tandem would run it, with the dialect it is judged in.
type realShell struct {
	name    string
	argv    []string // before the script
	dialect Dialect
}

func realShells(t testing.TB) []realShell {
	t.Helper()
	var out []realShell
	sh := FindShell()
	out = append(out, realShell{name: sh.String(), argv: append([]string{sh.Path}, sh.Args("")[:len(sh.Args(""))-1]...), dialect: sh.Dialect})
	if p, err := exec.LookPath("sh"); err == nil {
		out = append(out, realShell{name: "sh", argv: []string{p, "-c"}, dialect: POSIX})
	}
	if p, err := exec.LookPath("busybox"); err == nil {
		out = append(out, realShell{name: "busybox sh", argv: []string{p, "sh", "-c"}, dialect: POSIX})
	}
	return out
}

// run runs script under the shell in a scratch directory that is also HOME, and returns what it
// left there.
func (s realShell) run(t testing.TB, script string) []string {
	t.Helper()
	scratch := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.argv[0], append(s.argv[1:], script)...)
	cmd.Dir = scratch
	cmd.Env = append(Shell{}.Env(os.Environ()), "HOME="+scratch)
	cmd.WaitDelay = time.Second
	_ = cmd.Run() // a failing command is fine; what it wrote is the question
	var left []string
	err := filepath.WalkDir(scratch, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != scratch {
			left = append(left, strings.TrimPrefix(p, scratch+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// TestWhatAnEchoGrantCoversWritesNothing runs every command of the tables, the attacks
// among them, under each shell installed here, judged in that shell's dialect: whatever an "echo *"
// grant would let run unasked must leave the scratch directory (also HOME) empty.
func TestWhatAnEchoGrantCoversWritesNothing(t *testing.T) {
	var commands []string
	for _, c := range analyzeCases {
		commands = append(commands, c.command)
	}
	for _, c := range posixCases {
		commands = append(commands, c.command)
	}
	for _, sh := range realShells(t) {
		t.Run(sh.name, func(t *testing.T) {
			if left := sh.run(t, "echo x > F; touch G"); len(left) != 2 {
				t.Fatalf("the scratch directory shows %q after two writes: the test would see none", left)
			}
			for _, command := range commands {
				a := Analyze(command, sh.dialect, "/home/u")
				if !grantedByEcho(a) {
					continue
				}
				if left := sh.run(t, command); len(left) > 0 {
					t.Errorf("%q is judged an echo that writes nothing (%+v), but %s left %q", command, a.Commands, sh.name, left)
				}
			}
		})
	}
}

// FuzzAnalyze compares the judge with the shells that run commands: no grant pattern is a bare
// wildcard; whatever an "echo *" grant would cover parses for the shell as it did for the judge
// (sh -n) and, run in a scratch directory, writes nothing there.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"echo $(touch F)", "git -C . status", "sh -c 'sh -c \"ls\"'", "X=1; echo $((X))",
		"cat <<EOF\n$(a)\nEOF", "f() { g; }", "timeout 5 env A=1 nice make", "find . -exec x {} +", "echo ${a[$(b)]}",
		`echo $'X\' ; touch F ; #'`, "echo hi; [[ x =~ a|touch${IFS}F ]]", "echo hi && [[ x > ~/.bashrc ]]", "((1>38))",
		"echo x >> /dev/fd/../../..$HOME/.bashrc", `printf -v 'a[$(touch X)]' 1`, "timeout -v 1 ls", "echo hi >&2"} {
		f.Add(s)
	}
	// A fuzzing worker talks to its coordinator over descriptors 3 and 4, open across exec: "echo hi
	// >&4" in a shell it started wrote into that channel and ended the worker.
	process.KeepInheritedDescriptors()
	shells := realShells(f)
	f.Fuzz(func(t *testing.T, script string) {
		for _, sh := range shells {
			a := Analyze(script, sh.dialect, "/home/u")
			for _, c := range a.Commands {
				if strings.HasPrefix(strings.TrimLeft(c.Always, " "), "*") {
					t.Fatalf("%q offers a grant of everything: %+v", script, c)
				}
			}
			if !grantedByEcho(a) || strings.ContainsRune(script, 0) {
				continue
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			check := exec.CommandContext(ctx, sh.argv[0], append(append(slices.Clone(sh.argv[1:len(sh.argv)-1]), "-n", "-c"), script)...)
			check.Env = Shell{}.Env(os.Environ())
			out, err := check.CombinedOutput()
			cancel()
			if err != nil && ctx.Err() == nil {
				t.Fatalf("%s -n refuses %q (%v: %s), which the judge read as %+v", sh.name, script, err, out, a.Commands)
			}
			if left := sh.run(t, script); len(left) > 0 {
				t.Fatalf("%q is judged an echo that writes nothing (%+v), but %s left %q", script, a.Commands, sh.name, left)
			}
		}
	})
}
