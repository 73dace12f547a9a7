package sse

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReaderFollowsTheEventStreamFormat(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []string // "type|data"
		wantErr error    // after the events
	}{
		{"one data line per event", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`|{"a":1}`, "|[DONE]"}, io.EOF},
		{"CRLF line endings are read as LF", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"|x", "|y"}, io.EOF},
		{"data lines of one event are joined with newlines", "data: a\ndata: b\n\n", []string{"|a\nb"}, io.EOF},
		{"comments and keep-alives are skipped", ": OPENROUTER PROCESSING\n\n:\ndata: x\n\n", []string{"|x"}, io.EOF},
		{"the event type is kept", "event: message_start\ndata: {}\n\n", []string{"message_start|{}"}, io.EOF},
		{"id and retry fields do not change the data", "id: 7\nretry: 100\ndata: x\n\n", []string{"|x"}, io.EOF},
		{"a field without a space after the colon is read", "data:x\n\n", []string{"|x"}, io.EOF},
		{"an event the body ends before its blank line is dropped", "data: x\n\ndata: half", []string{"|x"}, io.ErrUnexpectedEOF},
		{"an event without its blank line at the end of the body is dropped", "data: x\n\ndata: y\n", []string{"|x"}, io.EOF},
		{"a line longer than the read buffer is read whole", "data: " + strings.Repeat("z", 100<<10) + "\n\n", []string{"|" + strings.Repeat("z", 100<<10)}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.body))
			var got []string
			var err error
			for {
				var ev Event
				ev, err = r.Next()
				if err != nil {
					break
				}
				got = append(got, ev.Type+"|"+string(ev.Data))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestAnEventKeepsItsOwnID(t *testing.T) {
	r := NewReader(strings.NewReader("id: evt_1\ndata: a\n\ndata: b\n\nid: evt_3\ndata: c\n\n"))
	var got []string
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		got = append(got, ev.ID+"|"+string(ev.Data))
	}
	if diff := cmp.Diff([]string{"evt_1|a", "|b", "evt_3|c"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
