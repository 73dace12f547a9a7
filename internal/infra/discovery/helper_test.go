package discovery

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// The namespace tests run the advertiser, the browser and a raw mDNS
// listener as real processes: this test binary started again inside a
// network namespace, with roleEnv naming what it should be.
const (
	roleEnv    = "TANDEM_DISCOVERY_TEST_ROLE"
	hostEnv    = "TANDEM_DISCOVERY_TEST_HOST"
	domainEnv  = "TANDEM_DISCOVERY_TEST_DOMAIN"
	ifaceEnv   = "TANDEM_DISCOVERY_TEST_IFACE"
	timeoutEnv = "TANDEM_DISCOVERY_TEST_TIMEOUT"
)

// runRole runs the helper process named by role and returns its exit code.
func runRole(role string) int {
	var err error
	switch role {
	case "advertise":
		err = advertiseRole(os.Stdin, os.Stdout, os.Stderr)
	case "browse":
		err = browseRole(os.Stdout)
	case "listen":
		err = listenRole(os.Stdout)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

// advertiseRole is a stand-in for `tandem serve --mdns`: it listens on
// host:0, advertises that port, greets every TCP client with its instance
// name, and obeys commands on stdin ("ping", "stop") until stdin closes.
func advertiseRole(stdin io.Reader, stdout, stderr io.Writer) error {
	host := os.Getenv(hostEnv)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return err
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(conn, "%s%d\n", InstancePrefix, port)
			conn.Close()
		}
	}()

	iface, err := ifaceFromEnv()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	stop, err := Advertise(context.Background(), Options{
		Host: host, Port: port, Domain: os.Getenv(domainEnv), Logger: logger, Iface: iface,
	})
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(stdout, "ready %d\n", port)

	commands := bufio.NewScanner(stdin)
	for commands.Scan() {
		switch commands.Text() {
		case "ping":
			fmt.Fprintln(stdout, "pong")
		case "stop":
			stop()
			fmt.Fprintln(stdout, "stopped")
		}
	}
	return commands.Err()
}

// browseResult is one found server and what its TCP port said, proving the
// announced address and port reach the advertiser.
type browseResult struct {
	Server   Server `json:"server"`
	Greeting string `json:"greeting"`
}

func browseRole(stdout io.Writer) error {
	timeout, err := time.ParseDuration(os.Getenv(timeoutEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", timeoutEnv, err)
	}
	iface, err := ifaceFromEnv()
	if err != nil {
		return err
	}
	servers, err := Browse(context.Background(), timeout, iface)
	if err != nil {
		return err
	}
	results := []browseResult{}
	for _, s := range servers {
		r := browseResult{Server: s}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(s.Addr.String(), strconv.Itoa(s.Port)), 5*time.Second)
		if err != nil {
			r.Greeting = "dial error: " + err.Error()
		} else {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			r.Greeting = strings.TrimSpace(line)
			conn.Close()
		}
		results = append(results, r)
	}
	return json.NewEncoder(stdout).Encode(results)
}

// listenRole prints every unsolicited tandem PTR record multicast on the
// LAN as "PTR <instance> <ttl>", so tests can see announcements (TTL > 0)
// and goodbyes (TTL 0). Queries and unicast answers never reach it.
func listenRole(stdout io.Writer) error {
	iface, err := ifaceFromEnv()
	if err != nil {
		return err
	}
	conn, err := net.ListenMulticastUDP("udp4", iface, &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353})
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintln(stdout, "listening")
	buf := make([]byte, 65536)
	for {
		n, _, err := conn.ReadFromUDP(buf)
		if err != nil {
			return err
		}
		var msg dns.Msg
		if msg.Unpack(buf[:n]) != nil || !msg.Response {
			continue
		}
		for _, rr := range msg.Answer {
			if ptr, ok := rr.(*dns.PTR); ok && strings.HasPrefix(ptr.Ptr, InstancePrefix) {
				instance, _, _ := strings.Cut(ptr.Ptr, ".")
				fmt.Fprintf(stdout, "PTR %s %d\n", instance, ptr.Hdr.Ttl)
			}
		}
	}
}

func ifaceFromEnv() (*net.Interface, error) {
	name := os.Getenv(ifaceEnv)
	if name == "" {
		return nil, nil
	}
	return net.InterfaceByName(name)
}
