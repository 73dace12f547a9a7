package main

import (
	"fmt"
	"net"
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
			var iface *net.Interface
			if ifaceName != "" {
				found, err := net.InterfaceByName(ifaceName)
				if err != nil {
					return fmt.Errorf("--interface %q: no such network interface (list them with `ip link`)", ifaceName)
				}
				iface = found
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %v: must be positive, e.g. 2s", timeout)
			}
			cmd.SilenceUsage = true // the flags are fine; what follows is about the network
			return app.Discover(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), timeout, iface, asJSON)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", discovery.DefaultBrowseTimeout, "how long to wait for answers")
	cmd.Flags().StringVar(&ifaceName, "interface", "", "network interface to ask on (default: the system's multicast route)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the servers as a JSON array")
	return cmd
}
