// Package integration holds the tests that drive tandem as its users do: a real server (started
// in-process through internal/app, as `tandem serve` starts it, or as the real binary), real
// SQLite files, real processes, real clients over HTTP, SSE, stdio and terminals.
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// builtBinary is the real tandem binary, built once for the whole test run (TestMain removes it).
func builtBinary(t testing.TB) string {
	t.Helper()
	bin, err := sharedBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// binaryDir holds the binary that sharedBinary builds; TestMain removes it.
var binaryDir = filepath.Join(os.TempDir(), fmt.Sprintf("tandem-test-bin-%d", os.Getpid()))

// sharedBinary builds cmd/tandem the first time a test needs it, so that a run of tests that need
// none builds nothing.
var sharedBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binaryDir, "tandem")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/tandem-dev/tandem/cmd/tandem").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	// This test binary is the sandbox helper of the servers the tests start in this process: a
	// command the agent runs re-executes it, and it must confine itself before anything else runs.
	sandbox.Main()
	code := m.Run()
	os.RemoveAll(binaryDir)
	os.Exit(code)
}
