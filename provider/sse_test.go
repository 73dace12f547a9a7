package provider

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSSEReaderFollowsTheEventStreamFormat(t *testing.T) {
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
		{"id and retry fields are ignored", "id: 7\nretry: 100\ndata: x\n\n", []string{"|x"}, io.EOF},
		{"a field without a space after the colon is read", "data:x\n\n", []string{"|x"}, io.EOF},
		{"an event the body ends before its blank line is dropped", "data: x\n\ndata: half", []string{"|x"}, io.ErrUnexpectedEOF},
		{"an event without its blank line at the end of the body is dropped", "data: x\n\ndata: y\n", []string{"|x"}, io.EOF},
		{"a line longer than the read buffer is read whole", "data: " + strings.Repeat("z", 100<<10) + "\n\n", []string{"|" + strings.Repeat("z", 100<<10)}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSSEReader(strings.NewReader(tt.body))
			var got []string
			var err error
			for {
				var ev sseEvent
				ev, err = r.next()
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

func TestOpenAIChunkFieldsThatServersSendDifferently(t *testing.T) {
	tests := []struct {
		name, chunk        string
		reasoning, content string
		arguments          string
	}{
		{"reasoning_content as DeepSeek and vLLM send it", `{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`, "think", "", ""},
		{"reasoning as Ollama sends it", `{"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}`, "hmm", "", ""},
		{"reasoning that is not text is ignored, not fatal", `{"choices":[{"index":0,"delta":{"reasoning":{"effort":"low"},"content":"hi"}}]}`, "", "hi", ""},
		{"null content is empty", `{"choices":[{"index":0,"delta":{"content":null}}]}`, "", "", ""},
		{"content that is not text is ignored, not fatal", `{"choices":[{"index":0,"delta":{"content":[{"type":"text"}],"reasoning_content":"r"}}]}`, "r", "", ""},
		{"tool call arguments as a string fragment", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`, "", "", `{"a":`},
		{"tool call arguments as a JSON object", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read","arguments":{"a":1}}}]}}]}`, "", "", `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c openaiChunk
			if err := json.Unmarshal([]byte(tt.chunk), &c); err != nil {
				t.Fatal(err)
			}
			d := c.Choices[0].Delta
			var args string
			for _, tc := range d.ToolCalls {
				args += tc.Function.arguments()
			}
			if d.reasoning() != tt.reasoning || string(d.Content) != tt.content || args != tt.arguments {
				t.Errorf("reasoning %q content %q arguments %q, want %q %q %q", d.reasoning(), d.Content, args, tt.reasoning, tt.content, tt.arguments)
			}
		})
	}
}
