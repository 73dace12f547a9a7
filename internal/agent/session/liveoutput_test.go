package session

import (
	"strings"
	"testing"
	"time"
)

func TestLiveOutput(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t.Run("small writes go out as deltas at the offsets a client's copy ends at, the whole part once a second", func(t *testing.T) {
		var l liveOutput
		var client string
		for i, w := range []struct {
			out       string
			at        time.Duration
			wantWhole bool
			wantAfter time.Duration
		}{
			{"a😀\n", 0, true, 0},
			{"b\n", 40 * time.Millisecond, false, 960 * time.Millisecond},
			{"c\n", time.Second, true, 0},
			{"d\n", 1100 * time.Millisecond, false, 900 * time.Millisecond},
		} {
			l.add(w.out, 0)
			delta, offset, whole, after := l.next(t0.Add(w.at))
			if delta != w.out || offset != utf16Len(client) || whole != w.wantWhole || after != w.wantAfter {
				t.Fatalf("write %d: delta %q at %d, whole %v, after %s", i, delta, offset, whole, after)
			}
			client += delta
		}
		if client != l.text {
			t.Fatalf("the client holds %q, the part %q", client, l.text)
		}
		// Nothing more is printed: the whole part, owed since "d", goes out a second after the last.
		if _, _, whole, after := l.next(t0.Add(1500 * time.Millisecond)); whole || after != 500*time.Millisecond {
			t.Fatalf("before the second: whole %v, after %s", whole, after)
		}
		if _, _, whole, after := l.next(t0.Add(2 * time.Second)); !whole || after != 0 {
			t.Fatalf("at the second: whole %v, after %s", whole, after)
		}
		if _, _, whole, after := l.next(t0.Add(5 * time.Second)); whole || after != 0 {
			t.Fatalf("nothing owed: whole %v, after %s", whole, after)
		}
	})
	t.Run("a character split across two reads goes out whole with the second", func(t *testing.T) {
		var l liveOutput
		l.add("x\xf0\x9f", 0)
		if d, _, _, _ := l.next(t0); d != "x" {
			t.Fatalf("first delta %q", d)
		}
		l.add("\x98\x80", 0)
		if d, off, _, _ := l.next(t0); d != "😀" || off != 1 {
			t.Fatalf("second delta %q at %d", d, off)
		}
	})
	t.Run("a flood restarts the live output as the marker and the newest whole lines, at most once a second", func(t *testing.T) {
		var l liveOutput
		var flood strings.Builder
		for i := range 3000 {
			flood.WriteString(strings.Repeat("x", i%7) + "\n")
		}
		l.add(flood.String(), 0)
		delta, _, whole, _ := l.next(t0)
		if delta != "" || !whole || !strings.HasPrefix(l.text, liveMarker) || len(l.text) > len(liveMarker)+liveStep ||
			!strings.HasSuffix(flood.String(), strings.TrimPrefix(l.text, liveMarker)) || l.text[len(liveMarker)-1] != '\n' {
			t.Fatalf("delta %q, whole %v, live output %d bytes", delta, whole, len(l.text))
		}
		l.add("more\n", 70_000)
		if delta, _, whole, after := l.next(t0.Add(100 * time.Millisecond)); delta != "" || whole || after != 900*time.Millisecond {
			t.Fatalf("a second flood within the second: delta %q, whole %v, after %s", delta, whole, after)
		}
		if delta, _, whole, _ := l.next(t0.Add(time.Second)); delta != "" || !whole || l.text != liveMarker+"more\n" {
			t.Fatalf("after the second: delta %q, whole %v, live output %q", delta, whole, l.text)
		}
	})
	t.Run("the live output never outgrows its cap", func(t *testing.T) {
		var l liveOutput
		line := strings.Repeat("y", 99) + "\n"
		for i := range 400 {
			l.add(line, 0)
			l.next(t0.Add(time.Duration(i) * 2 * time.Second))
			if len(l.text) > liveCap {
				t.Fatalf("after %d lines the live output is %d bytes", i+1, len(l.text))
			}
		}
	})
}
