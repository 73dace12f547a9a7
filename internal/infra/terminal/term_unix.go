//go:build unix

package terminal

import (
	"io"
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

// readBatch fills buf with what the terminal has ready: it waits (through the poller) only for the
// first bytes, then keeps reading without waiting until buf is full or nothing more is ready. The
// kernel hands out at most a few KiB per read(2), so one batch saves a scrollback write, a lock and a
// wakeup of every viewer per extra read, and viewers get fewer, larger chunks.
func (s *session) readBatch(buf []byte) (int, error) {
	rc, err := s.tty.SyscallConn()
	if err != nil {
		return 0, err
	}
	n := 0
	var readErr error
	err = rc.Read(func(fd uintptr) bool {
		for n < len(buf) {
			m, err := unix.Read(int(fd), buf[n:])
			switch {
			case m > 0:
				n += m
			case err == unix.EINTR:
			case err == unix.EAGAIN:
				return n > 0 // nothing more ready: deliver what there is, or wait for some
			case err == nil:
				readErr = io.EOF
				return true
			default:
				readErr = err
				return true
			}
		}
		return true
	})
	if err != nil {
		// The poller fails a read only when the terminal is closed (reads have no deadline).
		return n, os.ErrClosed
	}
	return n, readErr
}
