//go:build linux

package reaper

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Supported reports whether this platform has the watchdog and the sweep.
const Supported = true

// Tag names this run: the server's PID and its start time, so that a recycled PID is never taken
// for a live server.
func Tag() string {
	pid := os.Getpid()
	return fmt.Sprintf("%d.%d", pid, startTime(pid))
}

// startTime is field 22 of /proc/PID/stat (clock ticks since boot), or 0 when the process is gone.
func startTime(pid int) uint64 {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(stat[i+1:]) // field 3 (state) is f[0], so field 22 is f[19]
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return n
}

// alive reports whether the server that a tag names is still running (a zombie is not: it has
// died and only waits for its parent to notice).
func alive(tag string) bool {
	pidText, start, ok := strings.Cut(tag, ".")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil {
		return false
	}
	return strconv.FormatUint(startTime(pid), 10) == start && !zombie(pid)
}

// Watchdog guards this run: it starts exe's hidden watchdog subcommand in a session of its own with
// a pipe on its stdin, and returns the write end, which the server keeps open for its whole life.
// Closing it (or the server dying) makes the watchdog kill every process tagged tag.
func Watchdog(exe, tag string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, WatchdogCommand, tag)
	cmd.Stdin = r
	cmd.Env = envWithout(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start the watchdog: %w", err)
	}
	// The watchdog outlives us by design; its exit status is of no interest.
	if err := cmd.Process.Release(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Guard is the watchdog's body: it waits until the server's end of the pipe closes, then kills
// every process tagged tag.
func Guard(server io.Reader, tag string) int {
	if _, err := io.Copy(io.Discard, server); err != nil {
		fmt.Fprintln(os.Stderr, "tandem watchdog:", err)
	}
	return Kill(tag)
}

// Kill SIGKILLs every process tagged tag, again and again while new ones appear (a tagged process
// may fork while it is being killed), and returns how many it killed.
func Kill(tag string) int {
	killed := 0
	for range 50 {
		pids := tagged(func(t string) bool { return t == tag })
		if len(pids) == 0 {
			return killed
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return killed
}

// Sweep kills the processes left by runs whose server and watchdog are both gone, and returns how
// many it killed. Processes of live runs (other servers on this machine) are left alone.
func Sweep(own string) int {
	dead := map[string]bool{}
	killed := 0
	for _, pid := range tagged(func(t string) bool {
		if t == own {
			return false
		}
		if _, seen := dead[t]; !seen {
			dead[t] = !alive(t)
		}
		return dead[t]
	}) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}

// tagged lists the live processes (never this one) whose environment carries a tag that match accepts.
func tagged(match func(tag string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	prefix := []byte(EnvTag + "=")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, prefix) {
			continue // gone, not ours to read, or untagged
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if tag, ok := bytes.CutPrefix(kv, prefix); ok && match(string(tag)) && !zombie(pid) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}
