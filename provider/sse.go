package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// maxSSEEvent bounds one event of a provider's stream, so a server that never ends a line cannot
// make tandem buffer without limit. A chunk of a streamed answer is a few hundred bytes.
const maxSSEEvent = 16 << 20

// sseEvent is one event of a text/event-stream body.
type sseEvent struct {
	Type string // the event field; empty when the server sent none
	Data []byte // the data lines joined with newlines; valid until the next call to next
}

// sseReader reads a text/event-stream body as the WHATWG format defines it: data lines are
// joined with newlines and dispatched at a blank line; comments, id and retry are skipped; an
// event the body ends in the middle of is dropped.
type sseReader struct {
	r     *bufio.Reader
	line  []byte
	data  []byte
	event string
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10)}
}

// next returns the next event, or io.EOF once the body has ended.
func (s *sseReader) next() (sseEvent, error) {
	s.data, s.event = s.data[:0], ""
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if !hasData {
				s.event = ""
				continue
			}
			return sseEvent{Type: s.event, Data: bytes.TrimSuffix(s.data, []byte{'\n'})}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if len(s.data)+len(value) > maxSSEEvent {
				return sseEvent{}, fmt.Errorf("an event of the stream is larger than %d MiB", maxSSEEvent>>20)
			}
			s.data = append(append(s.data, value...), '\n')
			hasData = true
		case "event":
			s.event = string(value)
		}
	}
}

// readLine returns the next line without its line ending (LF, CRLF or CR before LF).
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.line = append(s.line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(s.line, []byte{'\n'}), []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(s.line) > maxSSEEvent {
				return nil, fmt.Errorf("a line of the stream is longer than %d MiB", maxSSEEvent>>20)
			}
		case errors.Is(err, io.EOF) && len(s.line) > 0:
			return nil, io.ErrUnexpectedEOF // the body ended in the middle of a line
		default:
			return nil, err
		}
	}
}

// statusFailure is a provider's refusal: a response other than 2xx, or an error event inside a
// stream that had started (status 200).
type statusFailure struct {
	apiFailure
}

func (e *statusFailure) Error() string {
	msg := e.message
	if msg == "" {
		msg = strings.TrimSpace(e.body)
	}
	if e.status == http.StatusOK {
		return "error event in the stream: " + msg
	}
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), msg)
}

// failureOf reads a statusFailure out of err; failure's classification starts from it.
func failureOf(err error) (apiFailure, bool) {
	var f *statusFailure
	if errors.As(err, &f) {
		return f.apiFailure, true
	}
	return apiFailure{}, false
}

func newStatusFailure(status int, header http.Header, body []byte) *statusFailure {
	f := apiFailure{status: status, header: header, body: string(body)}
	f.errType, f.message = parseFailureBody(f.body)
	return &statusFailure{f}
}

// refused builds the failure of a response other than 2xx from its status, headers and the start
// of its body.
func refused(resp *http.Response) *statusFailure {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return newStatusFailure(resp.StatusCode, resp.Header, b)
}

// streamFailure is an error event inside a stream that had started fine.
func streamFailure(data []byte) *statusFailure {
	return newStatusFailure(http.StatusOK, nil, data)
}

// unreadable is the failure of an event whose data is not the JSON the API defines: the server's
// fault, and another attempt may go better.
func unreadable(providerID string, err error) *Error {
	return &Error{Kind: ErrServer, Provider: providerID, Message: fmt.Sprintf("the provider streamed an event that is not JSON: %v", err), Err: err}
}

// postStream POSTs a JSON body that asks for a streamed answer and returns the response when it is
// 2xx; the caller closes its body. Any other status is returned as a *statusFailure.
func postStream(ctx context.Context, hc *http.Client, url string, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, refused(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// A server (or a proxy before it) that ignored "stream": one document, often an error.
		defer resp.Body.Close()
		f := refused(resp)
		if f.message == "" {
			f.message = "the provider answered with one JSON document instead of a stream of events: does it support streaming (\"stream\": true)?"
		}
		return nil, f
	}
	return resp, nil
}
