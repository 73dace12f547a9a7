package discovery

import (
	"log/slog"
	"net"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// serviceQuestion asks for every record of the advertisement at once: the
// library answers a PTR question for the service with PTR, SRV, A/AAAA and TXT.
func serviceQuestion() dns.Question {
	return dns.Question{Name: ServiceType + "." + serviceDomain, Qtype: dns.TypePTR, Qclass: dns.ClassINET}
}

// mdnsGroups are the IPv4 and IPv6 mDNS groups (RFC 6762 §3). Responses must
// come from port 5353 and carry IP TTL 255, or listeners such as Avahi treat
// them as foreign.
func mdnsGroups() []*net.UDPAddr {
	return []*net.UDPAddr{
		{IP: net.IPv4(224, 0, 0, 251), Port: 5353},
		{IP: net.ParseIP("ff02::fb"), Port: 5353},
	}
}

const mdnsHopLimit = 255

// announce multicasts the records unsolicited (RFC 6762 §8.3), because the
// library only ever answers queries and browsers that cache (Avahi, macOS)
// would otherwise learn of the server only on their next query.
func announce(records []dns.RR, iface *net.Interface, logger *slog.Logger) {
	multicastResponse(records, iface, logger)
}

// goodbye multicasts the records with TTL 0 (RFC 6762 §10.1) so caching
// browsers drop the server at once instead of showing it for two minutes.
func goodbye(records []dns.RR, iface *net.Interface, logger *slog.Logger) {
	expired := make([]dns.RR, len(records))
	for i, rr := range records {
		expired[i] = dns.Copy(rr)
		expired[i].Header().Ttl = 0
	}
	multicastResponse(expired, iface, logger)
}

// multicastResponse sends one response on each IP family that has a
// multicast route. Failure is logged at debug level only: the server already
// answers queries, so a lost announcement costs nothing but latency.
func multicastResponse(records []dns.RR, iface *net.Interface, logger *slog.Logger) {
	msg := &dns.Msg{
		MsgHdr:   dns.MsgHdr{Response: true, Authoritative: true},
		Compress: true,
		Answer:   records,
	}
	packet, err := msg.Pack()
	if err != nil {
		logger.Debug("mDNS: pack response", "err", err)
		return
	}
	for _, group := range mdnsGroups() {
		if err := sendTo(packet, group, iface); err != nil {
			logger.Debug("mDNS: multicast response", "group", group.IP, "err", err)
		}
	}
}

func sendTo(packet []byte, group *net.UDPAddr, iface *net.Interface) error {
	network := "udp4"
	if group.IP.To4() == nil {
		network = "udp6"
	}
	// Listening on the group port (shared with the library's listener through
	// SO_REUSEADDR) is what makes 5353 the source port.
	conn, err := net.ListenMulticastUDP(network, iface, group)
	if err != nil {
		return err
	}
	defer conn.Close()
	if network == "udp4" {
		err = ipv4.NewPacketConn(conn).SetMulticastTTL(mdnsHopLimit)
	} else {
		err = ipv6.NewPacketConn(conn).SetMulticastHopLimit(mdnsHopLimit)
	}
	if err != nil {
		return err
	}
	_, err = conn.WriteToUDP(packet, group)
	return err
}
