package tool

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// sandboxGate stands between a command's asks and the call's gate. It remembers the directories a
// person (or the user's rules) approved for this command, external_directory asks for the workdir
// and for redirection targets, which the kernel sandbox then lets the command write. Where the
// sandbox was asked for but the kernel cannot enforce it, it makes the bash ask one that no lasting
// grant satisfies: nothing contains the command, so a person decides each one.
type sandboxGate struct {
	Gate
	opts     Options
	approved []string
}

// directoryLister is a gate that can tell which directories are approved already (the user's
// rules, remembered grants) for a permission, without asking: the permission package's gate.
type directoryLister interface {
	Directories(ctx context.Context, permission string) ([]string, error)
}

// guard wraps the call's gate for one command.
func guard(call *Call, opts Options) *Call {
	if opts.Sandbox == nil {
		return call
	}
	c := *call
	c.Gate = &sandboxGate{Gate: call.Gate, opts: opts}
	return &c
}

func (g *sandboxGate) Check(ctx context.Context, ask Ask) error {
	if st := g.opts.Sandbox.Status(); ask.Permission == "bash" && !st.Enforced {
		reason := "no kernel sandbox contains it: " + st.Reason
		ask.Unjudged = append(slices.Clip(ask.Unjudged), reason)
		ask.Always = nil
		meta := make(map[string]any, len(ask.Metadata)+1)
		for k, v := range ask.Metadata {
			meta[k] = v
		}
		meta["unjudged"] = ask.Unjudged
		ask.Metadata = meta
	}
	if err := g.Gate.Check(ctx, ask); err != nil {
		return err
	}
	if ask.Permission == "external_directory" {
		if dir, ok := ask.Metadata["parentDir"].(string); ok && filepath.IsAbs(dir) {
			g.approved = append(g.approved, dir)
		}
	}
	// A redirection's target outside the project is approved within the bash request itself.
	for _, n := range ask.With {
		if n.Permission != "external_directory" {
			continue
		}
		if dir := strings.TrimSuffix(n.Pattern, "/*"); dir != n.Pattern && filepath.IsAbs(dir) {
			g.approved = append(g.approved, filepath.FromSlash(dir))
		}
	}
	return nil
}

// writable is what the command may write besides the temp directory: the session's directory and
// the approved ones.
func writable(call *Call) []string {
	dirs := []string{call.Dir}
	if g, ok := call.Gate.(*sandboxGate); ok {
		dirs = append(dirs, g.approved...)
	}
	return dirs
}

// start starts the process of a command: confined by the sandbox when there is one. Besides the
// directories approved while the command was asked for, those the user's rules or remembered
// grants approve for external_directory are writable.
func (o Options) start(ctx context.Context, call *Call, cmd *exec.Cmd) error {
	if o.Sandbox == nil {
		return cmd.Start()
	}
	if g, ok := call.Gate.(*sandboxGate); ok {
		if lister, ok := g.Gate.(directoryLister); ok {
			dirs, err := lister.Directories(ctx, "external_directory")
			if err != nil {
				return err
			}
			g.approved = append(g.approved, dirs...)
		}
	}
	return o.Sandbox.Start(cmd, writable(call))
}

// refusalNote tells the model which writes the sandbox refused and how to get such a directory
// approved. It reads the command's error messages, so it shapes this note only.
func (o Options) refusalNote(call *Call, output string) string {
	if o.Sandbox == nil {
		return ""
	}
	refused := o.Sandbox.Refused(output, writable(call))
	if len(refused) == 0 {
		return ""
	}
	dirs := make([]string, 0, len(refused))
	for _, p := range refused {
		if d := filepath.Dir(p); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return fmt.Sprintf("(The sandbox refused writing %s: a command may write only in the project directory, the temp directory and directories approved for it; tandem's own data and configuration never. "+
		"To write in %s, run the command again with workdir set to that directory, or redirect its output into it, so that a person is asked for external_directory %s.)",
		strings.Join(refused, ", "), strings.Join(dirs, ", "), filepath.ToSlash(filepath.Join(dirs[0], "*")))
}
