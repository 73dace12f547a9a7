//go:build unix

package process

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// OwnGroup makes cmd start as the leader of a process group of its own.
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// TerminateGroup asks every process of the group to stop (SIGTERM).
func TerminateGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGTERM) }

// KillGroup kills every process of the group (SIGKILL).
func KillGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// GroupRunning reports whether any process of the group is alive and not a zombie. Signal 0 cannot
// tell zombies apart, so where /proc exists the group's members are looked up there; zombies count
// as gone because where no init reaps orphans they never disappear.
func GroupRunning(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	members, ok := live(func(s stat) bool { return s.pgrp == pgid })
	return !ok || len(members) > 0
}

// KillSession SIGKILLs every process of the session sid leads. Killing the process group alone is
// not enough: an interactive shell with job control puts each pipeline in a process group of its
// own, and those would survive the shell. Where /proc is unavailable only the leader's process group
// is killed.
//
// It loops because a member may fork while it is being killed; it gives up after a bounded number
// of rounds (a process that keeps forking faster than SIGKILL lands is not a realistic case).
func KillSession(sid int) {
	_ = syscall.Kill(-sid, syscall.SIGKILL)
	for range 50 {
		members, ok := SessionMembers(sid)
		if !ok || len(members) == 0 {
			return
		}
		for _, pid := range members {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// SessionMembers lists the live (not zombie) processes whose session ID is sid. ok is false when
// /proc cannot be read.
func SessionMembers(sid int) (pids []int, ok bool) {
	return live(func(s stat) bool { return s.sid == sid })
}

// Alive reports whether pid is a live process; a zombie awaiting its reaper counts as dead. Without
// /proc it falls back to signal 0, which cannot tell zombies apart.
func Alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if _, dirErr := os.Stat("/proc/self"); dirErr != nil {
			return syscall.Kill(pid, 0) == nil
		}
		return false
	}
	_, live := parseStat(raw)
	return live
}

// stat is what tandem reads of /proc/PID/stat.
type stat struct {
	pgrp, sid int
}

// live lists the live processes for which match holds. ok is false when /proc cannot be read.
func live(match func(stat) bool) (pids []int, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if s, live := parseStat(raw); live && match(s) {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// parseStat reads the state, process group and session fields of /proc/PID/stat. The command name
// in parentheses may itself contain spaces and parentheses, so fields are counted from the last ')'.
// live is false for a zombie or a dead process, or when the line cannot be parsed.
func parseStat(raw []byte) (s stat, live bool) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return stat{}, false
	}
	f := bytes.Fields(raw[i+1:]) // state ppid pgrp session ...
	if len(f) < 4 {
		return stat{}, false
	}
	if string(f[0]) == "Z" || string(f[0]) == "X" {
		return stat{}, false
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	sid, err2 := strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil {
		return stat{}, false
	}
	return stat{pgrp: pgrp, sid: sid}, true
}

// KeepInheritedDescriptors marks every descriptor above stderr that this process inherited
// close-on-exec. Go opens its own descriptors close-on-exec, but not those its parent left open
// (a shell's `exec 5>file`, a supervisor's pipes): every command the agent runs would inherit
// them, and `echo hi >&5`, which the judge reads as writing no file, would write into them.
// Called once at start, before any command runs.
func KeepInheritedDescriptors() {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		// No /proc (macOS, BSDs): the inherited descriptors are the low ones.
		for fd := 3; fd < 256; fd++ {
			syscall.CloseOnExec(fd)
		}
		return
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
