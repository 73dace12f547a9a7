package discovery

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestAdvertiseAndBrowseAcrossNamespaces is two hosts on one LAN: tandem
// servers advertise in one network namespace and are browsed, dialled and
// withdrawn from the other, every party a real process.
func TestAdvertiseAndBrowseAcrossNamespaces(t *testing.T) {
	t.Parallel()
	serverNS, clientNS, serverAddr, serverV6 := lan(t)
	listener := startHelper(t, clientNS, "listen", ifaceEnv+"=lan0")
	listener.expect(t, "listening line", func(l string) bool { return l == "listening" })

	wildcard, wildcardPort := startAdvertiser(t, serverNS, "0.0.0.0")
	_, specificPort := startAdvertiser(t, serverNS, serverAddr, domainEnv+"=lab-box.local")
	dualStack, dualStackPort := startAdvertiser(t, serverNS, "::")
	wildcardName := InstancePrefix + strconv.Itoa(wildcardPort)
	specificName := InstancePrefix + strconv.Itoa(specificPort)
	dualStackName := InstancePrefix + strconv.Itoa(dualStackPort)

	t.Run("starting to advertise announces the server unasked", func(t *testing.T) {
		for _, name := range []string{wildcardName, specificName, dualStackName} {
			listener.expect(t, "announcement of "+name, func(l string) bool {
				return strings.HasPrefix(l, "PTR "+name+" ") && !strings.HasSuffix(l, " 0")
			})
		}
	})

	t.Run("a browser on the LAN finds every server and reaches it", func(t *testing.T) {
		results := browseUntil(t, clientNS, "all servers found", func(r []browseResult) bool {
			return hasInstance(r, wildcardName) && hasInstance(r, specificName) && hasInstance(r, dualStackName)
		})
		for _, tt := range []struct{ name, host string }{{wildcardName, "tandem.local"}, {specificName, "lab-box.local"}, {dualStackName, "tandem.local"}} {
			got := find(t, results, tt.name)
			want := browseResult{
				Server:   Server{Name: tt.name, Host: tt.host, Addr: got.Server.Addr, Port: got.Server.Port, Path: "/"},
				Greeting: tt.name,
			}
			if got != want || got.Server.Addr.String() != serverAddr || strconv.Itoa(got.Server.Port) != strings.TrimPrefix(tt.name, InstancePrefix) {
				t.Errorf("found %+v, want %+v at %s", got, want, serverAddr)
			}
		}
	})

	t.Run("stopping withdraws the server with a goodbye while the process runs on", func(t *testing.T) {
		wildcard.send(t, "stop")
		wildcard.expect(t, "stopped line", func(l string) bool { return l == "stopped" })
		listener.expect(t, "goodbye of "+wildcardName, func(l string) bool { return l == "PTR "+wildcardName+" 0" })
		results := browseUntil(t, clientNS, "the stopped server gone", func(r []browseResult) bool {
			return !hasInstance(r, wildcardName)
		})
		if !hasInstance(results, specificName) {
			t.Errorf("the server still advertising vanished too: %+v", results)
		}
		wildcard.send(t, "ping")
		wildcard.expect(t, "pong", func(l string) bool { return l == "pong" })
	})

	t.Run("0.0.0.0 announces the IPv4 address and :: both families", func(t *testing.T) {
		for _, tt := range []struct {
			advertiser *helper
			want       []string
		}{
			{wildcard, []string{
				`msg="mDNS advertising" instance=` + wildcardName + ` service=_http._tcp host=tandem.local port=` + strconv.Itoa(wildcardPort) + ` addresses=[` + serverAddr + `]`,
				`msg="mDNS withdrawn" instance=` + wildcardName,
			}},
			{dualStack, []string{
				`msg="mDNS advertising" instance=` + dualStackName + ` service=_http._tcp host=tandem.local port=` + strconv.Itoa(dualStackPort) + ` addresses="[` + serverAddr + ` ` + serverV6 + `]"`,
			}},
		} {
			logs := tt.advertiser.stderr.String()
			for _, want := range tt.want {
				if !strings.Contains(logs, want) {
					t.Errorf("advertiser logs lack %s:\n%s", want, logs)
				}
			}
		}
	})
}

// TestAdvertiseWithoutMulticast covers the hosts where LAN discovery cannot
// work: the advertiser must log exactly one clear warning, return no error
// and keep running.
func TestAdvertiseWithoutMulticast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		host   string
		setup  func(t *testing.T, ns string)
		reason string
	}{
		{
			name:   "a loopback-only sandbox with a wildcard bind warns and runs on",
			host:   "0.0.0.0",
			setup:  func(*testing.T, string) {},
			reason: "no up, multicast-capable interface has a non-loopback address to announce",
		},
		{
			name: "an interface without the multicast flag warns and runs on",
			host: "10.232.0.1",
			setup: func(t *testing.T, ns string) {
				run(t, "ip", "-n", ns, "link", "add", "plain0", "type", "veth", "peer", "name", "plain1")
				run(t, "ip", "-n", ns, "link", "set", "plain1", "up")
				run(t, "ip", "-n", ns, "link", "set", "plain0", "multicast", "off", "up")
				run(t, "ip", "-n", ns, "addr", "add", "10.232.0.1/24", "dev", "plain0")
			},
			reason: "interface plain0 is not multicast-capable",
		},
		{
			name: "a multicast interface without a multicast route warns and runs on",
			host: "0.0.0.0",
			setup: func(t *testing.T, ns string) {
				run(t, "ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
				run(t, "ip", "-n", ns, "link", "add", "mc0", "type", "veth", "peer", "name", "mc1")
				run(t, "ip", "-n", ns, "link", "set", "mc1", "up")
				run(t, "ip", "-n", ns, "link", "set", "mc0", "multicast", "on", "up")
				run(t, "ip", "-n", ns, "addr", "add", "10.233.0.1/24", "dev", "mc0")
			},
			reason: "no multicast listener could start (no multicast route or interface)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := newNetns(t)
			tt.setup(t, ns)
			advertiser, _ := startAdvertiser(t, ns, tt.host)
			advertiser.send(t, "ping")
			advertiser.expect(t, "pong", func(l string) bool { return l == "pong" })
			logs := advertiser.stderr.String()
			want := fmt.Sprintf(`level=WARN msg="mDNS unavailable: %s; the server runs on without LAN discovery"`, tt.reason)
			if strings.Count(logs, "\n") != 1 || !strings.Contains(logs, want) {
				t.Errorf("logs:\n%s\nwant exactly one line containing %s", logs, want)
			}
		})
	}
}

// TestBrowseWithoutMulticastExplainsWhy makes sure `tandem discover` in a
// sandbox says what is missing instead of silently finding nothing.
func TestBrowseWithoutMulticastExplainsWhy(t *testing.T) {
	t.Parallel()
	ns := newNetns(t)
	h := startHelper(t, ns, "browse", timeoutEnv+"=200ms")
	if _, ok := testenv.Recv(t, h.lines, "browse ending"); ok {
		t.Fatalf("browse printed results in a loopback-only namespace")
	}
	err := h.cmd.Wait()
	stderr := h.stderr.String()
	if err == nil || !strings.Contains(stderr, "mDNS browse on interface default: failed to bind to any multicast udp port (a host needs an up, multicast-capable interface with a multicast route)") {
		t.Errorf("browse exit = %v, stderr %q; want a failure that names the missing multicast interface", err, stderr)
	}
}
