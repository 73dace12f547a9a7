package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/infra/sse"
)

// Event is one event of the stream: its name (one of api's Event… constants) and its payload,
// which Decode reads into the payload type api names beside the constant.
type Event = api.Event

// Stream reads /event. When the connection drops it reconnects with Last-Event-ID, so no event is
// lost or repeated; after a server restart the server says so with server.connected{resync:true},
// which the stream passes on like any other event.
type Stream struct {
	c      *Client
	events chan Event
	err    error
	done   chan struct{}
	lost   func(error)
}

// StreamOption tunes an event stream.
type StreamOption func(*Stream)

// OnDisconnect calls f (from the stream's goroutine) each time a connection ends and the stream
// starts to reconnect; the next server.connected event says it is back.
func OnDisconnect(f func(error)) StreamOption { return func(s *Stream) { s.lost = f } }

// Events opens the event stream; it runs until ctx ends. The first event is server.connected.
func (c *Client) Events(ctx context.Context, opts ...StreamOption) *Stream {
	s := &Stream{c: c, events: make(chan Event, 256), done: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	go s.run(ctx)
	return s
}

// Next returns the next event, or the error that ended the stream (ctx's, when it ended first).
func (s *Stream) Next(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			return Event{}, s.err
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

func (s *Stream) run(ctx context.Context) {
	defer close(s.events)
	last := ""
	failures := 0
	for {
		n, err := s.connect(ctx, &last)
		if ctx.Err() != nil {
			s.err = ctx.Err()
			return
		}
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Status < 500 {
			s.err = err // wrong credentials or route: retrying cannot help
			return
		}
		if n > 0 {
			failures = 0
		}
		if s.lost != nil {
			s.lost(err)
		}
		failures++
		if failures > 10 {
			s.err = fmt.Errorf("gave up after %d failed reconnects: %w", failures-1, err)
			return
		}
		select {
		case <-ctx.Done():
			s.err = ctx.Err()
			return
		case <-time.After(time.Duration(min(failures, 5)) * 200 * time.Millisecond):
		}
	}
}

// connect reads one connection until it ends, updating last with each frame's id; it returns how
// many events it delivered.
func (s *Stream) connect(ctx context.Context, last *string) (int, error) {
	req, err := s.c.newRequest(ctx, http.MethodGet, "/event", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	res, err := s.c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, &Error{Status: res.StatusCode, Name: http.StatusText(res.StatusCode)}
	}
	frames := sse.NewReader(res.Body)
	n := 0
	for {
		f, err := frames.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		var frame struct {
			Type       string          `json:"type"`
			Properties json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(f.Data, &frame); err == nil {
			ev := Event{ID: f.ID, Type: frame.Type, Properties: frame.Properties}
			select {
			case s.events <- ev:
			case <-ctx.Done():
				return n, ctx.Err()
			}
			n++
		}
		if f.ID != "" {
			*last = f.ID
		}
	}
}
