//go:build linux

package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTreePSSSumsEveryDescendant starts a real tree, sh → (sh → sleep, sleep), and checks that
// treePSS finds all four processes and adds up their PSS.
func TestTreePSSSumsEveryDescendant(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sh -c "sleep 60; true" & sleep 60 & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	root := cmd.Process.Pid
	var pids []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pids = descendants(root); len(pids) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("descendants of the test tree: %v, want 3 processes", pids)
		}
	}
	for _, p := range pids {
		if pp, err := parentOf(p); err != nil || (pp != root && !slices.Contains(pids, pp)) {
			t.Fatalf("descendant %d has parent %d (%v), outside the tree rooted at %d", p, pp, err, root)
		}
	}

	total, summed, err := treePSS(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]int{root}, pids...); !slices.Equal(summed, want) {
		t.Fatalf("treePSS summed %v, want %v", summed, want)
	}
	var each int64
	var rootOnly int64
	for _, p := range summed {
		pss, err := processPSS(p)
		if err != nil {
			t.Fatal(err)
		}
		if p == root {
			rootOnly = pss
		}
		each += pss
	}
	if rootOnly <= 0 || total <= rootOnly {
		t.Fatalf("tree PSS %d B, root alone %d B: the descendants added nothing", total, rootOnly)
	}
	// The values are read a moment apart and PSS shifts when other processes map the same pages:
	// the sum must agree with reading each process again within a tenth.
	if diff := total - each; diff*10 > each || -diff*10 > each {
		t.Fatalf("tree PSS %d B, the processes read one by one %d B", total, each)
	}
}

func TestTreePSSFailsForAProcessThatIsGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := treePSS(cmd.Process.Pid); err == nil {
		t.Fatal("treePSS of an exited, reaped process gave no error")
	}
}

func TestParentOfReadsPastACommandNameWithParentheses(t *testing.T) {
	// A command named ") 1 2 (" would fool a reader that splits /proc/PID/stat on spaces; the
	// kernel names a process after the file it ran, here a link to sleep.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), ") 1 2 (")
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	self := syscall.Getpid()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pp, err := parentOf(cmd.Process.Pid)
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		if err == nil && pp == self && strings.Contains(string(stat), "() 1 2 ()") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("parentOf(%d) = %d, %v; want %d", cmd.Process.Pid, pp, err, self)
		}
	}
}

func TestListeningSeesAListenerAndNotAClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if !listening(port) {
		t.Fatalf("listening(%d) = false with a listener open", port)
	}
	ln.Close()
	if listening(port) {
		t.Fatalf("listening(%d) = true after the listener closed", port)
	}
}
