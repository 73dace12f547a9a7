package pty

import "tandem/errs"

// Viewer follows one PTY's live output. Read Output until it is closed, then Err says why.
type Viewer struct {
	s   *session
	ch  chan []byte
	err error // set under s.mu before ch is closed
	end bool
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
	v := &Viewer{s: s, ch: make(chan []byte, m.opts.ViewerQueue)}
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
}

func (s *session) endViewersLocked(reason error) {
	for v := range s.viewers {
		s.dropLocked(v, reason)
	}
}
