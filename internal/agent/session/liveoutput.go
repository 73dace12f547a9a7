package session

import (
	"strings"
	"time"
	"unicode/utf8"
)

// A running command's output reaches clients as appended deltas, not as the whole output again in
// every update: message.part.delta events on the field api.FieldLiveOutput, each saying at which
// offset (UTF-16 code units) of the part's live output it starts, so a client that loaded the part
// mid-stream applies exactly what its copy lacks.
//
// OpenCode's own clients read a running bash part's output only from state.metadata.output in
// message.part.updated (its TUI applies a delta to a part's top-level field, and `opencode run`
// only to "text"), so the whole live output also goes out in a message.part.updated, at most once
// per liveWholeEvery while deltas flow. The live output is bounded as OpenCode bounds its own
// (a tail behind a "...\n\n" marker): when more arrives between two announcements than liveStep, or
// the live output would outgrow liveCap, it restarts as the marker and the newest lines, in a
// message.part.updated. The complete output, as the model sees it, comes once, in the final state.
const (
	liveStep       = 4 << 10
	liveCap        = 16 << 10
	liveWholeEvery = time.Second
	liveMarker     = "...\n\n"
)

// liveOutput is one running part's live output: what clients were sent and what waits.
type liveOutput struct {
	on      bool   // the tool streams output (its Progress started metadata.output)
	text    string // the live output as announced
	units   int    // len(text) in UTF-16 code units
	pending []byte // printed since, not announced yet; may end inside a character
	skipped int    // bytes printed before pending that will never be announced

	whole time.Time // when the whole part was last announced
	owed  bool      // deltas went out since then: the whole part follows within liveWholeEvery
}

// add folds in what a tool printed since its previous Progress.
func (l *liveOutput) add(out string, skipped int) {
	if skipped > 0 {
		l.skipped += len(l.pending) + skipped
		l.pending = l.pending[:0]
	}
	l.pending = append(l.pending, out...)
	// More than a step waiting is announced as its last step anyway: keep no more than that.
	if over := len(l.pending) - 2*liveStep; over > 0 {
		l.skipped += over
		l.pending = l.pending[:copy(l.pending, l.pending[over:])]
	}
}

// next decides the announcement of what waits: a delta (with its offset) to append, and whether
// the whole part goes out too (after the delta), carrying the live output l.text. A restart goes
// out at most once per liveWholeEvery, so that a flood costs a step a second, and the whole part
// follows deltas within liveWholeEvery; after, when set, is when to ask again for what is held back.
func (l *liveOutput) next(now time.Time) (delta string, offset int, whole bool, after time.Duration) {
	n := len(l.pending)
	if s := lastRuneStart(l.pending); n > 0 && !utf8.FullRune(l.pending[s:]) {
		n = s // the rest of the character comes with the next read
	}
	chunk := strings.ToValidUTF8(string(l.pending[:n]), "\uFFFD")
	l.pending = l.pending[:copy(l.pending, l.pending[n:])]
	if l.skipped == 0 && len(chunk) <= liveStep && len(l.text)+len(chunk) <= liveCap {
		wait := liveWholeEvery - now.Sub(l.whole)
		if chunk == "" {
			if !l.owed {
				return "", 0, false, 0
			}
			if wait > 0 {
				return "", 0, false, wait
			}
			l.whole, l.owed = now, false
			return "", 0, true, 0
		}
		offset = l.units
		l.text += chunk
		l.units += utf16Len(chunk)
		if wait > 0 {
			// The whole part follows within the second, even if nothing more is printed.
			l.owed = true
			return chunk, offset, false, wait
		}
		l.whole, l.owed = now, false
		return chunk, offset, true, 0
	}
	// Too much to append: the live output restarts as the marker and the newest whole lines.
	tail := chunk
	if l.skipped == 0 {
		tail = strings.TrimPrefix(l.text, liveMarker) + chunk
	}
	if wait := liveWholeEvery - now.Sub(l.whole); wait > 0 && !l.whole.IsZero() {
		// Not yet: what restarts it waits, no more than a step of it.
		keep := tail[max(0, len(tail)-liveStep):]
		l.skipped += len(tail) - len(keep)
		if l.skipped == 0 {
			l.skipped = 1 // the live output was full: it restarts whatever comes
		}
		l.pending = append(append(l.pending[:0:0], keep...), l.pending...)
		return "", 0, false, wait
	}
	if len(tail) > liveStep {
		tail = tail[len(tail)-liveStep:]
		if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			tail = tail[i+1:]
		}
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
	}
	l.text = liveMarker + tail
	l.units = utf16Len(l.text)
	l.skipped = 0
	l.whole, l.owed = now, false
	return "", 0, true, 0
}

func lastRuneStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return max(i, 0)
}
