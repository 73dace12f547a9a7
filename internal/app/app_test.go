package app

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

func TestMain(m *testing.M) {
	// The servers these tests start confine their commands by re-executing this binary.
	sandbox.Main()
	goleak.VerifyTestMain(m)
}

// options are Start's options on fresh directories, with nothing of the developer's own setup.
func options(t *testing.T) Options {
	t.Helper()
	data := t.TempDir()
	env := map[string]string{"TANDEM_SERVER_PASSWORD": "app-test", "XDG_CONFIG_HOME": filepath.Join(data, "xdg"), "HOME": data}
	return Options{Hostname: "127.0.0.1", Directory: t.TempDir(), Private: true,
		Paths: Paths{Data: data, State: data, Config: data}, Env: func(k string) string { return env[k] }}
}

// A Start that fails at its last step, the listener, has built every service before it: the
// cleanup stack must undo them all, so that nothing keeps running and the data directory is free.
func TestAStartThatFailsUndoesWhatItBuilt(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	o := options(t)
	o.Private, o.Port = false, taken.Addr().(*net.TCPAddr).Port
	if m, err := Start(t.Context(), o); err == nil {
		m.Close()
		t.Fatal("Start listened on a port that is taken")
	} else if !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("Start failed with %v, want the listener's error", err)
	}
	// The MCP manager, the terminals, the notifications and the ACP handler are stopped.
	goleak.VerifyNone(t, ignore)

	// The lease is released and the database closed: a server starts on the same data directory.
	o.Private, o.Port = true, 0
	m, err := Start(t.Context(), o)
	if err != nil {
		t.Fatalf("a second Start on the data directory: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
