package tui

import (
	"reflect"
	"testing"
)

func TestMentions(t *testing.T) {
	cases := []struct {
		name, text string
		want       []mention
	}{
		{"an @path after a space is a mention", "read @src/main.go please", []mention{{"src/main.go", 5, 17}}},
		{"trailing punctuation is not part of the path", "is @a.txt, or @b.txt? or (@c.txt)", []mention{{"a.txt", 3, 9}, {"b.txt", 14, 20}}},
		{"an @ inside a word is not a mention", "mail me@example.com", nil},
		{"a path mentioned twice is listed once, where it comes first", "@x.go then @x.go", []mention{{"x.go", 0, 5}}},
		{"a directory keeps its slash", "look in @src/", []mention{{"src/", 8, 13}}},
		{"a bare @ is nothing", "just @ here", nil},
		{"offsets count UTF-16 units as OpenCode's do", "😀 é @f.go", []mention{{"f.go", 5, 10}}},
		{"a mention after a new line is found", "first\n@g.go", []mention{{"g.go", 6, 11}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mentions(c.text); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("mentions(%q) = %+v, want %+v", c.text, got, c.want)
			}
		})
	}
}
