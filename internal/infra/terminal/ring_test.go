package terminal

import (
	"strings"
	"testing"
)

func TestRing(t *testing.T) {
	tests := []struct {
		name       string
		size       int
		writes     []string
		from       int64
		want       string
		wantStart  int64
		wantCursor int64
	}{
		{"an empty ring replays nothing", 8, nil, 0, "", 0, 0},
		{"a ring that has not wrapped replays from the cursor", 8, []string{"abc", "de"}, 1, "bcde", 0, 5},
		{"a wrapped ring keeps the newest bytes", 8, []string{"abcdef", "ghijk"}, 0, "defghijk", 3, 11},
		{"a cursor inside a wrapped ring replays from it", 8, []string{"abcdef", "ghijk"}, 9, "jk", 3, 11},
		{"a write larger than the ring keeps its tail", 4, []string{"ab", "cdefghij"}, 0, "ghij", 6, 10},
		{"a cursor at the end replays nothing", 4, []string{"abcdef"}, 6, "", 2, 6},
		{"a write that exactly fills the ring is whole", 4, []string{"wxyz"}, 0, "wxyz", 0, 4},
		{"many small writes wrap repeatedly", 3, strings.Split("abcdefghijklmnop", ""), 0, "nop", 13, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing(tt.size)
			for _, w := range tt.writes {
				r.write([]byte(w))
			}
			if got := string(r.since(tt.from)); got != tt.want {
				t.Errorf("since(%d) = %q, want %q", tt.from, got, tt.want)
			}
			if r.start() != tt.wantStart || r.total != tt.wantCursor {
				t.Errorf("start, total = %d, %d; want %d, %d", r.start(), r.total, tt.wantStart, tt.wantCursor)
			}
		})
	}
}
