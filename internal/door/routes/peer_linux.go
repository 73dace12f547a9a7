//go:build linux

package routes

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
)

// peerIsOwner reports whether the loopback TCP connection from client to local was opened by a
// process of the user this server runs as. It looks the client's socket up in the kernel's socket
// tables (/proc/net/tcp and tcp6: the line whose local address is the client's and remote address
// is ours) and compares its owner. Any doubt (not loopback, no /proc, no such line) is false.
func peerIsOwner(client, local net.Addr) bool {
	c, ok1 := client.(*net.TCPAddr)
	l, ok2 := local.(*net.TCPAddr)
	if !ok1 || !ok2 || !c.IP.IsLoopback() {
		return false
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if uid, found := socketOwner(table, c, l); found {
			return uid == os.Getuid()
		}
	}
	return false
}

// socketOwner finds the socket from c to l in one of the kernel's tables and returns its uid.
func socketOwner(table string, c, l *net.TCPAddr) (int, bool) {
	f, err := os.Open(table)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !sameAddr(fields[1], c) || !sameAddr(fields[2], l) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		return uid, err == nil
	}
	return 0, false
}

// sameAddr compares the kernel's "ADDR:PORT" (the address as native-endian 32-bit words in hex, the
// port in hex) with a.
func sameAddr(field string, a *net.TCPAddr) bool {
	hexIP, hexPort, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(hexIP)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}
