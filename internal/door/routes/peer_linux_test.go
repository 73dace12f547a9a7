//go:build linux

package routes

import (
	"encoding/binary"
	"net"
	"testing"
)

func TestTheKernelsSocketAddressesAreReadAsTheyAreWritten(t *testing.T) {
	// /proc/net/tcp on a little-endian machine writes 127.0.0.1:4096 as 0100007F:1000, and
	// /proc/net/tcp6 writes [::1]:4096 as 00000000000000000000000001000000:1000.
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("skipped: the fixtures are a little-endian kernel's")
	}
	cases := []struct {
		name  string
		field string
		addr  net.TCPAddr
		want  bool
	}{
		{"an IPv4 loopback address and port", "0100007F:1000", net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4096}, true},
		{"the same address on another port", "0100007F:1001", net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4096}, false},
		{"an IPv6 loopback address", "00000000000000000000000001000000:1000", net.TCPAddr{IP: net.IPv6loopback, Port: 4096}, true},
		{"an IPv4-mapped IPv6 address equals its IPv4 form", "0000000000000000FFFF00000100007F:1000", net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4096}, true},
		{"garbage", "zz:1000", net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4096}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sameAddr(c.field, &c.addr); got != c.want {
				t.Fatalf("sameAddr(%q, %v) = %v", c.field, c.addr.String(), got)
			}
		})
	}
}
