package discovery

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/mdns"
)

// DefaultBrowseTimeout is how long Browse listens for answers when the caller
// gives no timeout: long enough for every responder on a LAN to answer once.
const DefaultBrowseTimeout = 2 * time.Second

// Server is one tandem server found on the LAN.
type Server struct {
	Name string     `json:"name"` // instance name, e.g. "tandem-4096"
	Host string     `json:"host"` // host name from the SRV record, e.g. "tandem.local"
	Addr netip.Addr `json:"addr"` // IPv4 when announced, else IPv6 (with zone when link-local)
	Port int        `json:"port"`
	Path string     `json:"path"` // from the TXT record, "/" for tandem
}

// URL is where the server's HTTP API answers. An IPv6 zone is escaped as
// RFC 6874 requires, so net/url and browsers accept the result.
func (s Server) URL() string {
	path := s.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	host := strings.Replace(s.Addr.String(), "%", "%25", 1)
	return "http://" + net.JoinHostPort(host, strconv.Itoa(s.Port)) + path
}

// Browse asks the LAN for _http._tcp services and returns the tandem
// instances that answer within timeout (DefaultBrowseTimeout when zero),
// sorted by name. iface picks the interface to query on; nil uses the
// default multicast route. It always waits the whole timeout (or until ctx's
// deadline, if sooner), because mDNS has no "that was everyone" signal.
func Browse(ctx context.Context, timeout time.Duration, iface *net.Interface) ([]Server, error) {
	if timeout < 0 {
		return nil, fmt.Errorf("mDNS browse: timeout %v is negative", timeout)
	}
	if timeout == 0 {
		timeout = DefaultBrowseTimeout
	}
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	entries := make(chan *mdns.ServiceEntry, 64)
	found := make(chan []Server, 1)
	go func() {
		byName := map[string]Server{}
		for e := range entries {
			if s, ok := fromEntry(e); ok {
				byName[s.Name] = s
			}
		}
		servers := make([]Server, 0, len(byName))
		for _, s := range byName {
			servers = append(servers, s)
		}
		slices.SortFunc(servers, func(a, b Server) int { return cmp.Compare(a.Name, b.Name) })
		found <- servers
	}()

	// One query per IP family: the library fails a whole query when either
	// family cannot send (an IPv6 address still in duplicate-address
	// detection, a host without IPv6 routes), although the other would work.
	var errs [2]error // IPv4, IPv6
	var queries sync.WaitGroup
	for family, ipv6 := range []bool{false, true} {
		queries.Go(func() {
			errs[family] = mdns.QueryContext(ctx, &mdns.QueryParam{
				Service:     ServiceType,
				Domain:      serviceDomain,
				Timeout:     timeout,
				Interface:   iface,
				Entries:     entries,
				DisableIPv4: ipv6,
				DisableIPv6: !ipv6,
				// The library logs every read error of its own closed sockets.
				Logger: log.New(io.Discard, "", 0),
			})
		})
	}
	queries.Wait()
	close(entries)
	servers := <-found
	if errs[0] != nil && errs[1] != nil {
		return nil, fmt.Errorf("mDNS browse on interface %s: %w (a host needs an up, multicast-capable interface with a multicast route)",
			ifaceName(iface), errs[0])
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return servers, nil
}

// fromEntry keeps tandem instances and turns the library's entry into a
// Server; ok is false for every other _http._tcp service on the LAN.
func fromEntry(e *mdns.ServiceEntry) (Server, bool) {
	name := strings.TrimSuffix(e.Name, "."+ServiceType+"."+serviceDomain)
	if name == e.Name || !strings.HasPrefix(name, InstancePrefix) {
		return Server{}, false
	}
	s := Server{Name: name, Host: strings.TrimSuffix(e.Host, "."), Port: e.Port}
	switch {
	case e.AddrV4 != nil:
		s.Addr, _ = netip.AddrFromSlice(e.AddrV4.To4())
	case e.AddrV6IPAddr != nil:
		a, _ := netip.AddrFromSlice(e.AddrV6IPAddr.IP)
		s.Addr = a.WithZone(e.AddrV6IPAddr.Zone)
	}
	if !s.Addr.IsValid() || s.Port == 0 {
		return Server{}, false
	}
	for _, field := range e.InfoFields {
		if path, ok := strings.CutPrefix(field, "path="); ok {
			s.Path = path
		}
	}
	return s, true
}
