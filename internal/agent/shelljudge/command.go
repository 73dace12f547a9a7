package shelljudge

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

func (a *analyzer) call(c *syntax.CallExpr, d Dialect, depth int) {
	if len(c.Args) == 0 {
		return // assignments only; their values are walked for substitutions
	}
	words := make([]word, len(c.Args))
	for i, w := range c.Args {
		words[i] = wordOf(w)
	}
	a.command(printed(c), words, d, depth)
}

func wordOf(w *syntax.Word) word {
	v, ok := wordValue(w)
	return word{value: v, static: ok, source: printed(w)}
}

// command judges one simple command given as words; source is how people see it. A command named
// by a path (/usr/bin/git, ./git) is judged as the program its base name says, and also matched by
// that name, so a rule about git applies to every git.
func (a *analyzer) command(source string, words []word, d Dialect, depth int) {
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
	if strings.Contains(base, "/") {
		base = path.Base(base)
	}
	if reason, ok := unjudgeable[base]; ok {
		a.unjudged(fmt.Sprintf("%s: %s", base, reason))
		a.add(named(Command{Source: source, Pattern: joinPattern(words)}, words))
		return
	}
	switch base {
	case "cd", "pushd", "popd":
		a.changesDir = true
	case "sh", "bash", "dash", "ash", "busybox", "zsh", "ksh", "mksh", "yash", "posh":
		a.shell(source, base, words, depth)
		return
	case "find":
		a.find(words)
	case "git":
		if reason := gitDanger(words); reason != "" {
			a.unjudged(reason)
			a.add(named(Command{Source: source, Pattern: joinPattern(words)}, words))
			return
		}
	case "trap":
		if len(words) > 1 && !(len(words) == 2 && (words[1].value == "-l" || words[1].value == "-p")) {
			a.unjudged("trap runs a command given as text when a signal arrives")
		}
	case "printf", "read", "unset", "getopts", "wait", "test", "[", "export", "readonly", "local", "declare", "typeset":
		a.nameArgs(base, words[1:])
	}
	if inner, ok := wrappers[base]; ok {
		rest, reason := inner(a, words[1:])
		if reason != "" {
			a.unjudged(fmt.Sprintf("%s: %s", base, reason))
			a.add(named(Command{Source: source, Pattern: joinPattern(words)}, words))
			return
		}
		if len(rest) > 0 {
			// The wrapper adds nothing to what runs: judge the command it runs.
			sub := &analyzer{home: a.home, seen: map[string]bool{}}
			sub.command(source, rest, d, depth)
			a.merge(sub)
			return
		}
		// The wrapper runs nothing; its bare form is never remembered ("env *" would read as
		// "any command under env").
		a.add(named(Command{Source: source, Pattern: joinPattern(words)}, words))
		return
	}
	if base == "git" {
		// Rules name the subcommand ("git push *"): -C dir and --no-pager must not hide it.
		words = gitSubcommand(words)
	}
	a.add(named(Command{Source: source, Pattern: joinPattern(words), Always: family(words)}, words))
}

// named adds to c, a command named by a path, its pattern by its base name.
func named(c Command, words []word) Command {
	if !strings.Contains(words[0].value, "/") || !words[0].static {
		return c
	}
	byName := append([]word{{value: path.Base(words[0].value), static: true, source: path.Base(words[0].value)}}, words[1:]...)
	if path.Base(words[0].value) == "git" {
		byName = gitSubcommand(byName)
	}
	c.Named = joinPattern(byName)
	return c
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
	"mapfile":   "can run a callback command for each line",
	"readarray": "can run a callback command for each line",
	"compgen":   "can run a command or function to generate words",
	"fc":        "runs commands from the history through an editor",
	"let":       "evaluates its arguments as arithmetic, which can run commands in subscripts",
	// Programs that run a command after options tandem does not read.
	"strace": wrapped, "ltrace": wrapped, "gdb": wrapped, "valgrind": wrapped, "unshare": wrapped,
	"nsenter": wrapped, "firejail": wrapped, "bwrap": wrapped, "systemd-run": wrapped, "flock": wrapped,
	"watch": wrapped, "script": wrapped, "sg": wrapped, "setpriv": wrapped, "prlimit": wrapped,
	"numactl": wrapped, "cpulimit": wrapped, "faketime": wrapped, "proxychains": wrapped,
	"proxychains4": wrapped, "torsocks": wrapped, "dbus-run-session": wrapped, "xvfb-run": wrapped,
	"catchsegv": wrapped, "chpst": wrapped, "setarch": wrapped, "linux32": wrapped, "linux64": wrapped,
	"unbuffer": wrapped, "fakeroot": wrapped, "eatmydata": wrapped, "sandbox-exec": wrapped,
	"caffeinate": wrapped, "nsjail": wrapped, "ssh-agent": wrapped,
}

const wrapped = "runs a command after options tandem does not read"

// shell judges sh/bash invocations: a literal script given with -c is parsed in the shell's own
// dialect and judged like the outer command; a script from a file or from standard input, or in a
// grammar other than bash's and POSIX sh's, cannot be judged.
func (a *analyzer) shell(source, base string, words []word, depth int) {
	args := words[1:]
	if base == "busybox" {
		if len(args) == 0 || !args[0].static || !slices.Contains([]string{"sh", "ash"}, args[0].value) {
			a.add(Command{Source: source, Pattern: joinPattern(words)})
			a.unjudged("busybox runs one of many programs chosen by its first argument")
			return
		}
		args = args[1:]
	}
	dialect, known := Bash, base == "bash"
	if slices.Contains([]string{"sh", "dash", "ash", "busybox", "posh"}, base) {
		dialect, known = POSIX, true
	}
	for i, w := range args {
		if !w.static {
			a.unjudged(fmt.Sprintf("%s is given an argument decided at run time (%s)", base, w.source))
			a.add(Command{Source: source, Pattern: joinPattern(words)})
			return
		}
		if w.value == "-c" || (strings.HasPrefix(w.value, "-") && !strings.HasPrefix(w.value, "--") && strings.Contains(w.value, "c")) {
			if i+1 >= len(args) {
				a.unjudged(fmt.Sprintf("%s -c without a script", base))
				return
			}
			if !args[i+1].static {
				a.unjudged(fmt.Sprintf("%s -c runs a script decided at run time (%s)", base, args[i+1].source))
				a.add(Command{Source: source, Pattern: joinPattern(words)})
				return
			}
			if !known {
				a.unjudged(fmt.Sprintf("%s's grammar is neither bash's nor POSIX sh's", base))
				a.add(Command{Source: source, Pattern: joinPattern(words)})
				return
			}
			a.script(args[i+1].value, dialect, depth+1)
			return
		}
		if !strings.HasPrefix(w.value, "-") {
			// A script file: what it does is in the file. Only this exact invocation may be granted.
			p := joinPattern(words)
			a.add(Command{Source: source, Pattern: p, Always: p})
			return
		}
	}
	a.unjudged(fmt.Sprintf("%s reads its script from standard input", base))
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

// gitDanger reports git options and subcommands that make git run programs named in the command
// line or install programs (hooks, configuration) that later git commands run.
func gitDanger(words []word) string {
	sub := gitSubcommand(words)
	for _, w := range words[1:] {
		if !w.static {
			continue
		}
		switch {
		case w.value == "-c" || strings.HasPrefix(w.value, "--config-env") || strings.HasPrefix(w.value, "--exec-path") || strings.HasPrefix(w.value, "--config="):
			return "git " + w.value + " can make git run any program through its configuration"
		case strings.HasPrefix(w.value, "--upload-pack") || strings.HasPrefix(w.value, "--receive-pack") || w.value == "-u" && len(sub) > 1 && (sub[1].value == "clone" || sub[1].value == "ls-remote"):
			return "git " + w.value + " names a program for git to run"
		case strings.HasPrefix(w.value, "--template") || strings.HasPrefix(w.value, "--extcmd") || strings.HasPrefix(w.value, "--exec") ||
			w.value == "-x" && len(sub) > 1 && sub[1].value == "rebase":
			return "git " + w.value + " runs or installs programs named in the command line"
		}
	}
	if len(sub) > 2 {
		switch sub[1].value + " " + sub[2].value {
		case "submodule foreach", "bisect run":
			return "git " + sub[1].value + " " + sub[2].value + " runs a command given as text"
		}
	}
	if len(sub) > 1 && slices.Contains([]string{"filter-branch", "difftool", "mergetool"}, sub[1].value) {
		return "git " + sub[1].value + " runs programs given as text or configured"
	}
	return ""
}

// gitNeverRemembered are git subcommands no "always" answer covers: git config can set a program
// (core.fsmonitor, an alias with !) that every later git command runs.
var gitNeverRemembered = []string{"config"}

// wrappers run the command that follows their own options; each returns the wrapped command's
// words (none when it runs no command), or a reason when that command cannot be told. Their
// options are read as the programs read them (GNU getopt, stopping at the first operand); an
// option they do not know is not guessed at.
var wrappers = map[string]func(*analyzer, []word) ([]word, string){
	"timeout": func(_ *analyzer, args []word) ([]word, string) {
		opts, rest, reason := parseOptions(args, optSpec{flags: "fpv", valued: "ks",
			long: map[string]bool{"foreground": false, "kill-after": true, "preserve-status": false, "signal": true, "verbose": false, "help": false, "version": false}})
		if reason != "" || hasAny(opts, "--help", "--version") || len(rest) == 0 {
			return nil, reason
		}
		return rest[1:], "" // after the duration
	},
	"nice": func(_ *analyzer, args []word) ([]word, string) {
		if len(args) > 0 && args[0].static && len(args[0].value) > 1 && args[0].value[0] == '-' && isNumber(args[0].value[1:]) {
			args = args[1:] // the obsolete "nice -10 command"
		}
		opts, rest, reason := parseOptions(args, optSpec{valued: "n", long: map[string]bool{"adjustment": true, "help": false, "version": false}})
		if reason != "" || hasAny(opts, "--help", "--version") {
			return nil, reason
		}
		return rest, ""
	},
	"nohup":   simpleWrapper(optSpec{long: map[string]bool{"help": false, "version": false}}),
	"stdbuf":  simpleWrapper(optSpec{valued: "ioe", long: map[string]bool{"input": true, "output": true, "error": true, "help": false, "version": false}}),
	"setsid":  simpleWrapper(optSpec{flags: "cfwhV", long: map[string]bool{"ctty": false, "fork": false, "wait": false, "help": false, "version": false}}),
	"builtin": simpleWrapper(optSpec{}),
	"command": func(_ *analyzer, args []word) ([]word, string) {
		opts, rest, reason := parseOptions(args, optSpec{flags: "pvV"})
		if reason != "" || hasAny(opts, "-v", "-V") {
			return nil, reason // command -v only looks a name up
		}
		return rest, ""
	},
	"ionice": func(_ *analyzer, args []word) ([]word, string) {
		opts, rest, reason := parseOptions(args, optSpec{flags: "thV", valued: "cnpPu",
			long: map[string]bool{"class": true, "classdata": true, "ignore": false, "pid": true, "pgid": true, "uid": true, "help": false, "version": false}})
		if reason != "" || hasAny(opts, "-p", "-P", "-u", "--pid", "--pgid", "--uid", "-h", "--help", "-V", "--version") {
			return nil, reason // it sets the class of running processes
		}
		return rest, ""
	},
	"chrt": func(_ *analyzer, args []word) ([]word, string) {
		opts, rest, reason := parseOptions(args, optSpec{flags: "abdfiormRvhVpe", valued: "TPD",
			long: map[string]bool{"all-tasks": false, "batch": false, "deadline": false, "fifo": false, "idle": false, "other": false,
				"rr": false, "reset-on-fork": false, "max": false, "pid": false, "verbose": false, "sched-runtime": true,
				"sched-period": true, "sched-deadline": true, "help": false, "version": false}})
		if reason != "" || hasAny(opts, "-p", "--pid", "-m", "--max", "-h", "--help", "-V", "--version") || len(rest) == 0 {
			return nil, reason
		}
		return rest[1:], "" // after the priority
	},
	"taskset": func(_ *analyzer, args []word) ([]word, string) {
		opts, rest, reason := parseOptions(args, optSpec{flags: "acphV", long: map[string]bool{"all-tasks": false, "cpu-list": false, "pid": false, "help": false, "version": false}})
		if reason != "" || hasAny(opts, "-p", "--pid", "-h", "--help", "-V", "--version") || len(rest) == 0 {
			return nil, reason
		}
		return rest[1:], "" // after the mask
	},
	// time as a program (GNU time). In bash the keyword is parsed as such, and only "command time"
	// or "\time" reach the program, whose -o writes its report to a file.
	"time": func(a *analyzer, args []word) ([]word, string) {
		opts, rest, reason := parseOptions(args, optSpec{flags: "apqvV", valued: "fo",
			long: map[string]bool{"append": false, "format": true, "output": true, "portability": false, "quiet": false, "verbose": false, "help": false, "version": false}})
		if reason != "" {
			return nil, reason
		}
		for _, o := range opts {
			if o.name == "-o" || o.name == "--output" {
				a.writeTo(o.value, hasAny(opts, "-a", "--append"))
			}
		}
		if hasAny(opts, "--help", "-V", "--version") {
			return nil, ""
		}
		return rest, ""
	},
	"env": func(_ *analyzer, args []word) ([]word, string) {
		for i := 0; i < len(args); i++ {
			w := args[i]
			if !w.static {
				return nil, "an argument is decided at run time"
			}
			switch {
			case w.value == "-S" || strings.HasPrefix(w.value, "--split-string") || (strings.HasPrefix(w.value, "-") && strings.Contains(w.value, "S") && !strings.HasPrefix(w.value, "--")):
				return nil, "env -S splits a string into a command at run time"
			case strings.HasPrefix(w.value, "-C") || strings.HasPrefix(w.value, "--chdir"):
				return nil, "env -C runs the command in another directory, where its relative writes land"
			case w.value == "-u" || w.value == "--unset":
				i++
			case w.value == "--" || w.value == "-":
			case strings.HasPrefix(w.value, "--"):
				if !slices.Contains([]string{"--ignore-environment", "--null", "--debug", "--help", "--version"}, w.value) &&
					!strings.HasPrefix(w.value, "--unset=") {
					return nil, "its option " + w.value + " is not one tandem reads"
				}
			case strings.HasPrefix(w.value, "-u"):
			case strings.HasPrefix(w.value, "-"):
				if strings.Trim(w.value[1:], "i0v") != "" {
					return nil, "its option " + w.value + " is not one tandem reads"
				}
			case strings.Contains(w.value, "="):
				name, _, _ := strings.Cut(w.value, "=")
				if dangerousVariable(name) || Unset(name) {
					return nil, fmt.Sprintf("it sets %s, which changes what programs run or how", name)
				}
			default:
				return args[i:], ""
			}
		}
		return nil, ""
	},
}

func simpleWrapper(spec optSpec) func(*analyzer, []word) ([]word, string) {
	return func(_ *analyzer, args []word) ([]word, string) {
		opts, rest, reason := parseOptions(args, spec)
		if reason != "" || hasAny(opts, "-h", "--help", "-V", "--version") {
			return nil, reason
		}
		return rest, ""
	}
}

// optSpec describes a program's options: short letters without a value (flags) and with one
// (valued), and long names, each saying whether it takes a value.
type optSpec struct {
	flags, valued string
	long          map[string]bool
}

type option struct {
	name  string // "-k" or "--kill-after"
	value word
}

func hasAny(opts []option, names ...string) bool {
	return slices.ContainsFunc(opts, func(o option) bool { return slices.Contains(names, o.name) })
}

// parseOptions reads options as GNU getopt_long does with "+" (stopping at the first operand):
// "-abc" clusters, "-kVALUE" and "-k VALUE", "--name=value" and "--name value", unique prefixes of
// long names, "--" ending the options. An unknown option, a missing value or a word decided at run
// time among the options is a reason not to guess.
func parseOptions(args []word, spec optSpec) (opts []option, rest []word, reason string) {
	value := func(i int, name string) (word, string) {
		if i >= len(args) || !args[i].static {
			return word{}, fmt.Sprintf("its option %s has no value tandem can read", name)
		}
		return args[i], ""
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.static {
			return nil, nil, fmt.Sprintf("an option is decided at run time (%s)", w.source)
		}
		v := w.value
		switch {
		case v == "--":
			return opts, args[i+1:], ""
		case !strings.HasPrefix(v, "-") || v == "-":
			return opts, args[i:], ""
		case strings.HasPrefix(v, "--"):
			name, val, hasValue := strings.Cut(v[2:], "=")
			full, ok := longName(spec.long, name)
			if !ok {
				return nil, nil, fmt.Sprintf("its option %s is not one tandem reads", v)
			}
			o := option{name: "--" + full}
			switch {
			case spec.long[full] && hasValue:
				o.value = word{value: val, static: true, source: val}
			case spec.long[full]:
				i++
				if o.value, reason = value(i, v); reason != "" {
					return nil, nil, reason
				}
			case hasValue:
				return nil, nil, fmt.Sprintf("its option --%s takes no value", full)
			}
			opts = append(opts, o)
		default:
			for j := 1; j < len(v); j++ {
				c := string(v[j])
				switch {
				case strings.Contains(spec.flags, c):
					opts = append(opts, option{name: "-" + c})
				case strings.Contains(spec.valued, c):
					o := option{name: "-" + c}
					if rest := v[j+1:]; rest != "" {
						o.value = word{value: rest, static: true, source: rest}
					} else {
						i++
						if o.value, reason = value(i, "-"+c); reason != "" {
							return nil, nil, reason
						}
					}
					opts = append(opts, o)
					j = len(v)
				default:
					return nil, nil, fmt.Sprintf("its option -%s is not one tandem reads", c)
				}
			}
		}
	}
	return opts, nil, ""
}

// longName finds a long option by its name or a unique prefix of it, as getopt_long does.
func longName(long map[string]bool, name string) (string, bool) {
	if _, ok := long[name]; ok {
		return name, true
	}
	found := ""
	for full := range long {
		if name != "" && strings.HasPrefix(full, name) {
			if found != "" {
				return "", false
			}
			found = full
		}
	}
	return found, found != ""
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
	if strings.TrimSpace(words[0].value) == "" || strings.HasPrefix(words[0].value, "-") {
		return "" // an empty command name runs nothing; a pattern built from it would start with a wildcard
	}
	if words[0].value == "git" && len(words) > 1 && slices.Contains(gitNeverRemembered, words[1].value) {
		return ""
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
