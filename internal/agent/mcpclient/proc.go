package mcpclient

import (
	"os/exec"

	"github.com/tandem-dev/tandem/internal/infra/process"
)

// killProcessGroup kills whatever is left of a local server's process group. A local server runs in
// a group of its own (process.OwnGroup) because npx runs node in a child; killing npx alone would
// leave node behind.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		process.KillGroup(cmd.Process.Pid)
	}
}
