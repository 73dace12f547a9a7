package session

import (
	"context"
	"strings"
	"sync"

	"tandem/provider"
	"tandem/store"
)

// histories keeps, per session, the provider history of the messages that came before the last
// turn's user message, so that the next turn reads from the store only what came since: that user
// message, the replies of its turn and the prompts queued meanwhile. A turn then costs what is new
// in it, not the whole conversation.
//
// What it keeps never goes stale: turns only add messages after it, a crash's leftovers are
// marked at start (before anything is kept), and the edits of a session's history (deleting a
// message or a part, replacing a part) run through Service.exclusive, which drops what is kept
// for that session. Each use also first counts the stored messages before its cursor, so that
// one inserted among them (a clock that went back) sends the turn back to reading everything.
type histories struct {
	mu      sync.Mutex
	entries map[string]*historyPrefix
	clock   uint64 // ticks on every put, for least-recently-used eviction
}

// historiesKept bounds how many sessions' histories are kept in memory.
const historiesKept = 16

// historyPrefix is the history of a session's messages before a cursor.
type historyPrefix struct {
	msgs    []provider.Message // the history of every message before the cursor
	users   map[string]bool    // the user messages before the cursor (every one is in msgs)
	count   int                // how many messages are before the cursor
	created int64              // the cursor: the first message not covered, by created time
	id      string             // and then by ID
	used    uint64
}

// take removes and returns a session's kept prefix (nil when there is none): a turn owns it while
// it reads, and puts back the one it leaves for the next turn.
func (h *histories) take(sessionID string) *historyPrefix {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.entries[sessionID]
	delete(h.entries, sessionID)
	return p
}

func (h *histories) put(sessionID string, p *historyPrefix) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = map[string]*historyPrefix{}
	}
	h.clock++
	p.used = h.clock
	h.entries[sessionID] = p
	if len(h.entries) <= historiesKept {
		return
	}
	oldest := ""
	for sid, e := range h.entries {
		if oldest == "" || e.used < h.entries[oldest].used {
			oldest = sid
		}
	}
	delete(h.entries, oldest)
}

// drop forgets a session (it was deleted).
func (h *histories) drop(sessionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.entries, sessionID)
}

// history turns the stored conversation up to the turn's user message into provider messages.
// Prompts queued behind this turn are already stored, and stay out of its history. It reads the
// messages since the kept prefix of the session's history, and keeps the prefix up to upTo for
// the next turn.
func (s *Service) history(ctx context.Context, sessionID, upTo string) ([]provider.Message, error) {
	prefix := s.histories.take(sessionID)
	if prefix != nil {
		n, err := s.db.CountMessagesBefore(ctx, sessionID, prefix.created, prefix.id)
		if err != nil {
			return nil, err
		}
		if n != prefix.count {
			s.log.Warn("history: messages appeared among those already read; reading them all again", "session", sessionID)
			prefix = nil
		}
	}
	if prefix == nil {
		prefix = &historyPrefix{users: map[string]bool{}}
	}
	msgs, parts, err := s.db.ListMessages(ctx, store.MessageQuery{SessionID: sessionID, FromCreated: prefix.created, FromID: prefix.id})
	if err != nil {
		return nil, err
	}
	// Three-index slice: appending to out never writes into the kept prefix's array.
	out := prefix.msgs[:len(prefix.msgs):len(prefix.msgs)]
	since := map[string]bool{} // user messages included after the prefix
	reached := false
	var next *historyPrefix
	for i, m := range msgs {
		wp, err := decodeWithParts(m, parts[m.ID])
		if err != nil {
			return nil, err
		}
		switch wp.Info.Role {
		case RoleUser:
			if reached {
				continue
			}
			if wp.Info.ID == upTo {
				// Everything before this message is what the next turn's history starts with.
				for u := range since {
					prefix.users[u] = true
				}
				next = &historyPrefix{msgs: out[:len(out):len(out)], users: prefix.users, count: prefix.count + i, created: m.Created, id: m.ID}
				reached = true
			}
			since[wp.Info.ID] = true
			out = append(out, userMessage(wp.Parts))
		case RoleAssistant:
			if prefix.users[wp.Info.ParentID] || since[wp.Info.ParentID] {
				out = appendStep(out, wp.Parts)
			}
		}
	}
	if next != nil {
		s.histories.put(sessionID, next)
	}
	return out, nil
}

// userMessage is a user message's text and attached files as one provider message.
func userMessage(parts []Part) provider.Message {
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != nil && !p.Ignored {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(*p.Text)
			}
		case "file":
			b.WriteString("\n[attached file: " + p.Filename + " (" + p.Mime + ") " + p.URL + "]")
		}
	}
	return provider.Message{Role: provider.RoleUser, Text: b.String()}
}
