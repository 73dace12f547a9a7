package main

import (
	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
)

// mcpFlags are the flags of `tandem mcp`.
type mcpFlags struct {
	serve  serveFlags
	attach string
}

// newMCPCommand is `tandem mcp`: tandem as an MCP server over stdio. The HTTP listener runs as in
// `serve`, so the web UI, the TUI and curl see the same sessions and pending approvals.
func newMCPCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve tandem as an MCP server over stdio",
		Long: "Serve MCP over stdin/stdout with the tools tandem, tandem-reply, tandem-query and tandem-sessions.\n" +
			"The HTTP server runs as well (same sessions, same pending list). Approvals go to the MCP client as\n" +
			"form elicitations; clients without elicitation get --approvals (deny, allow-within-rules, wait).\n" +
			"With --attach URL it starts no server: it relays MCP to that running server's /mcp-server endpoint.\n" +
			"Without it, when another tandem owns the data directory (tandem serve), it relays to that one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			strategy, err := mcpserver.ParseStrategy(f.serve.mcpApprovals)
			if err != nil {
				return err
			}
			d, err := f.serve.stdioDoor(cmd, "tandem mcp", f.attach)
			if err != nil {
				return err
			}
			d.Options.MCPTimeout = f.serve.mcpTimeout
			return app.ServeMCP(cmd.Context(), d, strategy)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.serve.mcpApprovals, "approvals", string(mcpserver.Deny), "for clients without elicitation: deny, allow-within-rules or wait")
	fl.DurationVar(&f.serve.mcpTimeout, "approval-timeout", mcpserver.DefaultTimeout, "how long an approval waits before it is rejected")
	fl.StringVar(&f.attach, "attach", "", "relay to the running tandem server at this URL instead of starting one (\"local\": the one `tandem serve` started here)")
	f.serve.addServerFlags(fl)
	return cmd
}
