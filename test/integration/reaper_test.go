//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// liveServer is a tandem serve process started from the built binary.
type liveServer struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	pass string
}

func startBinary(t *testing.T, bin, data, project string) *liveServer {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--port", "0", "--data-dir", data, "--dir", project, "--print-logs")
	cmd.Env = append(os.Environ(), "TANDEM_SERVER_PASSWORD=crash-test", "XDG_STATE_HOME="+data, "XDG_CONFIG_HOME="+data, "HOME="+data)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A graceful stop lets the server wait for its own children (snapshot git processes write into
	// data): a SIGKILL would orphan them, and t.TempDir's removal would race their writes.
	t.Cleanup(func() {
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		terminate(cmd.Process, exited)
	})
	return &liveServer{t: t, cmd: cmd, url: awaitURL(t, stdout, nil), pass: "crash-test"}
}

func (s *liveServer) post(path string, body any, out any) {
	s.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(s.t.Context(), http.MethodPost, s.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("tandem", s.pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		s.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatal(err)
		}
	}
}

// runSleeps starts a turn that runs two sleeps, one of them in a session of its own (setsid),
// approves the command once, and returns once both are running.
func (s *liveServer) runSleeps() []int {
	s.t.Helper()
	var sess struct {
		ID string `json:"id"`
	}
	s.post("/session", map[string]any{}, &sess)
	s.post("/session/"+sess.ID+"/prompt_async", map[string]any{"parts": []map[string]string{{"type": "text", "text": "run: setsid sleep 31 & sleep 30"}}}, nil)
	tag := "TANDEM_RUN=" + strconv.Itoa(s.cmd.Process.Pid) + "."
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if pids := processes(tag, "sleep"); len(pids) == 2 {
			return pids
		}
		// A session's own rules cannot allow a command the user's rules ask for: a person approves it.
		var waiting []struct {
			ID        string `json:"id"`
			SessionID string `json:"sessionID"`
		}
		s.get("/permission", &waiting)
		for _, w := range waiting {
			if w.SessionID == sess.ID {
				s.post("/permission/"+w.ID+"/reply", map[string]string{"reply": "once"}, nil)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("the two sleeps of the turn did not start within 20s (found %v)", processes(tag, "sleep"))
	return nil
}

// processes lists live processes named name whose environment contains envPrefix.
func processes(envPrefix, name string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue
		}
		if strings.TrimSpace(string(comm)) == name && bytes.Contains(env, []byte(envPrefix)) {
			out = append(out, pid)
		}
	}
	return out
}

func killAll(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func awaitGone(t *testing.T, what string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var left []int
		for _, pid := range pids {
			if alivePid(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: orphans still running: %v", what, pids)
}

func alivePid(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

func TestNoCommandOutlivesAKilledServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()

	t.Run("SIGKILL of the server kills its running commands, setsid children and PTY children ignoring SIGHUP included", func(t *testing.T) {
		srv := startBinary(t, bin, data, project)
		sleeps := srv.runSleeps()
		t.Cleanup(func() { killAll(sleeps) })
		// A terminal whose process ignores SIGHUP (the disposition survives exec) would outlive
		// its closed PTY.
		srv.post("/pty", map[string]any{"command": "sh", "args": []string{"-c", "trap '' HUP; exec sleep 33"}}, nil)
		tag := "TANDEM_RUN=" + strconv.Itoa(srv.cmd.Process.Pid) + "."
		for deadline := time.Now().Add(20 * time.Second); len(sleeps) < 3; {
			if time.Now().After(deadline) {
				t.Fatalf("the PTY's sleep did not start within 20s (found %v)", processes(tag, "sleep"))
			}
			sleeps = processes(tag, "sleep")
			time.Sleep(20 * time.Millisecond)
		}

		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}

		awaitGone(t, "after SIGKILL", sleeps)
	})

	t.Run("a restart sweeps what a run whose watchdog died too left behind", func(t *testing.T) {
		// Any tandem server starting on this machine sweeps dead runs, so another test's server
		// (go test runs packages in parallel) may sweep first; then the scenario is set up again.
		var sleeps []int
		for attempt := 1; ; attempt++ {
			srv := startBinary(t, bin, data, project)
			sleeps = srv.runSleeps()
			t.Cleanup(func() { killAll(sleeps) })
			tag := "TANDEM_RUN=" + strconv.Itoa(srv.cmd.Process.Pid) + "."
			var ours []int
			for _, pid := range processes("", "tandem") {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if bytes.Contains(cmdline, []byte("__watchdog\x00"+strings.TrimPrefix(tag, "TANDEM_RUN="))) {
					ours = append(ours, pid)
				}
			}
			if len(ours) != 1 {
				t.Fatalf("found %d watchdogs of the run, want 1", len(ours))
			}
			killAll(ours)
			awaitGone(t, "the watchdog", ours)
			if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			left := processes(tag, "sleep")
			if len(left) == 2 {
				break
			}
			if attempt == 3 {
				t.Fatalf("with no watchdog the sleeps should still run (the case the sweep exists for), found %v three times", left)
			}
			t.Logf("attempt %d: the dead run's sleeps were already gone (%v): another server swept them; again", attempt, left)
		}

		startBinary(t, bin, data, project)

		awaitGone(t, "after the restart's sweep", sleeps)
	})
}
