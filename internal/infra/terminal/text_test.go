package terminal

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextDecoder(t *testing.T) {
	euro := "\u20ac" // 3 bytes: e2 82 ac
	tests := []struct {
		name  string
		reads []string
		want  []string // output of each read, then of flush
	}{
		{"plain ASCII passes through", []string{"hello"}, []string{"hello", ""}},
		{"a character split across reads is held until complete", []string{"a" + euro[:1], euro[1:2], euro[2:] + "b"}, []string{"a", "", euro + "b", ""}},
		{"a split four-byte character is reassembled", []string{"\xf0\x9f", "\x98\x80"}, []string{"", "\U0001F600", ""}},
		{"an invalid byte becomes U+FFFD", []string{"a\xffb"}, []string{"a\uFFFDb", ""}},
		{"a stray continuation byte becomes U+FFFD", []string{"\x82x"}, []string{"\uFFFDx", ""}},
		{"an incomplete character at the end is flushed as U+FFFD", []string{"z" + euro[:2]}, []string{"z", "\uFFFD"}},
		{"a start byte followed by a non-continuation is invalid, not held", []string{"\xe2A"}, []string{"\uFFFDA", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d textDecoder
			var got []string
			for _, r := range tt.reads {
				got = append(got, string(d.decode([]byte(r))))
			}
			got = append(got, string(d.flush()))
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			for _, g := range got {
				if !utf8.ValidString(g) {
					t.Errorf("output %q is not valid UTF-8", g)
				}
			}
		})
	}
}

func TestRuneAligned(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"a rune start skips nothing", "abc", 0},
		{"the tail of a three-byte character is skipped", "\x82\xacz", 2},
		{"an empty slice skips nothing", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runeAligned([]byte(tt.in)); got != tt.want {
				t.Errorf("runeAligned(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}
