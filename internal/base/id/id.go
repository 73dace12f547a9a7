// Package id makes the identifiers tandem hands out: OpenCode's prefixed, time-ordered IDs
// (ses_, msg_, prt_, per_, que_, pty_, evt_) plus tandem's own (eli_, grt_).
//
// An ID is the prefix, twelve hex digits of (milliseconds×4096 + a per-millisecond counter) and
// fourteen random base62 characters, the layout OpenCode uses, so IDs from one Source sort in
// creation order. Descending IDs (OpenCode's sessions) invert the time bits so that newer sorts first.
package id

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"
)

// Prefix names what an ID identifies.
type Prefix string

// The prefixes tandem uses; the first seven are OpenCode's.
const (
	Session     Prefix = "ses"
	Message     Prefix = "msg"
	Part        Prefix = "prt"
	Permission  Prefix = "per"
	Question    Prefix = "que"
	Pty         Prefix = "pty"
	Event       Prefix = "evt"
	Elicitation Prefix = "eli"
	Grant       Prefix = "grt"
	Notice      Prefix = "ntf" // one notification of a pending request to the notify targets
	Delivery    Prefix = "dlv" // one attempt to deliver a notification
	Call        Prefix = "call"
)

const (
	timeHexLen   = 12
	randomLen    = 14
	base62Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// Source hands out IDs that are strictly ordered within the Source, even when many are made in the
// same millisecond. The zero value is ready to use; a Source is safe for concurrent use.
type Source struct {
	mu      sync.Mutex
	lastMS  int64
	counter int64
	now     func() time.Time
}

// NewSource returns a Source reading the wall clock.
func NewSource() *Source { return &Source{} }

// New returns an ascending ID: later calls sort after earlier ones.
func (s *Source) New(p Prefix) string { return s.make(p, false) }

// NewDescending returns an ID that sorts before every ID made earlier by this Source.
func (s *Source) NewDescending(p Prefix) string { return s.make(p, true) }

func (s *Source) make(p Prefix, descending bool) string {
	s.mu.Lock()
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	ms := now().UnixMilli()
	if ms <= s.lastMS {
		// Same millisecond, or the clock stepped back: keep counting from the last value so order holds.
		s.counter++
		ms = s.lastMS
	} else {
		s.lastMS = ms
		s.counter = 0
	}
	v := uint64(ms)*0x1000 + uint64(s.counter)
	s.mu.Unlock()
	if descending {
		v = ^v
	}
	var b strings.Builder
	b.Grow(len(p) + 1 + timeHexLen + randomLen)
	b.WriteString(string(p))
	b.WriteByte('_')
	const hex = "0123456789abcdef"
	for shift := 44; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(v>>uint(shift))&0xf])
	}
	var rnd [randomLen]byte
	_, _ = rand.Read(rnd[:])
	for _, r := range rnd {
		b.WriteByte(base62Digits[int(r)%len(base62Digits)])
	}
	return b.String()
}

// Valid reports whether s is a well-formed ID with prefix p. Handlers use it to answer 400 for a
// malformed ID instead of looking it up.
func Valid(p Prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, string(p)+"_")
	if !ok || len(rest) < 1 || len(rest) > 64 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
