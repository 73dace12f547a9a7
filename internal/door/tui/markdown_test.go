package tui

import (
	"strconv"
	"strings"
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

func TestMarkdownKeepsTheLinesOfPlainText(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"a listing keeps one entry a line and its spacing", "total 8\ndrwxr-xr-x  2 root root 4096 .\n-rw-r--r--  1 root root   12 a.txt",
			"total 8\ndrwxr-xr-x  2 root root 4096 .\n-rw-r--r--  1 root root   12 a.txt"},
		{"numbers one a line stay one a line", "1\n2\n3", "1\n2\n3"},
		{"a hard break stays a break", "one  \ntwo", "one\ntwo"},
		{"a long line still wraps at the width", "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu\nnu", "alpha beta gamma delta epsilon zeta eta theta iota kappa\nlambda mu\nnu"},
		{"paragraphs stay apart", "one\ntwo\n\nthree", "one\ntwo\n\nthree"},
		{"a list item's lines stay under its marker", "- one\n  more\n- two", "• one\n  more\n• two"},
		{"a code block after text is still a code block", "run:\n\n```\na  b\n```", "run:\n\n  a  b"},
		{"a table after lines of text is still a table", "rows:\n\n| a | b |\n|---|---|\n| 1 | 2 |", "rows:\n\na │ b\n──┼──\n1 │ 2"},
		{"emphasis across lines keeps both", "*one\ntwo*", "one\ntwo"},
	}
	md := newMarkdown()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ansi.Strip(renderMarkdown(md, tt.src, 60)); got != tt.want {
				t.Errorf("rendered\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestMarkdownShowsTwentyThousandLinesOneALine(t *testing.T) {
	src := numbers(20000)
	got := ansi.Strip(renderMarkdown(newMarkdown(), src, 80))
	if got != src {
		lines := strings.Split(got, "\n")
		t.Fatalf("%d lines rendered, want 20000; the first: %q", len(lines), lines[0])
	}
}

// numbers is 1 to n, one a line.
func numbers(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

func BenchmarkMarkdownTwentyThousandLines(b *testing.B) {
	md := newMarkdown()
	src := numbers(20000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		renderMarkdown(md, src, 120)
	}
}
