package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/door/acpagent"
)

// acpFlags are the flags of `tandem acp`.
type acpFlags struct {
	serve  serveFlags
	attach string
}

// newACPCommand is `tandem acp`: tandem as an Agent Client Protocol agent over stdio, for editors
// (Zed, JetBrains, Neovim plugins, acpx). The HTTP listener runs as in `serve`, so an approval the
// editor shows is also in GET /permission and can be answered from the web UI first.
func newACPCommand() *cobra.Command {
	var f acpFlags
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve tandem as an Agent Client Protocol agent over stdio (for editors)",
		Long: "Speak the Agent Client Protocol (version 1) over stdin/stdout: sessions, streamed answers, tool calls\n" +
			"with diffs, plans, modes (tandem's agents), model selection and approvals (session/request_permission).\n" +
			"The HTTP server runs as well (same sessions, same pending list; the first answer wins).\n" +
			"With --attach URL it starts no server and drives the running server at URL. Without it, when another\n" +
			"tandem owns the data directory (tandem serve), it drives that one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := f.serve.stdioDoor(cmd, "tandem acp", f.attach)
			if err != nil {
				return err
			}
			r, err := app.OpenStdioDoor(cmd.Context(), d)
			if err != nil {
				return err
			}
			defer r.Close()
			var files func(string, tool.Files) func()
			if r.Main != nil {
				files = r.Main.SetFiles // the editor's files, for the sessions of this door's own server
			}
			return acpagent.Serve(cmd.Context(), acpagent.Options{Client: r.Client, Version: app.Version(), Logger: r.Logger, Files: files}, os.Stdout, os.Stdin)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.attach, "attach", "", "drive the running tandem server at this URL instead of starting one (\"local\": the one `tandem serve` started here)")
	f.serve.addServerFlags(fl)
	return cmd
}
