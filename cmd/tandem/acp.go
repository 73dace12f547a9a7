package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/tool"
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
			level, err := parseLevel(f.serve.logLevel)
			if err != nil {
				return err
			}
			paths, err := resolvePaths(f.serve.dataDir)
			if err != nil {
				return err
			}
			// stdout carries the protocol: logs go to the log file, or stderr with --print-logs.
			logger, closeLog, err := openLogger(paths, f.serve.printLogs, cmd.ErrOrStderr(), level)
			if err != nil {
				return err
			}
			defer closeLog()
			ctx := cmd.Context()
			var c *client.Client
			var files func(string, tool.Files) func()
			if cmd.Flags().Changed("attach") {
				c, err = client.Locate(f.attach, os.Getenv, paths.State)
				if err != nil {
					return fmt.Errorf("--attach: %w", err)
				}
				if err := c.Health(ctx); err != nil {
					return fmt.Errorf("--attach: %s: %w", c.URL(), err)
				}
			} else {
				m, owner, err := startOrUse(ctx, f.serve.startOptions(paths, logger), "tandem acp", cmd.ErrOrStderr())
				switch {
				case err != nil:
					return err
				case owner != nil:
					c = owner
				default:
					defer m.Close()
					fmt.Fprintf(cmd.ErrOrStderr(), "tandem acp: HTTP server on %s\n", m.URL())
					c = client.New(m.URL(), m.Username(), m.password)
					files = m.sessions.SetFiles
				}
			}
			return acpagent.Serve(ctx, acpagent.Options{Client: c, Version: version, Logger: logger, Files: files}, os.Stdout, os.Stdin)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.attach, "attach", "", "drive the running tandem server at this URL instead of starting one (\"local\": the one `tandem serve` started here)")
	f.serve.addServerFlags(fl)
	return cmd
}
