package main

import (
	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/infra/manpage"
)

// newManCommand writes the man pages, one per command, from the commands themselves, so that they
// cannot drift from `--help`. Hidden: it is how docs/man is made, not something a user runs.
func newManCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages (tandem.1, tandem-serve.1, …) into DIR",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return manpage.Write(cmd.Root(), args[0])
		},
	}
}
