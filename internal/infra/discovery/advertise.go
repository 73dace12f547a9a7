// Package discovery lets people find tandem servers on their LAN: a server
// advertises itself over multicast DNS (DNS-SD, service type _http._tcp) and
// `tandem discover` browses for the advertisements.
//
// It wraps github.com/hashicorp/mdns and works around its measured pitfalls:
// the addresses to announce are always given explicitly (the library's
// hostname lookup fails on ordinary hosts), a host without a multicast-capable
// interface gets one clear warning instead of a swallowed error, and because
// the library only answers queries, the records are announced when
// advertising starts and withdrawn with goodbye packets when it stops.
package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/mdns"
)

const (
	// ServiceType is the DNS-SD service tandem advertises. It is the generic
	// web service type, as OpenCode uses, so any Bonjour/Avahi browser lists it.
	ServiceType = "_http._tcp"
	// InstancePrefix starts every instance name tandem advertises
	// ("tandem-4096"); Browse keeps only instances named this way.
	InstancePrefix = "tandem-"
	// DefaultDomain is the host name announced when Options.Domain is empty.
	DefaultDomain = "tandem.local"

	serviceDomain = "local."
	pathTXT       = "path=/"
)

// Options says where a server listens and how to announce it.
type Options struct {
	// Host is the address the server is bound to. Loopback binds are never
	// advertised; "", "0.0.0.0" and "::" announce every up, multicast-capable,
	// non-loopback interface address (IPv4 only for "0.0.0.0").
	Host string
	// Port is the server's TCP port; it also names the instance (tandem-<port>).
	Port int
	// Domain is the host name put in the SRV record (OpenCode's --mdns-domain);
	// empty means DefaultDomain.
	Domain string
	// Logger receives the one-line outcome (advertising, skipped or
	// unavailable); nil means slog.Default().
	Logger *slog.Logger
	// Iface restricts the announcement to one interface; nil lets the host
	// choose (the interface owning Host, or the default multicast route).
	Iface *net.Interface
}

// Advertise announces a server bound to opts.Host:opts.Port on the LAN until
// stop is called or ctx is done, whichever comes first; stop waits until the
// goodbye packets are sent and may be called more than once.
//
// Only bad options return an error. Every environmental reason not to
// advertise (a loopback bind, no multicast-capable interface, a sandbox
// without networking) is logged once and yields a no-op stop, because LAN
// discovery is a convenience that must never keep the server from running.
func Advertise(ctx context.Context, opts Options) (stop func(), err error) {
	noop := func() {}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if opts.Port < 1 || opts.Port > 65535 {
		return noop, fmt.Errorf("mDNS: port %d is not a TCP port (1-65535)", opts.Port)
	}
	hostName, err := hostFQDN(opts.Domain)
	if err != nil {
		return noop, err
	}
	instance := InstancePrefix + strconv.Itoa(opts.Port)

	target, err := resolveTarget(ctx, opts.Host, opts.Iface)
	if err != nil {
		return noop, err
	}
	if target.loopback {
		logger.Info("mDNS skipped: bound to loopback", "host", opts.Host)
		return noop, nil
	}
	unavailable := func(reason string) (func(), error) {
		logger.Warn("mDNS unavailable: "+reason+"; the server runs on without LAN discovery",
			"host", opts.Host, "interface", ifaceName(target.iface))
		return noop, nil
	}
	if len(target.addrs) == 0 {
		return unavailable("no up, multicast-capable interface has a non-loopback address to announce")
	}
	if target.iface != nil && target.iface.Flags&net.FlagMulticast == 0 {
		return unavailable("interface " + target.iface.Name + " is not multicast-capable")
	}

	ips := make([]net.IP, len(target.addrs))
	for i, a := range target.addrs {
		ips[i] = net.IP(a.AsSlice())
	}
	zone, err := mdns.NewMDNSService(instance, ServiceType, serviceDomain, hostName, opts.Port, ips, []string{pathTXT})
	if err != nil {
		return noop, fmt.Errorf("mDNS: describe service %s: %w", instance, err)
	}
	server, err := mdns.NewServer(&mdns.Config{
		Zone:   zone,
		Iface:  target.iface,
		Logger: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	})
	if err != nil {
		// The library reports only "no multicast listeners could be started":
		// both IPv4 and IPv6 group joins failed, which means no multicast route.
		return unavailable("no multicast listener could start (no multicast route or interface)")
	}

	records := zone.Records(serviceQuestion())
	announce(records, target.iface, logger)
	logger.Info("mDNS advertising", "instance", instance, "service", ServiceType,
		"host", strings.TrimSuffix(hostName, "."), "port", opts.Port, "addresses", target.addrs)

	withdraw := sync.OnceFunc(func() {
		goodbye(records, target.iface, logger)
		if err := server.Shutdown(); err != nil {
			logger.Warn("mDNS shutdown", "err", err)
		}
		logger.Info("mDNS withdrawn", "instance", instance)
	})
	unregister := context.AfterFunc(ctx, withdraw)
	return func() {
		unregister()
		withdraw()
	}, nil
}

// hostFQDN validates a --mdns-domain value and returns it with the trailing
// dot DNS needs.
func hostFQDN(domain string) (string, error) {
	if domain == "" {
		domain = DefaultDomain
	}
	name := strings.TrimSuffix(domain, ".")
	if name == "" || len(name) > 253 {
		return "", fmt.Errorf("mDNS domain %q is not a host name", domain)
	}
	for label := range strings.SplitSeq(name, ".") {
		if !validLabel(label) {
			return "", fmt.Errorf("mDNS domain %q is not a host name: label %q must be 1-63 letters, digits or inner hyphens", domain, label)
		}
	}
	return name + ".", nil
}

func validLabel(label string) bool {
	if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
		return false
	}
	for _, r := range label {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// target is what a bind address means for mDNS: skip it, or announce these
// addresses on this interface (nil: the host's default multicast interface).
type target struct {
	loopback bool
	addrs    []netip.Addr
	iface    *net.Interface
}

// resolveTarget turns the bind host into the addresses to announce, so the
// library never has to look up the machine's hostname (which fails on many
// hosts and in containers).
func resolveTarget(ctx context.Context, host string, iface *net.Interface) (target, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return target{loopback: true}, nil
	}
	if host == "" || host == "::" {
		return allInterfaces(iface, true)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		addr = addr.Unmap()
		switch {
		case addr.IsLoopback():
			return target{loopback: true}, nil
		case addr.IsUnspecified():
			return allInterfaces(iface, addr.Is6())
		}
		return specificAddrs([]netip.Addr{addr}, iface)
	}
	resolved, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return target{}, fmt.Errorf("mDNS: resolve bind host %q: %w", host, err)
	}
	var addrs []netip.Addr
	for _, a := range resolved {
		if a = a.Unmap(); !a.IsLoopback() {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return target{loopback: true}, nil
	}
	return specificAddrs(addrs, iface)
}

// specificAddrs announces exactly the bound addresses, on the interface that
// owns the first of them unless one was chosen, so a multi-homed host
// advertises where it actually listens.
func specificAddrs(addrs []netip.Addr, iface *net.Interface) (target, error) {
	if iface != nil {
		return target{addrs: addrs, iface: iface}, nil
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return target{}, fmt.Errorf("mDNS: list network interfaces: %w", err)
	}
	for i := range ifaces {
		for _, a := range interfaceAddrs(&ifaces[i]) {
			if a == addrs[0] {
				return target{addrs: addrs, iface: &ifaces[i]}, nil
			}
		}
	}
	return target{addrs: addrs}, nil
}

// allInterfaces collects the addresses a wildcard bind is reachable on: global
// unicast addresses (private ranges included) of up, multicast-capable,
// non-loopback interfaces. Link-local addresses are left out because they
// are ambiguous without their interface.
func allInterfaces(only *net.Interface, withIPv6 bool) (target, error) {
	ifaces := []net.Interface{}
	if only != nil {
		ifaces = append(ifaces, *only)
	} else {
		all, err := net.Interfaces()
		if err != nil {
			return target{}, fmt.Errorf("mDNS: list network interfaces: %w", err)
		}
		ifaces = all
	}
	t := target{iface: only}
	for i := range ifaces {
		f := ifaces[i].Flags
		if f&net.FlagUp == 0 || f&net.FlagLoopback != 0 || f&net.FlagMulticast == 0 {
			continue
		}
		for _, a := range interfaceAddrs(&ifaces[i]) {
			if a.IsGlobalUnicast() && (a.Is4() || withIPv6) {
				t.addrs = append(t.addrs, a)
			}
		}
	}
	return t, nil
}

func interfaceAddrs(iface *net.Interface) []netip.Addr {
	raw, err := iface.Addrs()
	if err != nil {
		return nil
	}
	var addrs []netip.Addr
	for _, r := range raw {
		if ipn, ok := r.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(ipn.IP); ok {
				addrs = append(addrs, a.Unmap())
			}
		}
	}
	return addrs
}

func ifaceName(iface *net.Interface) string {
	if iface == nil {
		return "default"
	}
	return iface.Name
}
