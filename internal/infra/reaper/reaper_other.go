//go:build !linux

package reaper

import (
	"io"
	"os"
	"strconv"
)

// Supported reports whether this platform has the watchdog and the sweep: not without /proc.
const Supported = false

// Tag names this run by its PID.
func Tag() string { return strconv.Itoa(os.Getpid()) }

// Watchdog is unavailable here; the server still kills its commands' process groups on abort,
// timeout and clean shutdown.
func Watchdog(exe, tag string) (*os.File, error) { return nil, nil }

// Guard drains the pipe and kills nothing: there is no portable way to find tagged processes.
func Guard(server io.Reader, tag string) int {
	_, _ = io.Copy(io.Discard, server)
	return 0
}

// Kill finds no processes without /proc.
func Kill(tag string) int { return 0 }

// Sweep finds no processes without /proc.
func Sweep(own string) int { return 0 }
