package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/infra/discovery"
)

// newDiscoverCommand lists the tandem servers advertising themselves on the
// LAN (servers started with `tandem serve --mdns` on a non-loopback address).
func newDiscoverCommand() *cobra.Command {
	var (
		timeout   time.Duration
		ifaceName string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "discover",
		Short: "List tandem servers on the LAN (mDNS)",
		Long: "discover asks the LAN over multicast DNS for tandem servers and lists each one's name, address, port\n" +
			"and URL. Servers answer only when started with `tandem serve --mdns` on a non-loopback --hostname.",
		Example: "  tandem discover\n  tandem discover --timeout 5s --interface eth0\n  tandem discover --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.Discover(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), timeout, ifaceName, asJSON)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", discovery.DefaultBrowseTimeout, "how long to wait for answers")
	cmd.Flags().StringVar(&ifaceName, "interface", "", "network interface to ask on (default: the system's multicast route)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the servers as a JSON array")
	return cmd
}
