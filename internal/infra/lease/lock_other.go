//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris || windows)

package lease

import (
	"errors"
	"os"
)

// lock has no OS lock to use on this platform, so the lease is the exclusive creation of a second
// file (tandem.lock.held), removed on release. A crash leaves that file behind, and it must be
// removed by hand before the next start.
func lock(f *os.File) error {
	g, err := os.OpenFile(f.Name()+".held", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return errHeld
	}
	if err != nil {
		return err
	}
	return g.Close()
}

// unlock removes what lock created.
func unlock(f *os.File) error { return os.Remove(f.Name() + ".held") }
