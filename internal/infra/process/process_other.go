//go:build !unix

package process

import (
	"os"
	"os/exec"
)

// OwnGroup does nothing where there are no Unix process groups; only the leader can be stopped.
func OwnGroup(*exec.Cmd) {}

// TerminateGroup stops the leader; without process groups there is no gentler signal to send.
func TerminateGroup(pgid int) { KillGroup(pgid) }

// KillGroup kills the leader, the only member tandem can name without process groups.
func KillGroup(pgid int) {
	if p, err := os.FindProcess(pgid); err == nil {
		_ = p.Kill()
		_ = p.Release()
	}
}

// GroupRunning reports whether the leader can still be found.
func GroupRunning(pgid int) bool { return Alive(pgid) }

// KillSession kills the leader.
func KillSession(sid int) { KillGroup(sid) }

// SessionMembers cannot list a session's members here; ok is false.
func SessionMembers(int) (pids []int, ok bool) { return nil, false }

// Alive reports whether a process with this ID can still be opened.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// KeepInheritedDescriptors has nothing to do where commands do not inherit descriptors by number.
func KeepInheritedDescriptors() {}
