package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// cachedHistory is a conversation as a session grows it: prompts, answers, tool calls and
// their results, an aborted (empty) answer and a user message with an image.
func cachedHistory(n int) []Message {
	var h []Message
	for i := range n {
		h = append(h, Message{Role: RoleUser, Text: fmt.Sprintf("prompt %d: \"quote\" \u2028 and \x01", i)})
		switch i % 4 {
		case 1:
			call := fmt.Sprintf("call_%d", i)
			h = append(h,
				Message{Role: RoleAssistant, Text: "let me look", ToolCalls: []ToolCall{{ID: call, Name: "read", Input: json.RawMessage(`{"path":"a.go"}`)}}},
				Message{Role: RoleTool, ToolCallID: call, ToolName: "read", Text: "package a\n"},
				Message{Role: RoleAssistant, Text: fmt.Sprintf("answer %d", i)})
		case 2:
			h = append(h, Message{Role: RoleAssistant}) // aborted: left out of the body
		case 3:
			h[len(h)-1].Attachments = []Attachment{{Mime: "image/png", Filename: "a.png", Data: []byte{0x89, 'P', 'N', 'G', byte(i)}}}
			h = append(h, Message{Role: RoleAssistant, Text: "a picture", Reasoning: []Reasoning{{Text: "hm", Signature: "sig"}}})
		default:
			h = append(h, Message{Role: RoleAssistant, Text: fmt.Sprintf("answer %d", i)})
		}
	}
	return h
}

// TestEncodeCacheSendsTheBodyAnUncachedEncodingSends runs one conversation through the changes a
// session's history goes through, encoding each version with a cache that lived through all the
// versions before it and without any cache: the bodies must be equal byte for byte.
func TestEncodeCacheSendsTheBodyAnUncachedEncodingSends(t *testing.T) {
	p := NewOpenAI(OpenAIOptions{ID: "openai"})
	cache := &EncodeCache{}
	history := cachedHistory(12)
	steps := []struct {
		name   string
		change func(h []Message) []Message
	}{
		{"the first call encodes everything", func(h []Message) []Message { return h }},
		{"the same history again is served from the cache", func(h []Message) []Message { return h }},
		{"a new prompt and answer are appended", func(h []Message) []Message {
			return append(h, Message{Role: RoleUser, Text: "next"}, Message{Role: RoleAssistant, Text: "sure"})
		}},
		{"a message in the middle is edited (a part replaced)", func(h []Message) []Message {
			h = slices.Clone(h)
			h[4].Text = "edited text"
			return h
		}},
		{"a tool call's input is changed in place", func(h []Message) []Message {
			for i := range h {
				if len(h[i].ToolCalls) > 0 {
					h[i].ToolCalls[0].Input[2] = 'P' // {"Path":...}
					break
				}
			}
			return h
		}},
		{"a tool result becomes an error", func(h []Message) []Message {
			h = slices.Clone(h)
			for i := range h {
				if h[i].Role == RoleTool {
					h[i].IsError = true
					break
				}
			}
			return h
		}},
		{"the last turns are reverted", func(h []Message) []Message { return slices.Clone(h[:len(h)-7]) }},
		{"an aborted answer gains text, so it is sent", func(h []Message) []Message {
			h = slices.Clone(h)
			for i := range h {
				if h[i].Role == RoleAssistant && h[i].Text == "" && len(h[i].ToolCalls) == 0 {
					h[i].Text = "late"
					break
				}
			}
			return h
		}},
		{"a compaction replaces the start by a summary", func(h []Message) []Message {
			return append([]Message{{Role: RoleUser, Text: SummaryQuestion}, {Role: RoleAssistant, Text: "summary"}}, h[10:]...)
		}},
		{"the history grows again after the compaction", func(h []Message) []Message {
			return append(h, cachedHistory(5)...)
		}},
		{"the first message is left out (empty), so no separator may lead", func(h []Message) []Message {
			return append([]Message{{Role: RoleAssistant}}, h...)
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			history = st.change(history)
			for _, system := range [][]string{nil, {"be brief"}} {
				req := Request{Model: "m", System: system, Messages: history}
				want, err := p.body(req)
				if err != nil {
					t.Fatal(err)
				}
				req.Cache = cache
				got, err := p.body(req)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("with the cache the body differs:\n got %s\nwant %s", got, want)
				}
				if !json.Valid(got) {
					t.Fatalf("the body is not JSON: %s", got)
				}
			}
			if n, _ := cache.Len(); n == 0 || n > len(history) {
				t.Fatalf("the cache holds %d messages of %d", n, len(history))
			}
		})
	}
}

// TestEncodeCacheReencodesAChangedMessage checks that the cache does serve an unchanged message
// (so that the equality test above is not vacuous) and never serves a changed one.
func TestEncodeCacheReencodesAChangedMessage(t *testing.T) {
	p := NewOpenAI(OpenAIOptions{ID: "openai"})
	cache := &EncodeCache{}
	calls := 0
	counting := func(b []byte, m Message) ([]byte, error) { calls++; return p.appendMessage(b, m) }
	history := []Message{{Role: RoleUser, Text: "one"}, {Role: RoleAssistant, Text: "two"}, {Role: RoleUser, Text: "three"}}
	encode := func() []byte {
		t.Helper()
		b, err := cache.encodeMessages(nil, "openai-chat", history, true, counting)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	encode()
	if calls != 3 {
		t.Fatalf("the first encoding encoded %d messages, want 3", calls)
	}
	calls = 0
	encode()
	if calls != 0 {
		t.Fatalf("an unchanged history encoded %d messages again, want 0", calls)
	}
	history[1].Text = "changed"
	got := encode()
	if calls != 1 {
		t.Fatalf("one changed message encoded %d messages, want 1", calls)
	}
	if !bytes.Contains(got, []byte(`"changed"`)) || bytes.Contains(got, []byte(`"two"`)) {
		t.Fatalf("the changed message was served from the cache: %s", got)
	}
	calls = 0
	if _, err := cache.encodeMessages(nil, "another-format", history, true, counting); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Fatalf("another encoder reused %d encodings, want none", 3-calls)
	}
}

// TestSameMessageComparesEveryField fails when Message gains a field sameMessage does not compare:
// a cached encoding would then outlive a change of that field.
func TestSameMessageComparesEveryField(t *testing.T) {
	base := Message{Role: RoleUser, Text: "t", Reasoning: []Reasoning{{Text: "r"}}, ToolCalls: []ToolCall{{ID: "i", Name: "n", Input: json.RawMessage(`{}`)}},
		ToolCallID: "c", ToolName: "n", IsError: false, Attachments: nil}
	changed := map[string]func(m *Message){
		"Role":        func(m *Message) { m.Role = RoleAssistant },
		"Text":        func(m *Message) { m.Text = "u" },
		"Attachments": func(m *Message) { m.Attachments = []Attachment{{Mime: "image/png"}} },
		"Reasoning":   func(m *Message) { m.Reasoning = []Reasoning{{Text: "r", Signature: "s"}} },
		"ToolCalls":   func(m *Message) { m.ToolCalls = []ToolCall{{ID: "i", Name: "n", Input: json.RawMessage(`{"a":1}`)}} },
		"ToolCallID":  func(m *Message) { m.ToolCallID = "d" },
		"ToolName":    func(m *Message) { m.ToolName = "o" },
		"IsError":     func(m *Message) { m.IsError = true },
	}
	fields := reflect.TypeFor[Message]()
	for i := range fields.NumField() {
		name := fields.Field(i).Name
		t.Run("a change of "+name+" makes another message", func(t *testing.T) {
			change, ok := changed[name]
			if !ok {
				t.Fatalf("Message.%s is new: compare it in sameMessage and add it here", name)
			}
			m := keptCopy(base)
			change(&m)
			if sameMessage(base, m) {
				t.Fatalf("a message with another %s counts as the same", name)
			}
		})
	}
	if !sameMessage(base, keptCopy(base)) {
		t.Fatal("a copy of a message is not the same message")
	}
}
