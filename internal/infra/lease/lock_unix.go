//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package lease

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive flock on f without waiting. A flock belongs to the open file, so two
// opens in one process exclude each other as two processes do, and it ends when the file is closed.
func lock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errHeld
		}
		return err
	}
}

// unlock has nothing to do: closing the file drops the lock.
func unlock(*os.File) error { return nil }
