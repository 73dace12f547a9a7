package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/infra/qr"
)

// PairOptions are `tandem pair`'s flags.
type PairOptions struct {
	TTL    time.Duration // how long the link stays valid (the server's default when 0)
	URL    string        // the server's address as the device reaches it ("" for the one it listens on)
	Server string        // the server to ask ("" for the one running on this machine)
}

// Pair asks a running server for a one-time pairing link and prints it with its QR code, for a
// phone to scan. The server is the one this machine runs (its state file holds the URL and the
// password, as for `tandem attach`) unless o.Server names another.
func Pair(ctx context.Context, w io.Writer, o PairOptions) error {
	paths, err := ResolvePaths("")
	if err != nil {
		return err
	}
	c, err := client.Locate(o.Server, os.Getenv, paths.State)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := c.Named("tandem pair").Pair(ctx, o.TTL, o.URL)
	if err != nil {
		return fmt.Errorf("%s: %w", c.URL(), err)
	}
	code, err := qr.Terminal(p.URL)
	if err != nil {
		return err
	}
	ttl := time.Duration(p.TTL) * time.Second
	fmt.Fprintf(w, "%s\nScan the code with the phone's camera, or open this link on the device (it works once, for %v):\n\n  %s\n\n", code, ttl, p.URL)
	if isLoopbackURL(p.URL) {
		fmt.Fprintf(w, "The link names a loopback address, which another device cannot reach: serve on the LAN (tandem web --hostname 0.0.0.0 with TANDEM_SERVER_PASSWORD set) and pass --url with the address the phone reaches.\n")
	}
	return nil
}

// isLoopbackURL reports whether link points at this machine only (127.0.0.0/8, ::1, localhost).
func isLoopbackURL(link string) bool {
	u, err := url.Parse(link)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
