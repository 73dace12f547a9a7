// Package sse reads Server-Sent Events streams (text/event-stream): the LLM providers' streamed
// answers, and tandem's own /event stream as its Go client reads it.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxEvent bounds one event, so a server that never ends a line cannot make a reader buffer
// without limit. A chunk of a streamed answer or one of tandem's events is a few hundred bytes.
const maxEvent = 16 << 20

// Event is one event of a text/event-stream body.
type Event struct {
	ID   string // the id field of this event; empty when it had none
	Type string // the event field; empty when the server sent none
	Data []byte // the data lines joined with newlines; valid until the next call to Next
}

// Reader reads a text/event-stream body as the WHATWG format defines it: data lines are joined
// with newlines and dispatched at a blank line; comments and retry are skipped; an event the body
// ends in the middle of is dropped.
type Reader struct {
	r     *bufio.Reader
	line  []byte
	data  []byte
	event string
	id    string
}

func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the next event, or io.EOF once the body has ended.
func (s *Reader) Next() (Event, error) {
	s.data, s.event, s.id = s.data[:0], "", ""
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if !hasData {
				s.event, s.id = "", ""
				continue
			}
			return Event{ID: s.id, Type: s.event, Data: bytes.TrimSuffix(s.data, []byte{'\n'})}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if len(s.data)+len(value) > maxEvent {
				return Event{}, fmt.Errorf("an event of the stream is larger than %d MiB", maxEvent>>20)
			}
			s.data = append(append(s.data, value...), '\n')
			hasData = true
		case "event":
			s.event = string(value)
		case "id":
			s.id = string(value)
		}
	}
}

// readLine returns the next line without its line ending (LF, CRLF or CR before LF).
func (s *Reader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.line = append(s.line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(s.line, []byte{'\n'}), []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(s.line) > maxEvent {
				return nil, fmt.Errorf("a line of the stream is longer than %d MiB", maxEvent>>20)
			}
		case errors.Is(err, io.EOF) && len(s.line) > 0:
			return nil, io.ErrUnexpectedEOF // the body ended in the middle of a line
		default:
			return nil, err
		}
	}
}
