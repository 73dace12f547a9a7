package session

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
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
	db interface {
		CountMessagesBefore(ctx context.Context, sessionID string, created int64, messageID string) (int, error)
		ListMessages(ctx context.Context, q store.MessageQuery) ([]store.Message, map[string][]store.Part, error)
	}
	logger  *slog.Logger
	mu      sync.Mutex
	entries map[string]*historyPrefix
	clock   uint64 // ticks on every put, for least-recently-used eviction
}

// historiesKept bounds how many sessions' histories are kept in memory.
const historiesKept = 16

// historyPrefix is the history of a session's messages before a cursor.
type historyPrefix struct {
	msgs       []provider.Message // the history of every message before the cursor
	users      map[string]bool    // the user messages before the cursor (every one is in msgs)
	starts     map[string]int     // where each user message still in msgs starts in msgs
	summarized int                // how many messages at the start of msgs are a compaction's summary
	count      int                // how many messages are before the cursor
	// cache keeps the provider encoding of the history's messages from one call to the next; it
	// goes with the prefix (an edit of the history, an eviction) and is checked message by message.
	cache   *provider.EncodeCache
	created int64  // the cursor: the first message not covered, by created time
	id      string // and then by ID
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

// conversation is the provider history a turn starts from.
type conversation struct {
	msgs []provider.Message
	// at is where the turn's own user message starts in msgs (len(msgs) when it is not there).
	at int
	// summarized is how many messages at the start of msgs are a compaction's summary (0 or 2):
	// the question that stands for the compaction and the summary.
	summarized int
	// cache is the session's encoding cache, for the requests the turn makes from msgs.
	cache *provider.EncodeCache
}

// history is the provider history of a session up to the user message upTo (see conversation).
func (h *histories) history(ctx context.Context, sessionID, upTo string) ([]provider.Message, error) {
	c, err := h.conversation(ctx, sessionID, upTo)
	return c.msgs, err
}

// conversation turns the stored conversation up to the turn's user message into provider messages.
// Prompts queued behind this turn are already stored, and stay out of its history. It reads the
// messages since the kept prefix of the session's history, and keeps the prefix up to upTo for
// the next turn.
//
// A finished compaction summary stands for everything before it: from there on the history is
// the compaction's question, the summary, and the messages the compaction kept as they were (from
// its part's tail_start_id up to the compaction).
func (h *histories) conversation(ctx context.Context, sessionID, upTo string) (conversation, error) {
	prefix := h.take(sessionID)
	if prefix != nil {
		n, err := h.db.CountMessagesBefore(ctx, sessionID, prefix.created, prefix.id)
		if err != nil {
			return conversation{}, err
		}
		if n != prefix.count {
			h.logger.Warn("history: messages appeared among those already read; reading them all again", "session", sessionID)
			prefix = nil
		}
	}
	if prefix == nil {
		prefix = &historyPrefix{users: map[string]bool{}, starts: map[string]int{}, cache: &provider.EncodeCache{}}
	}
	msgs, parts, err := h.db.ListMessages(ctx, store.MessageQuery{SessionID: sessionID, FromCreated: prefix.created, FromID: prefix.id})
	if err != nil {
		return conversation{}, err
	}
	// Three-index slice: appending to out never writes into the kept prefix's array.
	out := prefix.msgs[:len(prefix.msgs):len(prefix.msgs)]
	// The turn owns the prefix it took, so its maps are extended in place rather than copied (a
	// copy per turn costs what the whole history holds). Once upTo is reached, starts only gains
	// upTo itself, at len(next.msgs), which is where the next turn puts it again.
	starts := prefix.starts
	summarized := prefix.summarized
	tails := map[string]string{} // compaction user message -> the first message it keeps
	since := map[string]bool{}   // user messages included after the prefix
	reached := false
	at := -1
	var next *historyPrefix
	for i, m := range msgs {
		wp, err := decodeWithParts(m, parts[m.ID])
		if err != nil {
			return conversation{}, err
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
				next = &historyPrefix{msgs: out[:len(out):len(out)], users: prefix.users, starts: starts, summarized: summarized,
					count: prefix.count + i, created: m.Created, id: m.ID, cache: prefix.cache}
				reached = true
				at = len(out)
			}
			for _, p := range wp.Parts {
				if p.Type == "compaction" {
					tails[wp.Info.ID] = p.TailStartID
				}
			}
			since[wp.Info.ID] = true
			starts[wp.Info.ID] = len(out)
			out = append(out, userMessage(wp.Parts))
		case RoleAssistant:
			if !prefix.users[wp.Info.ParentID] && !since[wp.Info.ParentID] {
				continue
			}
			if summarizes(wp.Info) && !reached {
				out, starts = summarize(out, starts, wp.Info.ParentID, tails[wp.Info.ParentID], wp.Parts)
				summarized = 2
				continue
			}
			out = appendStep(out, wp.Parts)
		}
	}
	if next != nil {
		h.put(sessionID, next)
	}
	if at < 0 {
		at = len(out)
	}
	return conversation{msgs: out, at: at, summarized: summarized, cache: prefix.cache}, nil
}

// summarize replaces a history by a compaction's summary: the compaction's question (the user
// message compaction, where it starts in out), the summary, then the messages from tail up to the
// compaction as they were. starts is renumbered for what is left.
func summarize(out []provider.Message, starts map[string]int, compaction, tail string, parts []Part) ([]provider.Message, map[string]int) {
	end, ok := starts[compaction]
	if !ok {
		return out, starts
	}
	from := end
	if i, ok := starts[tail]; ok && tail != "" && i < end {
		from = i
	}
	next := []provider.Message{out[end]}
	next = appendStep(next, parts)
	if len(next) == 1 {
		next = append(next, provider.Message{Role: provider.RoleAssistant})
	}
	renumbered := map[string]int{}
	for u, i := range starts {
		if i >= from && i < end {
			renumbered[u] = i - from + len(next)
		}
	}
	next = append(next, out[from:end]...)
	return next, renumbered
}

// userMessage is a user message's text and attached files as one provider message; a compaction
// reads as SummaryQuestion. An image or a PDF becomes an attachment, read from its URL when the
// message is sent (withAttachments); any other file is named in the text, after the synthetic part
// that carries its content.
func userMessage(parts []Part) provider.Message {
	var attachments []provider.Attachment
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
			if sentAsContent(p.Mime) {
				attachments = append(attachments, provider.Attachment{Mime: p.Mime, Filename: p.Filename, URL: p.URL})
				continue
			}
			where := p.URL
			if strings.HasPrefix(where, "data:") {
				where = "(pasted)" // its text is in the synthetic part before it
			}
			b.WriteString("\n[attached file: " + p.Filename + " (" + p.Mime + ") " + where + "]")
		case "compaction":
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(provider.SummaryQuestion)
		}
	}
	return provider.Message{Role: provider.RoleUser, Text: b.String(), Attachments: attachments}
}
