package tui

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

func TestAFormKeepsTheServersOrderAndTypes(t *testing.T) {
	raw, err := os.ReadFile("testdata/everything-form.json")
	if err != nil {
		t.Fatal(err)
	}
	fields, err := parseForm(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]string
	for _, f := range fields {
		got = append(got, [2]string{f.name, f.kind})
	}
	want := [][2]string{{"name", "string"}, {"check", "boolean"}, {"integer", "integer"}, {"number", "number"},
		{"untitled", "enum"}, {"titled", "enum"}, {"multi", "multi"}}
	if !cmp.Equal(got, want) {
		t.Fatalf("fields %v, want %v (the order the server wrote)", got, want)
	}
	if !fields[0].required || fields[1].required {
		t.Fatal("only name is required")
	}
	if fields[5].labels[0] != "Superman" || fields[5].choices[0] != "hero-1" {
		t.Fatalf("a titled choice shows its title and sends its const: %+v", fields[5])
	}

	t.Run("the defaults are what an untouched form sends", func(t *testing.T) {
		got := formContent(fields)
		want := map[string]any{"check": true, "integer": 42.0, "number": 3.14, "untitled": "Monica", "multi": []string{"fish-2"}}
		if !cmp.Equal(got, want) {
			t.Fatalf("content %v, want %v", got, want)
		}
	})
	t.Run("typed values are sent typed, and a number that does not parse as the text typed", func(t *testing.T) {
		fields[0].text = "Ada"
		fields[2].text = "seven"
		fields[3].text = "2.5"
		fields[5].pick = 1
		fields[6].picked = map[int]bool{0: true}
		got := formContent(fields)
		want := map[string]any{"name": "Ada", "check": true, "integer": "seven", "number": 2.5, "untitled": "Monica",
			"titled": "hero-2", "multi": []string{"fish-1"}}
		if !cmp.Equal(got, want) {
			t.Fatalf("content %v, want %v", got, want)
		}
	})
}

func TestTheServersRefusalNamesItsField(t *testing.T) {
	for _, tc := range []struct {
		name, msg, field, detail string
		ok                       bool
	}{
		{"a field's error names the field", "content.integer: must be at most 100", "integer", "must be at most 100", true},
		{"a required field", "content.name: required", "name", "required", true},
		{"an error about the whole answer names none", "elicitation already answered", "", "elicitation already answered", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field, detail, ok := fieldOfError(tc.msg)
			if field != tc.field || detail != tc.detail || ok != tc.ok {
				t.Fatalf("fieldOfError(%q) = %q, %q, %v", tc.msg, field, detail, ok)
			}
		})
	}
}

func TestAConversationFollowsItsEvents(t *testing.T) {
	text := func(s string) *string { return &s }
	c := newConversation([]session.WithParts{{Info: session.Message{ID: "msg_1", SessionID: "ses_1", Role: "user"},
		Parts: []session.Part{{ID: "prt_1", MessageID: "msg_1", SessionID: "ses_1", Type: "text", Text: text("hi")}}}})

	c.updatePart(session.Part{ID: "prt_3", MessageID: "msg_2", SessionID: "ses_1", Type: "text", Text: text("")})
	c.appendDelta("ses_1", "msg_2", "prt_3", "Hel")
	c.appendDelta("ses_1", "msg_2", "prt_3", "lo")
	c.updateMessage(session.Message{ID: "msg_2", SessionID: "ses_1", Role: "assistant"})
	if len(c.msgs) != 2 || *c.msgs[1].parts[0].Text != "Hello" {
		t.Fatalf("deltas build the text: %+v", c.msgs[1].parts[0])
	}
	t.Run("the finished part replaces what streamed, so nothing doubles", func(t *testing.T) {
		c.updatePart(session.Part{ID: "prt_3", MessageID: "msg_2", SessionID: "ses_1", Type: "text", Text: text("Hello")})
		if n := len(c.msgs[1].parts); n != 1 || *c.msgs[1].parts[0].Text != "Hello" {
			t.Fatalf("%d parts, text %q", n, *c.msgs[1].parts[0].Text)
		}
	})
	t.Run("a running command's output grows by deltas at their offsets, and one past the end waits", func(t *testing.T) {
		c.updatePart(session.Part{ID: "prt_4", MessageID: "msg_2", SessionID: "ses_1", Type: "tool", Tool: "bash",
			State: &session.ToolState{Status: "running", Metadata: map[string]any{"output": "", "description": "d"}}})
		c.appendOutput("ses_1", "msg_2", "prt_4", 0, "héllo ")
		c.appendOutput("ses_1", "msg_2", "prt_4", 2, "llo 😀\n")          // repeats what the copy has
		c.appendOutput("ses_1", "msg_2", "prt_4", 40, "lost in a gap\n") // starts past the copy's end
		c.appendOutput("ses_1", "msg_2", "prt_4", 9, "next\n")
		p := c.msgs[1].parts[1]
		if out := p.State.Metadata["output"]; out != "héllo 😀\nnext\n" || p.State.Metadata["description"] != "d" {
			t.Fatalf("live output %q, metadata %v", out, p.State.Metadata)
		}
	})
	t.Run("a part that arrives before its message is kept in order", func(t *testing.T) {
		c.updatePart(session.Part{ID: "prt_9", MessageID: "msg_0", SessionID: "ses_1", Type: "text", Text: text("earlier")})
		if c.msgs[0].info.ID != "msg_0" {
			t.Fatalf("messages out of order: %s", c.msgs[0].info.ID)
		}
	})
	t.Run("removed messages and parts go", func(t *testing.T) {
		c.removePart("msg_0", "prt_9")
		c.removeMessage("msg_0")
		if len(c.msgs) != 2 {
			t.Fatalf("%d messages", len(c.msgs))
		}
	})
}

func TestLongToolOutputShowsItsNewestLines(t *testing.T) {
	out := ""
	for i := 1; i <= 5000; i++ {
		out += "line " + itoa(i) + "\n"
	}
	r := newRenderer()
	p := &session.Part{ID: "prt_1", Type: "tool", Tool: "bash", State: &session.ToolState{Status: "running",
		Input: []byte(`{"command":"seq"}`), Metadata: map[string]any{"output": out}}}
	got := r.tool(p, false)
	for _, want := range []string{"4988 earlier lines", "line 4989", "line 5000"} {
		if !contains(got, want) {
			t.Fatalf("collapsed output lacks %q:\n%s", want, got)
		}
	}
	if contains(got, "line 4988\n") {
		t.Fatalf("collapsed output shows more than %d lines:\n%s", toolLines, got)
	}
}

func itoa(i int) string { return fmt.Sprint(i) }

func contains(s, sub string) bool { return strings.Contains(ansi.Strip(s), sub) }
