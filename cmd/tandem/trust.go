package main

import (
	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/app"
)

// newTrustCommand manages the user's list of trusted project directories. Until a directory is
// trusted, its own tandem.json can only tighten the user's rules: it starts no process (MCP),
// contacts no new URL (providers, remote MCP) and learns no secret through {env:VAR}.
func newTrustCommand() *cobra.Command {
	var list, remove bool
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust a project directory's own configuration (default: the current directory)",
		Long: "A project's tandem.json may tighten your permission rules but not loosen them, start MCP servers,\n" +
			"point providers or MCP at URLs, or read secrets through {env:VAR} until you trust the directory.\n" +
			"Trusting a directory also trusts the directories below it. The list lives in your user config\n" +
			"(\"trust\" in $XDG_CONFIG_HOME/tandem/tandem.json); a running server applies it on its next config load.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return app.TrustCommand(cmd.OutOrStdout(), args, list, remove)
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted directories")
	cmd.Flags().BoolVar(&remove, "remove", false, "stop trusting the directory")
	return cmd
}
