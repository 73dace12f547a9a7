package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/discovery"
)

// Discover is `tandem discover`: it asks the LAN (on iface; nil: the system's multicast route) for
// tandem servers for timeout and prints them on out, a table or a JSON array. When none answers,
// it says on errOut why a server may not.
func Discover(ctx context.Context, out, errOut io.Writer, timeout time.Duration, ifaceName string, asJSON bool) error {
	if timeout <= 0 {
		return fmt.Errorf("--timeout %v: must be positive, e.g. 2s", timeout)
	}
	var iface *net.Interface
	if ifaceName != "" {
		found, err := net.InterfaceByName(ifaceName)
		if err != nil {
			return fmt.Errorf("--interface %q: no such network interface (list them with `ip link`)", ifaceName)
		}
		iface = found
	}
	servers, err := discovery.Browse(ctx, timeout, iface)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(servers)
	}
	if len(servers) == 0 {
		fmt.Fprintf(errOut, "No tandem servers answered within %v. A server advertises only when started with\n"+
			"`tandem serve --mdns --hostname 0.0.0.0`, and mDNS does not cross routers or container bridges.\n", timeout)
		return nil
	}
	table := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "NAME\tADDRESS\tPORT\tHOST\tURL")
	for _, s := range servers {
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Addr, strconv.Itoa(s.Port), s.Host, s.URL())
	}
	return table.Flush()
}
