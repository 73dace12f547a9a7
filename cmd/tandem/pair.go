package main

import (
	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/app"
)

// newPairCommand is `tandem pair`: a one-time link and its QR code that sign a phone in.
func newPairCommand() *cobra.Command {
	var o app.PairOptions
	cmd := &cobra.Command{Use: "pair", Short: "Sign a phone in to the running server with a one-time link and QR code", Args: cobra.NoArgs,
		Example: "  tandem pair\n  tandem pair --url http://192.168.1.20:4096 --ttl 10m",
		RunE:    func(cmd *cobra.Command, _ []string) error { return app.Pair(cmd.Context(), cmd.OutOrStdout(), o) }}
	cmd.Flags().DurationVar(&o.TTL, "ttl", 0, "how long the link works (default 5m, at most 1h)")
	cmd.Flags().StringVar(&o.URL, "url", "", "the server's address as the phone reaches it (default: the one it listens on)")
	cmd.Flags().StringVar(&o.Server, "server", "", "the server to ask (default: the one running here)")
	return cmd
}
