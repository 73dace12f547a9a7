//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"tandem/session"
)

// runCLI runs `tandem run` from the built binary with stdin not a terminal, in an isolated home.
func runCLI(t *testing.T, bin, home, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home, "TANDEM_SERVER_PASSWORD=")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tandem run: %v", err)
	}
	return out.String(), errb.String(), code
}

func TestRunPrintsTheAnswerOfOnePrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)

	t.Run("in-process, the answer goes to stdout and nothing else does", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "hello", "there")
		if code != 0 || out != "You said: hello there\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("--approve all runs the command; its progress is on stderr", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "--approve", "all", "run: echo from-run")
		if code != 0 || !strings.Contains(out, "from-run") || !strings.Contains(errOut, "✓ bash: echo from-run") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("without a terminal approvals are rejected and nothing runs", func(t *testing.T) {
		dir := t.TempDir()
		_, errOut, code := runCLI(t, bin, t.TempDir(), dir, nil, "run: touch made-by-run")
		if code != 0 || !strings.Contains(errOut, "rejected bash: touch made-by-run") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "made-by-run")); !os.IsNotExist(err) {
			t.Fatalf("the rejected command ran: %v", err)
		}
	})
	t.Run("piped input is part of the prompt", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		home := t.TempDir()
		cmd := exec.CommandContext(ctx, bin, "run", "review:")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
		cmd.Stdin = strings.NewReader("the piped diff\n")
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), "the piped diff") {
			t.Fatalf("%v: %q", err, out)
		}
	})
	t.Run("an unknown model is a clear error and exit status 1", func(t *testing.T) {
		_, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), nil, "--model", "nowhere/none", "hi")
		if code != 1 || !strings.Contains(errOut, "nowhere") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

func TestRunUsesTheLocalServerOrTheOneAttached(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, bin, data, project)
	sessionsOf := func() []session.Session {
		var list []session.Session
		srv.get("/session", &list)
		return list
	}

	t.Run("a running local server is used, so the session is in its list", func(t *testing.T) {
		out, errOut, code := runCLI(t, bin, data, project, nil, "via the local server")
		if code != 0 || out != "You said: via the local server\n" || !strings.Contains(errOut, "using the tandem server at "+srv.url) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if list := sessionsOf(); len(list) != 1 || list[0].Title != "via the local server" {
			t.Fatalf("the server's sessions: %+v", list)
		}
	})
	t.Run("--attach URL with the password from the environment", func(t *testing.T) {
		out, _, code := runCLI(t, bin, t.TempDir(), t.TempDir(), []string{"TANDEM_SERVER_PASSWORD=" + srv.pass}, "--attach", srv.url, "attached")
		if code != 0 || out != "You said: attached\n" || len(sessionsOf()) != 2 {
			t.Fatalf("exit %d, stdout %q, sessions %d", code, out, len(sessionsOf()))
		}
	})
	t.Run("--attach with a wrong password says so", func(t *testing.T) {
		_, errOut, code := runCLI(t, bin, t.TempDir(), t.TempDir(), []string{"TANDEM_SERVER_PASSWORD=wrong"}, "--attach", srv.url, "x")
		if code != 1 || !strings.Contains(errOut, "Unauthorized") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestRunAsksOnATerminal runs `tandem run` on a real pseudo-terminal, as a person at a shell would:
// the approval is asked there, and "y" runs the command once.
func TestRunAsksOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	home, dir := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "run: touch asked-on-the-terminal")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home, "TANDEM_SERVER_PASSWORD=", "TERM=dumb")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var screen bytes.Buffer
	buf := make([]byte, 4096)
	answered := false
	for {
		n, err := tty.Read(buf)
		screen.Write(buf[:n])
		if !answered && strings.Contains(screen.String(), "[y]es once") {
			if _, err := tty.Write([]byte("y\n")); err != nil {
				t.Fatal(err)
			}
			answered = true
		}
		if err != nil {
			break // the program ended (EIO on Linux once the terminal's other side closes)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tandem run: %v\n%s", err, screen.String())
	}
	if !answered {
		t.Fatalf("the approval was never asked:\n%s", screen.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "asked-on-the-terminal")); err != nil {
		t.Fatalf("the command allowed on the terminal did not run: %v\n%s", err, screen.String())
	}
}
