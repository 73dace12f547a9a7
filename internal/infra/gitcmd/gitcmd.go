// Package gitcmd builds every git command tandem runs for itself (the file routes, /vcs, the
// built-in /review, snapshots, project ids), so that none of them runs a program the repository
// names. A repository's configuration can name programs git starts on its own during a read-only
// command: core.fsmonitor, filter drivers (clean, smudge, process) picked by .gitattributes, diff
// drivers (textconv, command), diff.external, hooks, a lazy fetch of a partial clone's missing
// objects through a remote's transport, and the helpers that transport asks (ssh, askpass,
// credentials). tandem reads a repository before the user trusts it and without a question, so
// each of these is turned off here, in one place:
//
//   - hooks: core.hooksPath=/dev/null;
//   - core.fsmonitor=false;
//   - every filter driver the configuration defines (found with git config --get-regexp, which
//     follows include and includeIf as git does) gets empty clean, smudge and process commands and
//     required=false, so git keeps the bytes as they are;
//   - diff, log, show and the diff-* plumbing get --no-ext-diff --no-textconv (diff.external,
//     diff.<driver>.command and diff.<driver>.textconv unused); diff and status get
//     --ignore-submodules=dirty, with diff.submodule=short and status.submoduleSummary=false (no
//     git is started inside a submodule, whose configuration was not read); log.showSignature=false
//     (no gpg);
//   - no transport is allowed (protocol.allow=never and every configured protocol.<name>.allow
//     overridden), GIT_NO_LAZY_FETCH=1, and credential.helper and core.askPass are emptied;
//   - gc.auto=0 and maintenance.auto=false: nothing is started in the background;
//   - --no-pager, and no GIT_* variable of tandem's own environment reaches git (GIT_DIR,
//     GIT_CONFIG_*, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, …): the settings above are passed as
//     GIT_CONFIG_COUNT pairs, which take precedence over every configuration file and hold any
//     driver name, even one with "=" in it.
package gitcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Repo says where tandem's git runs.
type Repo struct {
	// Bin is the git binary ("git", looked up in PATH, when empty).
	Bin string
	// Dir is the directory git runs in.
	Dir string
	// GitDir and WorkTree, when set, are passed as --git-dir and --work-tree: a repository kept
	// apart from its work tree, as snapshots keep theirs.
	GitDir, WorkTree string
	// NoSystemConfig leaves the system-wide configuration unread (GIT_CONFIG_NOSYSTEM=1).
	NoSystemConfig bool
	// Config is more "key=value" settings the caller needs (core.autocrlf=false, say); they come
	// before the safety settings, which win over them.
	Config []string
}

// Git runs git commands in one repository with the repository's programs turned off. Make one
// with Open for each operation: the filter drivers it neutralises are those configured when it
// was opened.
type Git struct {
	repo   Repo
	config []Setting // in order: a later one wins
}

// Setting is one configuration variable git is given.
type Setting struct{ Key, Value string }

// Open reads which filter drivers and transport protocols the repository's configuration names
// (git config itself starts no program) and returns a Git that turns them off. When the
// configuration cannot be read, Open fails: nothing could be run safely.
func Open(ctx context.Context, r Repo) (*Git, error) {
	g := &Git{repo: r, config: settings(r, nil)}
	out, err := g.run(ctx, "config", "--null", "--get-regexp", `^(filter|protocol)\.`)
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1 && len(out) == 0) {
		return nil, err // exit code 1 with no output: nothing matched
	}
	g.config = settings(r, configuredKeys(out))
	return g, nil
}

// Output runs git with args and returns its standard output. A failure's error names the
// subcommand and carries git's standard error; it wraps the *exec.ExitError.
func (g *Git) Output(ctx context.Context, args ...string) ([]byte, error) {
	return g.run(ctx, args...)
}

func (g *Git) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := g.Command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("git %s: %s: %w", args[0], msg, err)
		}
		return out, fmt.Errorf("git %s: %w", args[0], err)
	}
	return out, nil
}

// Command is the command that runs git with args, for a caller that needs to wire it itself.
func (g *Git) Command(ctx context.Context, args ...string) *exec.Cmd {
	bin := g.repo.Bin
	if bin == "" {
		bin = "git"
	}
	cmd := exec.CommandContext(ctx, bin, Args(g.repo, args)...)
	cmd.Dir = g.repo.Dir
	cmd.Env = Env(os.Environ(), g.repo, g.config)
	cmd.WaitDelay = time.Second
	return cmd
}

// Args is git's argument list for args (a subcommand and its arguments): the global options first,
// then the subcommand with the options that keep its diff machinery from starting programs.
func Args(r Repo, args []string) []string {
	out := []string{"--no-pager"}
	if r.GitDir != "" {
		out = append(out, "--git-dir="+r.GitDir)
	}
	if r.WorkTree != "" {
		out = append(out, "--work-tree="+r.WorkTree)
	}
	if len(args) == 0 {
		return out
	}
	out = append(out, args[0])
	switch args[0] {
	case "diff", "log", "show", "diff-tree", "diff-index", "diff-files":
		out = append(out, "--no-ext-diff", "--no-textconv")
	}
	switch args[0] {
	case "diff", "status":
		out = append(out, "--ignore-submodules=dirty")
	}
	return append(out, args[1:]...)
}

// Env is git's environment: environ without any GIT_* variable or LC_ALL, then C messages, no
// prompts, no optional locks, no lazy fetches, and config as GIT_CONFIG_COUNT pairs.
func Env(environ []string, r Repo, config []Setting) []string {
	env := make([]string, 0, len(environ)+5+2*len(config))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "LC_ALL=") {
			env = append(env, kv)
		}
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_NO_LAZY_FETCH=1")
	if r.NoSystemConfig {
		env = append(env, "GIT_CONFIG_NOSYSTEM=1")
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for i, s := range config {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+s.Key, "GIT_CONFIG_VALUE_"+n+"="+s.Value)
	}
	return env
}

// safety are the settings every command gets, whatever the repository configures.
var safety = []Setting{
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"core.quotePath", "false"},
	{"core.askPass", ""},
	{"credential.helper", ""},
	{"protocol.allow", "never"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
	{"submodule.recurse", "false"},
	{"diff.submodule", "short"},          // "diff" starts git diff inside a submodule
	{"status.submoduleSummary", "false"}, // the summary starts git log inside one
	{"log.showSignature", "false"},       // it starts gpg.program
}

// settings are the repository's own settings, then the safety settings, then one set per
// configured filter driver and transport protocol (keys as git config --get-regexp printed them:
// "filter.<driver>.<variable>", "protocol.<name>.allow").
func settings(r Repo, keys []string) []Setting {
	out := make([]Setting, 0, len(r.Config)+len(safety)+4*len(keys))
	for _, kv := range r.Config {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, Setting{k, v})
	}
	out = append(out, safety...)
	seen := map[string]bool{}
	for _, key := range keys {
		section, rest, _ := strings.Cut(key, ".")
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			continue // protocol.allow, or a variable without a subsection: nothing to override
		}
		name := rest[:i]
		if seen[section+"."+name] {
			continue
		}
		seen[section+"."+name] = true
		switch section {
		case "filter":
			p := "filter." + name + "."
			out = append(out, Setting{p + "clean", ""}, Setting{p + "smudge", ""}, Setting{p + "process", ""}, Setting{p + "required", "false"})
		case "protocol":
			out = append(out, Setting{"protocol." + name + ".allow", "never"})
		}
	}
	return out
}

// configuredKeys reads the keys of git config --null --get-regexp's output: "key\nvalue\0" per
// entry, or "key\0" for a key without a value.
func configuredKeys(out []byte) []string {
	var keys []string
	for _, entry := range bytes.Split(out, []byte{0}) {
		if len(entry) == 0 {
			continue
		}
		key, _, _ := bytes.Cut(entry, []byte{'\n'})
		keys = append(keys, string(key))
	}
	return keys
}
