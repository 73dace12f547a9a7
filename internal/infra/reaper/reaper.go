// Package reaper makes sure that nothing the server started outlives it. Every process the server
// starts (bash commands, PTY shells, stdio MCP servers, and whatever they start in turn, including
// children that call setsid or ignore SIGHUP) inherits one environment variable naming the server's
// run. A small watchdog process — the tandem binary itself, in its own session, reading a pipe from
// the server — kills every process carrying that tag when the pipe closes, which the kernel does
// when the server exits for any reason, SIGKILL included. At start, a server also sweeps processes
// tagged by runs whose server is gone (their watchdog was killed too).
//
// The watchdog and the sweep read /proc, so they work on Linux. On other systems the tag is still
// set and commands still run in their own process group, which the server kills on abort, timeout
// and clean shutdown; a server that is SIGKILLed there can leave its running commands behind.
package reaper

import (
	"os"
	"strings"
)

// EnvTag is the environment variable that tags every process of a server run.
const EnvTag = "TANDEM_RUN"

// WatchdogCommand is the hidden subcommand that runs the watchdog.
const WatchdogCommand = "__watchdog"

// envWithout returns env without the tag, for the watchdog itself (which must never match).
func envWithout(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvTag+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Tagged is the process environment with this run's tag, for the server to adopt before it starts
// any child.
func Tagged(tag string) error { return os.Setenv(EnvTag, tag) }
