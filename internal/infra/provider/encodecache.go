package provider

import (
	"bytes"
	"slices"
	"sync"
)

// EncodeCache keeps the wire encoding of a conversation's messages between calls, so that a call
// encodes only the messages that are new or changed instead of the whole history: with the history
// sent whole on every call, its encoding is what a long session's calls grow with.
//
// An entry is used only when the message at that position equals, field by field, the message it
// was encoded from (a copy kept beside the encoding), so an edited, reverted or compacted history
// is re-encoded where it differs, and the body is byte for byte what it would be without the cache.
// Strings are compared by content; one that is shared with the kept copy compares in constant time.
// Messages with attachments are not kept (their data is read again for each call and would be
// held twice). The cache is bounded by MaxEncodeCacheBytes; its owner (a session's history) drops
// it with the history. It is safe for concurrent use.
type EncodeCache struct {
	mu      sync.Mutex
	format  string // the encoder the entries are of; another empties the cache
	entries []encoded
	bytes   int
}

// MaxEncodeCacheBytes bounds what one EncodeCache keeps (the encodings and the kept messages'
// text); past it, further messages are encoded for each call as without a cache.
const MaxEncodeCacheBytes = 4 << 20

type encoded struct {
	msg  Message
	wire []byte // the message's encoding; empty when the encoder leaves the message out
	ok   bool
}

// encodeFunc appends one message's encoding to b (nothing when the message is left out).
type encodeFunc func(b []byte, m Message) ([]byte, error)

// appendMessage appends the encoding of msgs[i] to b, from the cache when it holds msgs[i]'s
// encoding by format, else encoding it (and keeping it when it fits). A nil cache only encodes.
func (c *EncodeCache) appendMessage(b []byte, format string, i int, m Message, enc encodeFunc) ([]byte, error) {
	if c == nil || len(m.Attachments) > 0 {
		return enc(b, m)
	}
	if c.format != format {
		c.format, c.entries, c.bytes = format, nil, 0
	}
	if i < len(c.entries) && c.entries[i].ok && sameMessage(c.entries[i].msg, m) {
		c.entries[i].msg.share(m)
		return append(b, c.entries[i].wire...), nil
	}
	start := len(b)
	b, err := enc(b, m)
	if err != nil {
		return b, err
	}
	if i < len(c.entries) && c.entries[i].ok {
		c.bytes -= entrySize(c.entries[i])
		c.entries[i] = encoded{}
	}
	e := encoded{msg: keptCopy(m), wire: bytes.Clone(b[start:]), ok: true}
	if e.wire == nil {
		e.wire = []byte{}
	}
	if n := entrySize(e); c.bytes+n <= MaxEncodeCacheBytes && i <= len(c.entries) {
		if i == len(c.entries) {
			c.entries = append(c.entries, e)
		} else {
			c.entries[i] = e
		}
		c.bytes += n
	}
	return b, nil
}

// encodeMessages appends the encodings of msgs, separated by commas, with the cache's lock held
// for the whole list; entries past the list are dropped (the history got shorter).
func (c *EncodeCache) encodeMessages(b []byte, format string, msgs []Message, first bool, enc encodeFunc) ([]byte, error) {
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	for i, m := range msgs {
		mark := len(b)
		if !first {
			b = append(b, ',')
		}
		var err error
		before := len(b)
		if b, err = c.appendMessage(b, format, i, m, enc); err != nil {
			return nil, err
		}
		if len(b) == before {
			b = b[:mark] // left out: no separator either
			continue
		}
		first = false
	}
	if c != nil && len(c.entries) > len(msgs) {
		for _, e := range c.entries[len(msgs):] {
			c.bytes -= entrySize(e)
		}
		clear(c.entries[len(msgs):])
		c.entries = c.entries[:len(msgs)]
	}
	return b, nil
}

// Len reports how many messages' encodings the cache holds and their size in bytes (for tests
// and measurements).
func (c *EncodeCache) Len() (messages, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.ok {
			messages++
		}
	}
	return messages, c.bytes
}

func entrySize(e encoded) int {
	if !e.ok {
		return 0
	}
	n := len(e.wire) + len(e.msg.Text) + len(e.msg.ToolCallID) + len(e.msg.ToolName)
	for _, r := range e.msg.Reasoning {
		n += len(r.Text) + len(r.Signature) + len(r.Redacted) + len(r.ItemID) + len(r.Encrypted)
	}
	for _, tc := range e.msg.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Input)
	}
	return n
}

// keptCopy is m with its own copies of everything a caller could change in place (slices and
// the bytes of tool inputs); strings cannot change.
func keptCopy(m Message) Message {
	m.Reasoning = slices.Clone(m.Reasoning)
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for i := range m.ToolCalls {
		m.ToolCalls[i].Input = bytes.Clone(m.ToolCalls[i].Input)
	}
	m.Attachments = nil // messages with attachments are never kept
	return m
}

// share makes the kept copy m refer to the strings of the equal message n (the one the history
// holds now, read again from the store, say), so that the next comparison finds the same strings
// and costs no more than comparing their addresses. The strings are equal, so nothing changes.
func (m *Message) share(n Message) {
	m.Text, m.ToolCallID, m.ToolName = n.Text, n.ToolCallID, n.ToolName
	for i := range m.Reasoning {
		m.Reasoning[i] = n.Reasoning[i]
	}
	for i := range m.ToolCalls {
		m.ToolCalls[i].ID, m.ToolCalls[i].Name = n.ToolCalls[i].ID, n.ToolCalls[i].Name
	}
}

// sameMessage reports whether a and b are equal in every field an encoder reads.
func sameMessage(a, b Message) bool {
	if a.Role != b.Role || a.Text != b.Text || a.ToolCallID != b.ToolCallID || a.ToolName != b.ToolName ||
		a.IsError != b.IsError || len(a.Attachments) != len(b.Attachments) || !slices.Equal(a.Reasoning, b.Reasoning) {
		return false
	}
	return slices.EqualFunc(a.ToolCalls, b.ToolCalls, func(x, y ToolCall) bool {
		return x.ID == y.ID && x.Name == y.Name && bytes.Equal(x.Input, y.Input)
	})
}
