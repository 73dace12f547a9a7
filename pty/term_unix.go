//go:build unix

package pty

import (
	"os"

	"golang.org/x/sys/unix"
)

// pollable re-opens the PTY master as a non-blocking file registered with Go's poller. creack/pty
// hands back a blocking descriptor, on which a Read can neither time out nor be interrupted by Close;
// with the poller, closing the terminal always ends its reader.
func pollable(master *os.File) (*os.File, error) {
	defer master.Close()
	rc, err := master.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup int
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		_ = unix.Close(dup)
		return nil, err
	}
	return os.NewFile(uintptr(dup), "/dev/ptmx"), nil
}

// setSize is creack/pty's Setsize done through the poller's descriptor: (*os.File).Fd, which
// Setsize calls, would switch the terminal back to blocking mode.
func (s *session) setSize(sz Size) error {
	rc, err := s.tty.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(sz.Rows), Col: uint16(sz.Cols)})
	}); err != nil {
		return err
	}
	return ioErr
}
