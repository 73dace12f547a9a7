package tui

import (
	"slices"
	"testing"
)

func TestMentions(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"an @path after a space is a mention", "read @src/main.go please", []string{"src/main.go"}},
		{"trailing punctuation is not part of the path", "is @a.txt, or @b.txt? or (@c.txt)", []string{"a.txt", "b.txt"}},
		{"an @ inside a word is not a mention", "mail me@example.com", nil},
		{"a path mentioned twice is listed once", "@x.go then @x.go", []string{"x.go"}},
		{"a directory keeps its slash", "look in @src/", []string{"src/"}},
		{"a bare @ is nothing", "just @ here", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mentions(c.text); !slices.Equal(got, c.want) {
				t.Fatalf("mentions(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}
