package discovery

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/mdns"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	goleak.VerifyTestMain(m)
}

func TestAdvertiseSkipsLoopbackBinds(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"} {
		t.Run("a server bound to "+host+" is not advertised", func(t *testing.T) {
			var logs bytes.Buffer
			stop, err := Advertise(context.Background(), Options{
				Host: host, Port: 4096, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatalf("Advertise: %v", err)
			}
			stop()
			stop()
			if got := logs.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, `msg="mDNS skipped: bound to loopback"`) {
				t.Errorf("logs = %q, want exactly one \"mDNS skipped: bound to loopback\" line", got)
			}
		})
	}
}

func TestAdvertiseRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"a zero port is refused", Options{Host: "0.0.0.0", Port: 0}, "port 0 is not a TCP port"},
		{"a port above 65535 is refused", Options{Host: "0.0.0.0", Port: 70000}, "port 70000 is not a TCP port"},
		{"a domain with a space is refused", Options{Host: "0.0.0.0", Port: 4096, Domain: "my host.local"}, `label "my host"`},
		{"a domain with an empty label is refused", Options{Host: "0.0.0.0", Port: 4096, Domain: "tandem..local"}, `label ""`},
		{"a domain label starting with a hyphen is refused", Options{Host: "0.0.0.0", Port: 4096, Domain: "-x.local"}, `label "-x"`},
		{"a domain label over 63 bytes is refused", Options{Host: "0.0.0.0", Port: 4096, Domain: strings.Repeat("a", 64) + ".local"}, "1-63 letters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			tt.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			stop, err := Advertise(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Advertise error = %v, want one containing %q", err, tt.want)
			}
			stop()
			if logs.Len() != 0 {
				t.Errorf("a refused option logged %q; the error alone should report it", logs.String())
			}
		})
	}
}

func TestHostFQDN(t *testing.T) {
	tests := []struct{ domain, want string }{
		{"", "tandem.local."},
		{"tandem.local", "tandem.local."},
		{"lab-box.local.", "lab-box.local."},
		{"Tandem2.Example", "Tandem2.Example."},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("domain %q becomes host %q", tt.domain, tt.want), func(t *testing.T) {
			got, err := hostFQDN(tt.domain)
			if err != nil || got != tt.want {
				t.Errorf("hostFQDN(%q) = %q, %v; want %q", tt.domain, got, err, tt.want)
			}
		})
	}
}

func TestFromEntry(t *testing.T) {
	v4 := netip.MustParseAddr("192.168.1.20")
	tests := []struct {
		name   string
		entry  mdns.ServiceEntry
		want   Server
		wantOK bool
	}{
		{
			name: "a tandem instance becomes a server with its path",
			entry: mdns.ServiceEntry{Name: "tandem-4096._http._tcp.local.", Host: "tandem.local.",
				AddrV4: v4.AsSlice(), Port: 4096, InfoFields: []string{"path=/"}},
			want:   Server{Name: "tandem-4096", Host: "tandem.local", Addr: v4, Port: 4096, Path: "/"},
			wantOK: true,
		},
		{
			name: "another web service on the LAN is ignored",
			entry: mdns.ServiceEntry{Name: "printer._http._tcp.local.", Host: "printer.local.",
				AddrV4: v4.AsSlice(), Port: 80},
		},
		{
			name: "an OpenCode server is ignored",
			entry: mdns.ServiceEntry{Name: "opencode-4096._http._tcp.local.", Host: "opencode.local.",
				AddrV4: v4.AsSlice(), Port: 4096, InfoFields: []string{"path=/"}},
		},
		{
			name: "an entry from another service type is ignored",
			entry: mdns.ServiceEntry{Name: "tandem-4096._ssh._tcp.local.", Host: "tandem.local.",
				AddrV4: v4.AsSlice(), Port: 22},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := fromEntry(&tt.entry)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("fromEntry = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestServerURL(t *testing.T) {
	tests := []struct {
		server Server
		want   string
	}{
		{Server{Addr: netip.MustParseAddr("10.0.0.5"), Port: 4096, Path: "/"}, "http://10.0.0.5:4096/"},
		{Server{Addr: netip.MustParseAddr("fd00::5"), Port: 4097, Path: ""}, "http://[fd00::5]:4097/"},
		{Server{Addr: netip.MustParseAddr("fe80::1%eth0"), Port: 4096, Path: "/"}, "http://[fe80::1%25eth0]:4096/"},
	}
	for _, tt := range tests {
		t.Run("the server at "+tt.want+" is reached by that URL", func(t *testing.T) {
			if got := tt.server.URL(); got != tt.want {
				t.Errorf("URL() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBrowseRejectsNegativeTimeout(t *testing.T) {
	if _, err := Browse(context.Background(), -1, nil); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("Browse(-1) error = %v, want one saying the timeout is negative", err)
	}
}
