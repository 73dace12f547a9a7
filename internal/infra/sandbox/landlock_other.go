//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
)

// kernelABI is 0: Landlock is Linux's.
func kernelABI() int { return 0 }

func unsupported() string {
	if runtime.GOOS == "darwin" {
		return "macOS sandbox-exec is not yet enforced by tandem"
	}
	return "tandem has no kernel sandbox on " + runtime.GOOS
}

func self() (string, error) { return os.Executable() }

func (spec) exec([]string) error { return errors.New(unsupported()) }

func (spec) start(*exec.Cmd) error { return errors.New(unsupported()) }

// canWrite is true: nothing is confined here, and Refused is never asked.
func canWrite(string) bool { return true }
