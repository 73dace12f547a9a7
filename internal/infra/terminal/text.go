package terminal

import (
	"bytes"
	"unicode/utf8"
)

// textDecoder turns raw PTY bytes into valid UTF-8 made of whole characters. Viewers receive output as
// WebSocket text frames, which must be valid UTF-8 (a browser drops the connection otherwise), and a
// read from the PTY can end in the middle of a character. The incomplete tail is held back until the
// next read completes it; bytes that can never form a character become U+FFFD, as a terminal shows them.
type textDecoder struct {
	carry []byte
}

func (d *textDecoder) decode(raw []byte) []byte {
	data := raw
	if len(d.carry) > 0 {
		data = append(d.carry, raw...)
		d.carry = nil
	}
	for i := 1; i <= utf8.UTFMax-1 && i <= len(data); i++ {
		if tail := data[len(data)-i:]; utf8.RuneStart(tail[0]) {
			if !utf8.FullRune(tail) {
				d.carry = append([]byte(nil), tail...)
				data = data[:len(data)-i]
			}
			break
		}
	}
	if utf8.Valid(data) {
		return bytes.Clone(data)
	}
	return bytes.ToValidUTF8(data, []byte("\uFFFD"))
}

// flush returns what is left of an incomplete character when the output ends.
func (d *textDecoder) flush() []byte {
	if len(d.carry) == 0 {
		return nil
	}
	out := bytes.ToValidUTF8(d.carry, []byte("\uFFFD"))
	d.carry = nil
	return out
}

// runeAligned skips the continuation bytes at the start of b: they belong to a character whose first
// byte has already left the scrollback (or lies before the viewer's cursor). It returns how many
// bytes were skipped.
func runeAligned(b []byte) int {
	n := 0
	for n < len(b) && n < utf8.UTFMax-1 && !utf8.RuneStart(b[n]) {
		n++
	}
	return n
}
