//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts a local server in a process group of its own, so that stopping it also stops
// what it started (npx runs node in a child; killing npx alone would leave node behind).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills whatever is left of a local server's process group.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
