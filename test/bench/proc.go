//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// treePSS is the proportional set size, in bytes, of the process pid and all its descendants
// (tandem's __watchdog child, OpenCode's helpers): each shared page counted once across the tree,
// split among the processes that map it, which is what the server costs the machine. It returns
// the pids it summed, pid first. A descendant that exits while it is read is left out.
func treePSS(pid int) (int64, []int, error) {
	pids := append([]int{pid}, descendants(pid)...)
	var total int64
	var summed []int
	for i, p := range pids {
		pss, err := processPSS(p)
		if err != nil {
			if i == 0 {
				return 0, nil, err
			}
			continue
		}
		total += pss
		summed = append(summed, p)
	}
	return total, summed, nil
}

// processPSS is the Pss line of /proc/PID/smaps_rollup, in bytes.
func processPSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/smaps_rollup: %w", pid, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/smaps_rollup: no Pss line", pid)
}

// descendants are every process below pid, found from the parent pid field of each
// /proc/PID/stat, in breadth-first order.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, err := parentOf(p); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := children[queue[0]]
		slices.Sort(next)
		out, queue = append(out, next...), append(queue[1:], next...)
	}
	return out
}

// parentOf reads the parent pid from /proc/PID/stat: the fourth field, after the command name,
// which is in parentheses and may itself hold spaces and parentheses.
func parentOf(pid int) (int, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	end := strings.LastIndexByte(string(raw), ')')
	if end < 0 {
		return 0, errors.New("no command name in stat")
	}
	fields := strings.Fields(string(raw[end+1:]))
	if len(fields) < 2 {
		return 0, errors.New("short stat")
	}
	return strconv.Atoi(fields[1])
}

// loadAverage is the 1-minute load average, or NaN when /proc/loadavg cannot be read.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nan()
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return nan()
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return nan()
	}
	return v
}

// machine says where a run took place, for the table's heading.
type machine struct {
	CPU   string    `json:"cpu"`
	NProc int       `json:"nproc"`
	Date  time.Time `json:"date"`
}

func thisMachine(now time.Time) machine {
	m := machine{CPU: runtime.GOARCH, NProc: runtime.NumCPU(), Date: now.UTC()}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			k, v, found := strings.Cut(line, ":")
			if found && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// listening says whether a TCP socket listens on port, from /proc/net/tcp and tcp6 (state 0A is
// LISTEN); true when neither can be read, so a system without them only loses the check.
func listening(port int) bool {
	suffix := fmt.Sprintf(":%04X", port)
	readable := false
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		readable = true
		for line := range strings.SplitSeq(string(raw), "\n") {
			f := strings.Fields(line)
			if len(f) > 3 && f[3] == "0A" && strings.HasSuffix(f[1], suffix) {
				return true
			}
		}
	}
	return !readable
}

// ephemeralOverlap is the part of r inside the kernel's range of source ports for outgoing
// connections (/proc/sys/net/ipv4/ip_local_port_range), or false.
func ephemeralOverlap(r portRange) (portRange, bool) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil || r.lo == 0 {
		return portRange{}, false
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 {
		return portRange{}, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || r.hi < lo || r.lo > hi {
		return portRange{}, false
	}
	return portRange{max(r.lo, lo), min(r.hi, hi)}, true
}
