package tool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tandem/bashcmd"
)

// askForCommand asks the gate for everything a command line will do, as its syntax tree shows it:
// one bash request listing every command that runs (a grant can only cover the command families a
// person saw), then an edit request for each file a redirection writes. A part that cannot be judged
// before it runs makes the bash request one that no lasting grant satisfies, with the reasons.
func askForCommand(ctx context.Context, call *Call, command, workdir string) error {
	home, _ := os.UserHomeDir()
	an := bashcmd.Analyze(command, home)
	var patterns, always []string
	for _, c := range an.Commands {
		if !slices.Contains(patterns, c.Pattern) {
			patterns = append(patterns, c.Pattern)
		}
		if c.Always != "" && !slices.Contains(always, c.Always) {
			always = append(always, c.Always)
		}
	}
	if len(patterns) == 0 {
		patterns = []string{strings.TrimSpace(command)}
	}
	if len(an.Unjudged) > 0 {
		always = nil
	}
	meta := map[string]any{"command": command, "commands": an.Commands, "workdir": workdir}
	if len(an.Writes) > 0 {
		meta["writes"] = an.Writes
	}
	if len(an.Unjudged) > 0 {
		meta["unjudged"] = an.Unjudged
	}
	if err := call.Gate.Check(ctx, Ask{Permission: "bash", Patterns: patterns, Always: always, Metadata: meta, Unjudged: an.Unjudged}); err != nil {
		return err
	}
	for _, w := range an.Writes {
		if err := askForWrite(ctx, call, absPath(workdir, w.Path), command); err != nil {
			return err
		}
	}
	return nil
}

// askForWrite asks to write path the way the edit tool would: external_directory when it lands
// outside the project, then edit for the file. tandem's own configuration is asked about every time.
func askForWrite(ctx context.Context, call *Call, path, command string) error {
	t, err := locate(ctx, call, path, false)
	if err != nil {
		return err
	}
	ask := Ask{Permission: "edit", Patterns: []string{t.Rel}, Always: []string{t.Rel},
		Metadata: map[string]any{"filepath": t.Abs, "command": command, "redirection": true}}
	if reason := configFile(t.Real); reason != "" {
		ask.Always = nil
		ask.Unjudged = []string{reason}
		ask.Metadata["unjudged"] = ask.Unjudged
	}
	return call.Gate.Check(ctx, ask)
}

// configFile says why writing p is never covered by a grant: it is configuration tandem (or OpenCode,
// whose files tandem reads) takes permission rules, providers or commands from.
func configFile(p string) string {
	base := filepath.Base(p)
	switch base {
	case "tandem.json", "tandem.jsonc", "opencode.json", "opencode.jsonc":
		return "it writes " + base + ", configuration tandem reads"
	}
	for _, dir := range []string{".tandem", ".opencode"} {
		if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), dir) {
			return "it writes inside " + dir + "/, configuration tandem reads"
		}
	}
	if cfg, err := os.UserConfigDir(); err == nil && within(filepath.Join(cfg, "tandem"), p) {
		return "it writes tandem's user configuration"
	}
	return ""
}
