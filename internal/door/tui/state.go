package tui

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// conversation is the shown session's messages and their parts, kept up to date from events.
type conversation struct {
	msgs []*message
	byID map[string]*message
}

type message struct {
	info  session.Message
	parts []*session.Part
}

func newConversation(list []session.WithParts) *conversation {
	c := &conversation{byID: map[string]*message{}}
	for _, wp := range list {
		m := &message{info: wp.Info}
		for i := range wp.Parts {
			p := wp.Parts[i]
			m.parts = append(m.parts, &p)
		}
		c.msgs = append(c.msgs, m)
		c.byID[m.info.ID] = m
	}
	return c
}

// message finds or makes the message with this ID (a part may arrive before its message).
func (c *conversation) message(id, sessionID string) *message {
	if m, ok := c.byID[id]; ok {
		return m
	}
	m := &message{info: session.Message{ID: id, SessionID: sessionID, Role: session.Role("assistant")}}
	c.byID[id] = m
	c.msgs = append(c.msgs, m)
	// IDs are time-ordered: keep the messages in that order.
	sort.SliceStable(c.msgs, func(i, j int) bool { return c.msgs[i].info.ID < c.msgs[j].info.ID })
	return m
}

func (c *conversation) updateMessage(info session.Message) {
	c.message(info.ID, info.SessionID).info = info
}

func (c *conversation) removeMessage(id string) {
	delete(c.byID, id)
	c.msgs = slices.DeleteFunc(c.msgs, func(m *message) bool { return m.info.ID == id })
}

func (c *conversation) updatePart(p session.Part) {
	m := c.message(p.MessageID, p.SessionID)
	for i, q := range m.parts {
		if q.ID == p.ID {
			m.parts[i] = &p
			return
		}
	}
	m.parts = append(m.parts, &p)
	sort.SliceStable(m.parts, func(i, j int) bool { return m.parts[i].ID < m.parts[j].ID })
}

// appendDelta adds streamed text to a part; a part not seen yet is made.
func (c *conversation) appendDelta(sessionID, messageID, partID, delta string) {
	m := c.message(messageID, sessionID)
	for _, q := range m.parts {
		if q.ID == partID {
			t := ""
			if q.Text != nil {
				t = *q.Text
			}
			t += delta
			q.Text = &t
			return
		}
	}
	t := delta
	m.parts = append(m.parts, &session.Part{ID: partID, SessionID: sessionID, MessageID: messageID, Type: "text", Text: &t})
}

// appendOutput grows a running tool's live output by a delta that starts at offset (UTF-16 code
// units); one that starts past the end of this copy waits for the next whole part, which carries it.
func (c *conversation) appendOutput(sessionID, messageID, partID string, offset int, delta string) {
	m := c.message(messageID, sessionID)
	for _, q := range m.parts {
		if q.ID != partID || q.State == nil {
			continue
		}
		out, _ := q.State.Metadata["output"].(string)
		have := utf16Units(out)
		if offset > have {
			return
		}
		for skip := have - offset; skip > 0 && delta != ""; {
			r, size := utf8.DecodeRuneInString(delta)
			delta = delta[size:]
			skip -= utf16Units(string(r))
		}
		md := maps.Clone(q.State.Metadata)
		if md == nil {
			md = map[string]any{}
		}
		md["output"] = out + delta
		st := *q.State
		st.Metadata = md
		q.State = &st
		return
	}
}

// utf16Units is s's length as JavaScript counts it, the unit of a delta's offset.
func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func (c *conversation) removePart(messageID, partID string) {
	if m, ok := c.byID[messageID]; ok {
		m.parts = slices.DeleteFunc(m.parts, func(p *session.Part) bool { return p.ID == partID })
	}
}

// totals adds up the assistant messages' tokens and cost.
func (c *conversation) totals() (tokens int64, cost float64) {
	for _, m := range c.msgs {
		if m.info.Tokens != nil {
			t := m.info.Tokens
			tokens += t.Input + t.Output + t.Reasoning + t.Cache.Read + t.Cache.Write
		}
		if m.info.Cost != nil {
			cost += *m.info.Cost
		}
	}
	return tokens, cost
}

// item is one request waiting for a person: exactly one of the three is set.
type item struct {
	perm *api.PermissionRequest
	ques *api.QuestionRequest
	elic *client.Elicitation
}

func (it item) id() string {
	switch {
	case it.perm != nil:
		return it.perm.ID
	case it.ques != nil:
		return it.ques.ID
	default:
		return it.elic.ID
	}
}

func (it item) sessionID() string {
	switch {
	case it.perm != nil:
		return it.perm.SessionID
	case it.ques != nil:
		return it.ques.SessionID
	default:
		return it.elic.SessionID
	}
}

// under reports whether the request is one the person looking at session cur should see there:
// cur's own, or one of a subagent cur started (its parent or root is cur).
func (it item) under(cur string) bool {
	var parent, root string
	switch {
	case it.perm != nil:
		parent, root = it.perm.ParentSessionID, it.perm.RootSessionID
	case it.ques != nil:
		parent, root = it.ques.ParentSessionID, it.ques.RootSessionID
	default:
		parent, root = it.elic.ParentSessionID, it.elic.RootSessionID
	}
	return it.sessionID() == cur || (cur != "" && (parent == cur || root == cur))
}

func (it item) kind() string {
	switch {
	case it.perm != nil:
		return "approval"
	case it.ques != nil:
		return "question"
	case it.elic.Mode == "url":
		return "link"
	default:
		return "form"
	}
}

// inbox is every request waiting for a person, across sessions, oldest first.
type inbox struct{ items []item }

func (b *inbox) add(it item) {
	for i, x := range b.items {
		if x.id() == it.id() {
			b.items[i] = it
			return
		}
	}
	b.items = append(b.items, it)
}

func (b *inbox) remove(id string) bool {
	n := len(b.items)
	b.items = slices.DeleteFunc(b.items, func(x item) bool { return x.id() == id })
	return len(b.items) != n
}

func (b *inbox) get(id string) (item, bool) {
	for _, x := range b.items {
		if x.id() == id {
			return x, true
		}
	}
	return item{}, false
}

// count says how many wait in total and how many of those in other sessions than cur.
func (b *inbox) count(cur string) (total, elsewhere int) {
	for _, x := range b.items {
		total++
		if !x.under(cur) {
			elsewhere++
		}
	}
	return total, elsewhere
}

// replied is what every *.replied / *.rejected event carries that the TUI needs.
type replied struct {
	SessionID string     `json:"sessionID"`
	RequestID string     `json:"requestID"`
	ID        string     `json:"id"` // mcp.elicitation.replied
	Reply     string     `json:"reply"`
	Decision  string     `json:"decision"`
	Action    string     `json:"action"`
	Cause     string     `json:"cause"`
	Client    string     `json:"client"`
	Answers   [][]string `json:"answers"` // question.replied
}

func (r replied) requestID() string {
	if r.RequestID != "" {
		return r.RequestID
	}
	return r.ID
}

// what says in a few words how the request ended.
func (r replied) what() string {
	switch {
	case r.Decision != "":
		return r.Decision
	case r.Reply != "":
		return r.Reply
	case r.Action != "":
		return r.Action
	case len(r.Answers) > 0:
		each := make([]string, len(r.Answers))
		for i, a := range r.Answers {
			each[i] = strings.Join(a, ", ")
		}
		return strings.Join(each, "; ")
	}
	return ""
}

func decode[T any](raw json.RawMessage) (T, bool) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err == nil
}
