//go:build !unix

package terminal

import (
	"errors"
	"os"
)

// pollable is never reached where creack/pty cannot start a terminal; it refuses rather than guess.
func pollable(master *os.File) (*os.File, error) {
	_ = master.Close()
	return nil, errors.ErrUnsupported
}

// setSize cannot resize a terminal this platform cannot start.
func (s *session) setSize(Size) error { return errors.ErrUnsupported }

// readBatch is a plain read where no terminal can start.
func (s *session) readBatch(buf []byte) (int, error) { return s.tty.Read(buf) }
