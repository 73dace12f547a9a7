//go:build unix

package process

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestCommandsDoNotInheritTheServersDescriptors starts this test binary with a pipe left open as
// descriptor 3, as a parent shell's `exec 3>…` would, and has it run `sh -c 'echo leaked >&3'`:
// after KeepInheritedDescriptors the command cannot reach the pipe; without it, it can.
func TestCommandsDoNotInheritTheServersDescriptors(t *testing.T) {
	if os.Getenv("PROCESS_TEST_CHILD") != "" {
		if os.Getenv("PROCESS_TEST_CHILD") == "keep" {
			KeepInheritedDescriptors()
		}
		_ = exec.Command("sh", "-c", "echo leaked >&3").Run()
		os.Exit(0)
	}
	for _, tc := range []struct {
		name, mode string
		want       string
	}{
		{"a command started after the call gets only stdin, stdout and stderr", "keep", ""},
		{"without the call the command writes into the parent's descriptor", "leak", "leaked\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			child := exec.Command(os.Args[0], "-test.run=^TestCommandsDoNotInheritTheServersDescriptors$")
			child.Env = append(os.Environ(), "PROCESS_TEST_CHILD="+tc.mode)
			child.ExtraFiles = []*os.File{w} // descriptor 3 in the child, not close-on-exec
			child.WaitDelay = 5 * time.Second
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			got := make(chan []byte, 1)
			go func() { b, _ := io.ReadAll(r); got <- b }()
			if err := child.Wait(); err != nil {
				t.Fatal(err)
			}
			select {
			case b := <-got:
				if string(b) != tc.want {
					t.Fatalf("the pipe received %q, want %q", b, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the pipe stayed open 30 s after the child ended")
			}
		})
	}
}
