package terminal

import "github.com/tandem-dev/tandem/internal/base/errs"

// Viewer follows one PTY's live output. Read Output until it is closed, then Err says why.
type Viewer struct {
	s   *session
	ch  chan []byte
	err error // set under s.mu before ch is closed
	end bool
	// size is the window size this viewer reported (Resize), nil if none; sizes carries the
	// terminal's size to the viewer whenever it changes, the latest only.
	size  *Size
	sizes chan Size
}

// Replay is what a viewer missed: the output after its cursor that the scrollback still holds.
type Replay struct {
	Data []byte
	// From is the absolute offset of Data's first byte.
	From int64
	// Cursor is the offset just after Data: the position live output continues from, and what the
	// client sends back as ?cursor= to resume.
	Cursor int64
	// Truncated is true when the requested cursor was older than the scrollback: output between the
	// cursor and From is lost.
	Truncated bool
}

// FromEnd is the cursor that skips the replay (OpenCode's cursor=-1).
const FromEnd = -1

// Attach registers a viewer that receives everything produced after the replay. cursor is an absolute
// offset (0 replays the whole scrollback) or FromEnd. The replay and the registration happen under the
// PTY's lock, so output is neither missed nor repeated between them. Attaching to a PTY whose process
// has exited still returns the replay, with the viewer already ended by ErrExited.
func (m *Manager) Attach(ptyID string, cursor int64) (*Viewer, Replay, error) {
	if cursor < FromEnd {
		return nil, Replay{}, errs.E(errs.Invalid, "cursor must be -1 or more, got %d", cursor)
	}
	s, err := m.lookup(ptyID)
	if err != nil {
		return nil, Replay{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.out.total
	from := cursor
	if cursor == FromEnd || cursor > end {
		from = end
	}
	r := Replay{From: from, Cursor: end}
	if start := s.out.start(); from < start {
		r.From, r.Truncated = start, true
	}
	if r.From < end {
		data := s.out.since(r.From)
		skip := runeAligned(data)
		r.Data, r.From = data[skip:], r.From+int64(skip)
	}
	v := &Viewer{s: s, ch: make(chan []byte, m.opts.ViewerQueue), sizes: make(chan Size, 1)}
	switch {
	case s.exited:
		v.end, v.err = true, ErrExited
		close(v.ch)
	case m.isClosed():
		v.end, v.err = true, ErrShutdown
		close(v.ch)
	default:
		s.viewers[v] = struct{}{}
	}
	return v, r, nil
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Output delivers output chunks in order, each valid UTF-8 and shared read-only with other viewers;
// it is closed when the viewer ends.
func (v *Viewer) Output() <-chan []byte { return v.ch }

// Err says why Output was closed: ErrExited, ErrSlow, ErrShutdown, or nil after Close.
func (v *Viewer) Err() error {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.err
}

// Close detaches the viewer; it is safe to call more than once and after the viewer has ended.
func (v *Viewer) Close() {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	v.s.dropLocked(v, nil)
}

func (s *session) dropLocked(v *Viewer, reason error) {
	if v.end {
		return
	}
	delete(s.viewers, v)
	v.end, v.err = true, reason
	close(v.ch)
	if v.size != nil {
		// The terminal fits the viewers that remain.
		if err := s.fitLocked(); err != nil {
			s.m.log.Warn("pty: resize after a viewer left failed", "id", s.id, "err", err)
		}
	}
}

// Resize reports the window size of this viewer. The terminal takes the largest rows and the largest
// columns among the viewers that reported one, so a small viewer (a phone) never shrinks the terminal
// under a larger one (a desktop); when a viewer leaves, the terminal fits those that remain. Every
// viewer that reported a size is told the resulting one (Sizes). PUT /pty/{id} still sets the size directly, until the
// next viewer reports.
func (v *Viewer) Resize(sz Size) error {
	if err := validSize(sz); err != nil {
		return err
	}
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.end {
		return nil
	}
	v.size = &sz
	return s.fitLocked()
}

// Sizes delivers the terminal's window size after a change, the latest only: a viewer shows the
// terminal at that size even when its own window is smaller.
func (v *Viewer) Sizes() <-chan Size { return v.sizes }

// fitLocked sizes the terminal to the largest of its viewers' reported sizes.
func (s *session) fitLocked() error {
	var want Size
	for v := range s.viewers {
		if v.size != nil {
			want.Rows, want.Cols = max(want.Rows, v.size.Rows), max(want.Cols, v.size.Cols)
		}
	}
	if want.Rows == 0 || s.exited {
		return nil
	}
	if want != s.size {
		if err := s.setSize(want); err != nil {
			return err
		}
		s.size = want
	}
	// Told even when unchanged: the viewer that just reported learns the size it is shown at.
	s.tellSizeLocked()
	return nil
}

// tellSizeLocked hands the terminal's size to every viewer that reported its own (the others may not
// know the control frame), replacing a size it has not read yet.
func (s *session) tellSizeLocked() {
	for v := range s.viewers {
		if v.size == nil {
			continue
		}
		select {
		case <-v.sizes:
		default:
		}
		v.sizes <- s.size
	}
}

func (s *session) endViewersLocked(reason error) {
	for v := range s.viewers {
		s.dropLocked(v, reason)
	}
}
