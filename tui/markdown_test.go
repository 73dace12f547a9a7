package tui

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestMarkdownRendersForTheTerminal(t *testing.T) {
	tests := []struct {
		name, src string
		width     int
		want      string
	}{
		{"a paragraph wraps at the width", "one two three four five six seven", 20, "one two three four\nfive six seven"},
		{"a heading keeps its level", "## Setup", 40, "## Setup"},
		{"emphasis and code lose their markers", "a **bold** and `code` word", 40, "a bold and code word"},
		{"a link shows where it goes", "see [docs](https://example.com)", 40, "see docs (https://example.com)"},
		{"nested lists indent under their marker", "- one\n- two\n  - inner", 40, "• one\n• two\n  • inner"},
		{"an ordered list counts from its start", "3. c\n4. d", 40, "3. c\n4. d"},
		{"a quote is ruled", "> careful", 40, "│ careful"},
		{"a code block is kept verbatim, indented, with its language", "```sh\nrm -rf  build\n```", 40, "  sh\n  rm -rf  build"},
		{"a table pads its columns", "| a | bb |\n|---|---|\n| 1 | 2 |", 40, "a │ bb\n──┼───\n1 │ 2 "},
		{"a task list shows its boxes", "- [x] done\n- [ ] todo", 40, "• [x] done\n• [ ] todo"},
	}
	md := newMarkdown()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ansi.Strip(renderMarkdown(md, tt.src, tt.width)); got != tt.want {
				t.Errorf("rendered\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
