package pty

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// killSession SIGKILLs every process of the session that the PTY's first process leads. Killing the
// process group alone is not enough: an interactive shell with job control puts each pipeline in a
// process group of its own, and those would survive the shell. The session is the unit a terminal
// owns. Where /proc is unavailable only the leader's process group is killed.
//
// It loops because a member may fork while it is being killed; it gives up after a bounded number
// of rounds (a process that keeps forking faster than SIGKILL lands is not a realistic case).
func killSession(sid int) {
	_ = syscall.Kill(-sid, syscall.SIGKILL)
	for range 50 {
		members, ok := sessionMembers(sid)
		if !ok || len(members) == 0 {
			return
		}
		for _, pid := range members {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sessionMembers lists the live (not zombie) processes whose session ID is sid. ok is false when
// /proc cannot be read.
func sessionMembers(sid int) (pids []int, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if s, live := statSession(stat); live && s == sid {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// statSession reads the state and session fields of /proc/PID/stat. The command name in parentheses
// may itself contain spaces and parentheses, so fields are counted from the last ')'.
func statSession(stat []byte) (sid int, live bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:]) // state ppid pgrp session ...
	if len(f) < 4 {
		return 0, false
	}
	if string(f[0]) == "Z" || string(f[0]) == "X" {
		return 0, false
	}
	sid, err := strconv.Atoi(string(f[3]))
	return sid, err == nil
}
