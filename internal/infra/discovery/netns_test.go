package discovery

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// waitLimit bounds every wait for a helper's output; it only turns a hang
// into a failure and is never asserted on.
const waitLimit = 20 * time.Second

var netnsSeq atomic.Int64 // unique namespace names across parallel tests

// newNetns creates a network namespace that is deleted when the test ends
// (which also removes every interface inside it). It skips the test only
// when the kernel or the privileges refuse to create namespaces.
func newNetns(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("the namespace tests need the ip command (apt-get install iproute2): %v", err)
	}
	name := fmt.Sprintf("tandem-mdns-%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("network namespaces refused (needs root or CAP_SYS_ADMIN): ip netns add: %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// run runs a setup command and fails the test with its output if it fails.
func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// lan joins two fresh namespaces with a veth pair on 10.231.0.0/24 and
// fd00:231::/64, each side up with a default route through the pair (which
// is also the multicast route), as two hosts on one LAN switch. It returns
// the namespaces and the server side's IPv4 and IPv6 addresses.
func lan(t *testing.T) (server, client, serverV4, serverV6 string) {
	t.Helper()
	server, client = newNetns(t), newNetns(t)
	run(t, "ip", "link", "add", "lan0", "netns", server, "type", "veth", "peer", "name", "lan0", "netns", client)
	for ns, host := range map[string]string{server: "1", client: "2"} {
		run(t, "ip", "-n", ns, "addr", "add", "10.231.0."+host+"/24", "dev", "lan0")
		run(t, "ip", "-n", ns, "addr", "add", "fd00:231::"+host+"/64", "dev", "lan0", "nodad")
		run(t, "ip", "-n", ns, "link", "set", "lan0", "up")
		run(t, "ip", "-n", ns, "route", "add", "default", "dev", "lan0")
	}
	return server, client, "10.231.0.1", "fd00:231::1"
}

// helper is a running helper process and its stdout, line by line.
type helper struct {
	cmd    *exec.Cmd
	stdin  interface{ Write([]byte) (int, error) }
	lines  chan string
	stderr *syncBuffer
}

// syncBuffer collects a helper's stderr while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startHelper runs this test binary as role inside namespace ns; it is
// killed and reaped when the test ends, before the namespace is deleted.
func startHelper(t *testing.T, ns, role string, env ...string) *helper {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, roleEnv+"="+role)...)
	h := &helper{cmd: cmd, lines: make(chan string, 64), stderr: &syncBuffer{}}
	cmd.Stderr = h.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s helper: %v", role, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(h.lines)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			h.lines <- scanner.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		testenv.Recv(t, done, "the helper's output closing")
		_ = cmd.Wait()
	})
	return h
}

// expect waits for a stdout line matching want and returns it; lines before
// it are skipped.
func (h *helper) expect(t *testing.T, what string, want func(string) bool) string {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				t.Fatalf("helper exited while waiting for %s; stderr:\n%s", what, h.stderr)
			}
			if want(line) {
				return line
			}
		case <-timeout:
			t.Fatalf("no %s from helper after %v; stderr:\n%s", what, waitLimit, h.stderr)
		}
	}
}

func (h *helper) send(t *testing.T, command string) {
	t.Helper()
	if _, err := h.stdin.Write([]byte(command + "\n")); err != nil {
		t.Fatalf("send %q to helper: %v; stderr:\n%s", command, err, h.stderr)
	}
}

// startAdvertiser runs the advertise role bound to host and returns it with
// the port it listens on.
func startAdvertiser(t *testing.T, ns, host string, env ...string) (*helper, int) {
	t.Helper()
	h := startHelper(t, ns, "advertise", append(env, hostEnv+"="+host)...)
	line := h.expect(t, "ready line", func(l string) bool { return strings.HasPrefix(l, "ready ") })
	port, err := strconv.Atoi(strings.TrimPrefix(line, "ready "))
	if err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	return h, port
}

// browse runs one Browse in namespace ns as its own process.
func browse(t *testing.T, ns string) []browseResult {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=browse", timeoutEnv+"=1500ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browse in %s: %v; stderr:\n%s", ns, err, stderr.String())
	}
	var results []browseResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("browse output %q: %v", out, err)
	}
	return results
}

// browseUntil browses until the results satisfy done, allowing a few query
// windows for answers lost on the wire, and returns the satisfying result.
func browseUntil(t *testing.T, ns, what string, done func([]browseResult) bool) []browseResult {
	t.Helper()
	var results []browseResult
	for range 5 {
		if results = browse(t, ns); done(results) {
			return results
		}
	}
	t.Fatalf("after 5 browses, still not %s; last result: %+v", what, results)
	return nil
}

func hasInstance(results []browseResult, instance string) bool {
	for _, r := range results {
		if r.Server.Name == instance {
			return true
		}
	}
	return false
}

func find(t *testing.T, results []browseResult, instance string) browseResult {
	t.Helper()
	for _, r := range results {
		if r.Server.Name == instance {
			return r
		}
	}
	t.Fatalf("%s not among %+v", instance, results)
	return browseResult{}
}
