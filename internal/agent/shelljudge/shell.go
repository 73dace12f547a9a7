package shelljudge

import (
	"os/exec"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Dialect is the grammar a command is judged in. It must be the grammar of the shell that runs the
// command: dash reads `echo $'X\' ; touch F'` as two commands where bash reads one, and
// `[[ x > f ]]` is a comparison in bash but a write to f in dash.
type Dialect int

const (
	// Bash is GNU bash's grammar, used when commands run under bash.
	Bash Dialect = iota
	// POSIX is the POSIX shell's grammar, used when commands run under sh (dash, busybox ash). Which
	// sh that is is not known, so what such shells read differently (bash's $'…', [[ and (( )) is
	// never judged in this dialect.
	POSIX
)

func (d Dialect) String() string {
	if d == POSIX {
		return "posix"
	}
	return "bash"
}

func (d Dialect) lang() syntax.LangVariant {
	if d == POSIX {
		return syntax.LangPOSIX
	}
	return syntax.LangBash
}

// Shell is the program every command string tandem is given runs with (the bash tool, the !
// shell route, command templates, a client's terminal), together with the dialect it is judged in.
// Both come from one choice (FindShell), so a command is never judged in one grammar and run in
// another.
type Shell struct {
	Path    string
	Dialect Dialect
}

// FindShell chooses the shell: bash where it is installed, else sh judged as POSIX.
func FindShell() Shell {
	if p, err := exec.LookPath("bash"); err == nil {
		return Shell{Path: p, Dialect: Bash}
	}
	return Shell{Path: "sh", Dialect: POSIX}
}

// Args are the arguments that make the shell run command and nothing else: bash reads no profile
// or rc file.
func (s Shell) Args(command string) []string {
	if s.Dialect == Bash {
		return []string{"--noprofile", "--norc", "-c", command}
	}
	return []string{"-c", command}
}

// String is the shell as it runs a command, e.g. "bash --noprofile --norc -c".
func (s Shell) String() string {
	args := s.Args("")
	return strings.Join(append([]string{s.Path}, args[:len(args)-1]...), " ")
}

// Unset are the variables removed from a command's environment because they make the shell run or
// read code before the command: BASH_ENV (bash sources it for every -c script), ENV (sh and bash in
// POSIX mode source it), SHELLOPTS and BASHOPTS (options such as xtrace with a PS4 substitution),
// and exported functions (BASH_FUNC_name%%), which would replace any command by a name.
func Unset(name string) bool {
	switch name {
	case "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS":
		return true
	}
	return strings.HasPrefix(name, "BASH_FUNC_")
}

// Env is environ without the variables Unset names.
func (s Shell) Env(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !Unset(name) {
			out = append(out, kv)
		}
	}
	return out
}

// Analyze judges command in this shell's dialect.
func (s Shell) Analyze(command, home string) Analysis {
	return Analyze(command, s.Dialect, home)
}
