package bashcmd

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// word is one argument of a simple command: its value when it is fixed, and its source text.
type word struct {
	value  string
	static bool
	source string
}

func (w word) pattern() string {
	if w.static {
		return w.value
	}
	return w.source
}

func (a *analyzer) call(c *syntax.CallExpr, depth int) {
	if len(c.Args) == 0 {
		return // assignments only; their values are walked for substitutions
	}
	words := make([]word, len(c.Args))
	for i, w := range c.Args {
		v, ok := wordValue(w)
		words[i] = word{value: v, static: ok, source: printed(w)}
	}
	a.command(printed(c), words, depth)
}

// command judges one simple command given as words; source is how people see it.
func (a *analyzer) command(source string, words []word, depth int) {
	if len(words) == 0 {
		return
	}
	name := words[0]
	if !name.static {
		a.unjudged(fmt.Sprintf("the command name %s is decided at run time", name.source))
		a.add(Command{Source: source, Pattern: joinPattern(words)})
		return
	}
	base := name.value
	if reason, ok := unjudgeable[base]; ok {
		a.unjudged(fmt.Sprintf("%s: %s", base, reason))
		a.add(Command{Source: source, Pattern: joinPattern(words)})
		return
	}
	switch base {
	case "cd", "pushd", "popd":
		a.changesDir = true
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox":
		a.shell(source, words, depth)
		return
	case "find":
		a.find(words)
	case "git":
		if reason := gitDanger(words); reason != "" {
			a.unjudged(reason)
			a.add(Command{Source: source, Pattern: joinPattern(words)})
			return
		}
	case "trap":
		if len(words) > 1 && !(len(words) == 2 && (words[1].value == "-l" || words[1].value == "-p")) {
			a.unjudged("trap runs a command given as text when a signal arrives")
		}
	}
	if inner, ok := wrappers[base]; ok {
		rest, reason := inner(words[1:])
		if reason != "" {
			a.unjudged(fmt.Sprintf("%s: %s", base, reason))
			a.add(Command{Source: source, Pattern: joinPattern(words)})
			return
		}
		if len(rest) > 0 {
			// The wrapper adds nothing to what runs: judge the command it runs.
			sub := &analyzer{home: a.home, seen: map[string]bool{}}
			sub.command(source, rest, depth)
			a.merge(sub)
			return
		}
	}
	if base == "git" {
		// Rules name the subcommand ("git push *"): -C dir and --no-pager must not hide it.
		words = gitSubcommand(words)
	}
	a.add(Command{Source: source, Pattern: joinPattern(words), Always: family(words)})
}

func (a *analyzer) add(c Command) {
	key := c.Pattern + "\x00" + c.Source
	if a.seen[key] {
		return
	}
	a.seen[key] = true
	a.out.Commands = append(a.out.Commands, c)
}

func (a *analyzer) merge(sub *analyzer) {
	for _, c := range sub.out.Commands {
		a.add(c)
	}
	for _, w := range sub.out.Writes {
		if !slices.Contains(a.out.Writes, w) {
			a.out.Writes = append(a.out.Writes, w)
		}
	}
	for _, u := range sub.out.Unjudged {
		a.unjudged(u)
	}
	a.changesDir = a.changesDir || sub.changesDir
}

func joinPattern(words []word) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = w.pattern()
	}
	return strings.Join(parts, " ")
}

// unjudgeable commands run code that is not in the command line, or run it with other rights.
var unjudgeable = map[string]string{
	"eval":      "runs text built at run time as a command",
	"source":    "runs the commands of a file",
	".":         "runs the commands of a file",
	"exec":      "replaces the shell with a command and can rewire its descriptors",
	"xargs":     "runs commands built from its input",
	"parallel":  "runs commands built from its input",
	"sudo":      "runs a command as another user (root); never granted permanently",
	"doas":      "runs a command as another user (root); never granted permanently",
	"su":        "runs a shell as another user",
	"pkexec":    "runs a command as another user",
	"runuser":   "runs a command as another user",
	"chroot":    "runs a command in another root directory",
	"alias":     "defines a command whose meaning is decided later",
	"enable":    "changes which builtins exist",
	"hash":      "changes which program a name runs",
	"set":       "changes shell options that alter how later commands run",
	"shopt":     "changes shell options that alter how later commands run",
	"coproc":    "runs a command in the background with its own descriptors",
	"declare":   "can declare variables and functions from text",
	"typeset":   "can declare variables and functions from text",
	"mapfile":   "can run a callback command for each line",
	"readarray": "can run a callback command for each line",
}

// shell judges sh/bash invocations: a literal script given with -c is parsed and judged like the
// outer command; a script from a file or from standard input cannot be judged.
func (a *analyzer) shell(source string, words []word, depth int) {
	args := words[1:]
	if words[0].value == "busybox" {
		if len(args) == 0 || !args[0].static || !slices.Contains([]string{"sh", "ash"}, args[0].value) {
			a.add(Command{Source: source, Pattern: joinPattern(words)})
			a.unjudged("busybox runs one of many programs chosen by its first argument")
			return
		}
		args = args[1:]
	}
	for i, w := range args {
		if !w.static {
			a.unjudged(fmt.Sprintf("%s is given an argument decided at run time (%s)", words[0].value, w.source))
			a.add(Command{Source: source, Pattern: joinPattern(words)})
			return
		}
		if w.value == "-c" || (strings.HasPrefix(w.value, "-") && !strings.HasPrefix(w.value, "--") && strings.Contains(w.value, "c")) {
			if i+1 >= len(args) {
				a.unjudged(fmt.Sprintf("%s -c without a script", words[0].value))
				return
			}
			if !args[i+1].static {
				a.unjudged(fmt.Sprintf("%s -c runs a script decided at run time (%s)", words[0].value, args[i+1].source))
				a.add(Command{Source: source, Pattern: joinPattern(words)})
				return
			}
			a.script(args[i+1].value, depth+1)
			return
		}
		if !strings.HasPrefix(w.value, "-") {
			// A script file: what it does is in the file. Only this exact invocation may be granted.
			p := joinPattern(words)
			a.add(Command{Source: source, Pattern: p, Always: p})
			return
		}
	}
	a.unjudged(fmt.Sprintf("%s reads its script from standard input", words[0].value))
	a.add(Command{Source: source, Pattern: joinPattern(words)})
}

// find runs other programs with -exec and friends and deletes or writes files with others.
func (a *analyzer) find(words []word) {
	for _, w := range words[1:] {
		switch w.value {
		case "-exec", "-execdir", "-ok", "-okdir":
			a.unjudged("find " + w.value + " runs a command for each file found")
		case "-delete":
			a.unjudged("find -delete removes every file found")
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			a.unjudged("find " + w.value + " writes a file")
		}
	}
}

// gitDanger reports git options that make git run programs named in the command line.
func gitDanger(words []word) string {
	for _, w := range words[1:] {
		if !w.static {
			continue
		}
		switch {
		case w.value == "-c" || strings.HasPrefix(w.value, "--config-env") || strings.HasPrefix(w.value, "--exec-path="):
			return "git " + w.value + " can make git run any program through its configuration"
		case strings.HasPrefix(w.value, "--upload-pack") || strings.HasPrefix(w.value, "--receive-pack") || w.value == "-u":
			return "git " + w.value + " names a program for git to run"
		}
	}
	return ""
}

// wrappers run the command that follows their own options; each returns the wrapped command's
// words, or a reason when that command cannot be told.
var wrappers = map[string]func([]word) ([]word, string){
	"timeout": func(args []word) ([]word, string) {
		rest, ok := skipOptions(args, []string{"-s", "--signal", "-k", "--kill-after"})
		if !ok || len(rest) == 0 {
			return nil, "its options could not be read"
		}
		return rest[1:], "" // the duration
	},
	"nice":    optionsThen([]string{"-n", "--adjustment"}),
	"nohup":   optionsThen(nil),
	"stdbuf":  optionsThen([]string{"-i", "-o", "-e", "--input", "--output", "--error"}),
	"ionice":  optionsThen([]string{"-c", "-n", "--class", "--classdata"}),
	"time":    optionsThen([]string{"-f", "--format", "-o", "--output"}),
	"command": optionsThen(nil),
	"builtin": optionsThen(nil),
	"env": func(args []word) ([]word, string) {
		for i := 0; i < len(args); i++ {
			w := args[i]
			if !w.static {
				return nil, "an argument is decided at run time"
			}
			switch {
			case w.value == "-S" || strings.HasPrefix(w.value, "--split-string") || (strings.HasPrefix(w.value, "-") && strings.Contains(w.value, "S") && !strings.HasPrefix(w.value, "--")):
				return nil, "env -S splits a string into a command at run time"
			case w.value == "-u" || w.value == "--unset" || w.value == "-C" || w.value == "--chdir":
				i++
			case strings.HasPrefix(w.value, "-"):
			case strings.Contains(w.value, "="):
				name, _, _ := strings.Cut(w.value, "=")
				if dangerousVariable(name) {
					return nil, fmt.Sprintf("it sets %s, which changes what programs run or how", name)
				}
			default:
				return args[i:], ""
			}
		}
		return nil, ""
	},
}

// optionsThen makes a wrapper whose command follows its options; valued are the options that take
// the next word as their value.
func optionsThen(valued []string) func([]word) ([]word, string) {
	return func(args []word) ([]word, string) {
		rest, ok := skipOptions(args, valued)
		if !ok {
			return nil, "its options could not be read"
		}
		if len(rest) > 0 && rest[0].static && (rest[0].value == "-v" || rest[0].value == "-V") {
			return nil, ""
		}
		return rest, ""
	}
}

func skipOptions(args []word, valued []string) ([]word, bool) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.static {
			return nil, false
		}
		if w.value == "--" {
			return args[i+1:], true
		}
		if !strings.HasPrefix(w.value, "-") || w.value == "-" {
			return args[i:], true
		}
		if w.value == "-v" || w.value == "-V" { // command -v: a lookup, nothing runs
			return args[i:], true
		}
		if slices.Contains(valued, w.value) {
			i++
		}
	}
	return nil, true
}

// arity says how many leading words name a command family for an "always" grant: "git push *"
// rather than "git *", which would also allow "git reset --hard".
var arity = map[string]int{
	"git": 2, "npm": 2, "pnpm": 2, "yarn": 2, "bun": 2, "deno": 2, "npx": 2, "go": 2, "cargo": 2,
	"docker": 2, "podman": 2, "kubectl": 2, "helm": 2, "pip": 2, "pip3": 2, "uv": 2, "poetry": 2,
	"apt": 2, "apt-get": 2, "brew": 2, "systemctl": 2, "gh": 2, "dotnet": 2, "rustup": 2,
	"terraform": 2, "make": 2, "nix": 2, "conda": 2, "gradle": 2, "mvn": 2,
	"npm run": 3, "pnpm run": 3, "yarn run": 3, "bun run": 3, "docker compose": 3, "podman compose": 3,
	"go mod": 3, "git stash": 3, "git remote": 3,
}

// interpreters run code from files or arguments: only the exact invocation may be granted.
var interpreters = []string{"python", "python3", "python2", "node", "perl", "ruby", "php", "lua", "deno",
	"bun", "awk", "gawk", "mawk", "sed", "tclsh", "Rscript", "osascript", "powershell", "pwsh", "fish", "tcsh", "csh"}

// family is the "always" pattern of a judged command: its leading words (per arity, stopping at an
// option or a dynamic word) plus " *"; for interpreters and commands named by path, the exact command.
func family(words []word) string {
	if strings.TrimSpace(words[0].value) == "" {
		return "" // an empty command name runs nothing; a pattern built from it would start with a wildcard
	}
	f := familyPattern(words)
	if strings.ContainsAny(strings.TrimSuffix(f, " *"), "*?") || strings.HasPrefix(strings.TrimLeft(f, " "), "*") {
		return "" // a remembered pattern is a glob: a literal * or ? in it would match far more
	}
	return f
}

func familyPattern(words []word) string {
	name := words[0].value
	if strings.TrimSpace(name) == "" || strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return joinPattern(words)
	}
	if strings.Contains(name, "/") || slices.Contains(interpreters, path.Base(name)) && !(name == "deno" || name == "bun") {
		return joinPattern(words)
	}
	n := 1
	if len(words) >= 2 {
		if k, ok := arity[name+" "+words[1].value]; ok {
			n = k
		} else if k, ok := arity[name]; ok {
			n = k
		}
	}
	kept := []string{name}
	for _, w := range words[1:min(n, len(words))] {
		if !w.static || strings.HasPrefix(w.value, "-") || w.value == "" {
			break
		}
		kept = append(kept, w.value)
	}
	if n > 1 && len(kept) == 1 && len(words) > 1 {
		// "git -x" with no subcommand found: grant only what was asked.
		return joinPattern(words)
	}
	return strings.Join(kept, " ") + " *"
}

// gitSubcommand drops git's global options (-C dir, --no-pager, ...) so the family names the
// subcommand: "git -C . status" is in the "git status" family.
func gitSubcommand(words []word) []word {
	out := []word{words[0]}
	i := 1
	for i < len(words) && words[i].static && strings.HasPrefix(words[i].value, "-") {
		switch words[i].value {
		case "-C", "--git-dir", "--work-tree", "--namespace":
			i++
		}
		i++
	}
	return append(out, words[min(i, len(words)):]...)
}
