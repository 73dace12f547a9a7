//go:build windows

package lease

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lock takes an exclusive lock without waiting. The locked byte lies far past the owner record, so
// the record stays readable (Windows locks are mandatory); closing the handle drops the lock.
func lock(f *os.File) error {
	ol := &windows.Overlapped{OffsetHigh: 0x7fffffff}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errHeld
	}
	return err
}

// unlock has nothing to do: closing the handle drops the lock.
func unlock(*os.File) error { return nil }
