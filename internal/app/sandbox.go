package app

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// sandboxPolicy is the policy every command the agent runs is confined by: the user's "sandbox"
// setting, with tandem's own directories (the database, the state file with the password, the
// user's configuration) never writable.
func sandboxPolicy(s config.Sandbox, o Options) sandbox.Policy {
	var protected []string
	for _, d := range []string{o.Paths.Data, o.Paths.State, o.Paths.Config, config.UserDir(o.Env)} {
		if d != "" && filepath.IsAbs(d) && !slices.Contains(protected, filepath.Clean(d)) {
			protected = append(protected, filepath.Clean(d))
		}
	}
	temp := o.Env("TMPDIR")
	if !filepath.IsAbs(temp) {
		temp = ""
	}
	return s.Policy(protected, temp, o.Env("HOME"))
}

// logSandbox says at start what the kernel enforces, and warns where tandem's own directories lie
// inside a directory commands may write: Landlock grants whole trees, so there commands may write
// the existing entries beside tandem's directory but create nothing new next to it.
func logSandbox(log *slog.Logger, p sandbox.Policy, dir string) sandbox.Status {
	st := p.Status()
	if !st.Enforced {
		log.Warn("sandbox: "+st.String(), "mode", st.Mode, "abi", st.ABI)
		return st
	}
	log.Info("sandbox: "+st.String(), "mode", st.Mode, "abi", st.ABI, "network", st.Network)
	if st.Mode == sandbox.Off {
		return st
	}
	for _, w := range p.WritableDirs([]string{dir}) {
		for _, pr := range p.Protected {
			if rel, err := filepath.Rel(w, pr); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
				log.Warn("sandbox: tandem's directory "+pr+" lies inside "+w+", which commands may write: they may write what exists there beside it, but create no new file on the way to it",
					"writable", w, "protected", pr)
			}
		}
	}
	return st
}
