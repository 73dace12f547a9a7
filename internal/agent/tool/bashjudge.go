package tool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/shelljudge"
)

// commandWrite is a file a command's redirection writes, resolved as the edit tool resolves a path.
type commandWrite struct {
	Path     string `json:"path"`     // as the command names it, ~ expanded
	Filepath string `json:"filepath"` // absolute, against the command's directory
	Real     string `json:"real"`     // with every existing symlink evaluated: what the kernel will open
	Append   bool   `json:"append,omitempty"`
	Outside  bool   `json:"outside,omitempty"` // outside the session's directory
}

// askForCommand asks the gate for everything a command line will do, as its syntax tree in the
// shell's own dialect shows it, in one bash request: every command that runs (a lasting grant covers
// only the command families a person saw) and every file a redirection writes. A write needs what
// the edit tool would need (edit for the file, external_directory outside the project) without a
// request of its own: a rule that denies it refuses the command, one that would ask makes the bash
// request asked, and "always" on that request remembers only the command families, never the
// writes. A part that cannot be judged before it runs makes a request no lasting grant satisfies,
// with the reasons. It returns the writes so the caller can check, just before running, that each
// still leads where it led when the person was asked.
func askForCommand(ctx context.Context, call *Call, sh shelljudge.Shell, command, workdir string) ([]commandWrite, error) {
	if call.Dir == "" || !filepath.IsAbs(call.Dir) {
		return nil, invalid("the session has no absolute working directory (got %q)", call.Dir)
	}
	home, _ := os.UserHomeDir()
	an := sh.Analyze(command, home)
	var patterns, always []string
	for _, c := range an.Commands {
		for _, p := range []string{c.Pattern, c.Named} {
			if p != "" && !slices.Contains(patterns, p) {
				patterns = append(patterns, p)
			}
		}
		if c.Always != "" && !slices.Contains(always, c.Always) {
			always = append(always, c.Always)
		}
	}
	if len(patterns) == 0 {
		patterns = []string{strings.TrimSpace(command)}
	}
	unjudged := an.Unjudged
	dir := filepath.Clean(call.Dir)
	realDir := evalExisting(dir)
	var writes []commandWrite
	var needs []Need
	for _, w := range an.Writes {
		abs := absPath(workdir, w.Path)
		cw := commandWrite{Path: w.Path, Filepath: abs, Real: evalExisting(abs), Append: w.Append}
		cw.Outside = !within(realDir, cw.Real)
		var reason string
		switch {
		case within("/proc", cw.Real) || within("/dev/fd", cw.Real):
			reason = "it writes " + abs + ", which leads through /proc to wherever the running command's descriptors lead"
		default:
			reason = configFile(cw.Real)
		}
		if reason != "" && !slices.Contains(unjudged, reason) {
			unjudged = append(unjudged, reason)
		}
		if cw.Outside {
			needs = append(needs, Need{Permission: "external_directory", Pattern: filepath.ToSlash(filepath.Join(filepath.Dir(cw.Real), "*")), Unjudged: reason})
		}
		needs = append(needs, Need{Permission: "edit", Pattern: relSlash(dir, abs), Unjudged: reason})
		writes = append(writes, cw)
	}
	if len(unjudged) > 0 {
		always = nil
	}
	meta := map[string]any{"command": command, "commands": an.Commands, "workdir": workdir, "shell": sh.String()}
	if len(writes) > 0 {
		meta["writes"] = writes
	}
	if len(unjudged) > 0 {
		meta["unjudged"] = unjudged
	}
	ask := Ask{Permission: "bash", Patterns: patterns, Always: always, Metadata: meta, Unjudged: unjudged, With: needs}
	if err := call.Gate.Check(ctx, ask); err != nil {
		return nil, err
	}
	return writes, nil
}

// writesStillLead refuses to run a command when a file it writes now leads elsewhere than when the
// person was asked: a directory swapped for a symlink during the wait would move the write.
func writesStillLead(writes []commandWrite) error {
	for _, w := range writes {
		if now := evalExisting(w.Filepath); now != w.Real {
			return invalid("Refused to run the command: %s, which it writes, changed while waiting for approval (it now leads to %s, not %s).", w.Filepath, now, w.Real)
		}
	}
	return nil
}

// configFile says why writing p is never covered by a grant: it is configuration tandem (or OpenCode,
// whose files tandem reads) takes permission rules, providers or commands from, or git configuration
// that names programs later git commands run (core.fsmonitor, hooks, filter drivers).
func configFile(p string) string {
	base := filepath.Base(p)
	switch base {
	case "tandem.json", "tandem.jsonc", "opencode.json", "opencode.jsonc":
		return "it writes " + base + ", configuration tandem reads"
	case ".gitconfig":
		return "it writes " + base + ", git configuration that can name programs git runs"
	}
	segments := strings.Split(filepath.ToSlash(p), "/")
	for _, dir := range []string{".tandem", ".opencode"} {
		if slices.Contains(segments, dir) {
			return "it writes inside " + dir + "/, configuration tandem reads"
		}
	}
	if i := slices.Index(segments, ".git"); i >= 0 {
		inside := segments[i+1:]
		switch {
		case base == "config" || base == "config.worktree":
			return "it writes " + p + ", git configuration that can name programs git runs"
		case slices.Contains(inside, "hooks"):
			return "it writes " + p + ", a git hook that git commands run"
		case strings.HasSuffix(strings.Join(inside, "/"), "info/attributes"):
			return "it writes " + p + ", git attributes that choose the filter and diff programs git runs"
		}
	}
	if cfg, err := os.UserConfigDir(); err == nil {
		if within(filepath.Join(cfg, "tandem"), p) {
			return "it writes tandem's user configuration"
		}
		if within(filepath.Join(cfg, "git"), p) {
			return "it writes git's user configuration, which can name programs git runs"
		}
	}
	return ""
}
