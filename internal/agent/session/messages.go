package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// messageLog reads a session's conversation: its stored messages and parts, with the parts a model
// is streaming now (live) that are not stored yet.
type messageLog struct {
	rows sessionRows
	db   store.Messages
	live *liveSteps
}

// Messages returns a page of a session's messages, oldest first, and a cursor to the older ones.
func (l messageLog) Messages(ctx context.Context, sessionID string, in MessagesInput) (Page[WithParts], error) {
	if _, err := l.rows.Get(ctx, sessionID); err != nil {
		return Page[WithParts]{}, err
	}
	return l.messages(ctx, sessionID, in)
}

// messages is Messages for callers that already know the session exists.
func (l messageLog) messages(ctx context.Context, sessionID string, in MessagesInput) (Page[WithParts], error) {
	msgs, parts, next, err := l.messageRows(ctx, l.db, sessionID, in)
	if err != nil {
		return Page[WithParts]{}, err
	}
	live := l.live.parts(sessionID)
	page := Page[WithParts]{NextCursor: next, Items: make([]WithParts, 0, len(msgs))}
	for _, m := range msgs {
		wp, err := decodeWithParts(m, parts[m.ID])
		if err != nil {
			return Page[WithParts]{}, err
		}
		for i, row := range parts[m.ID] {
			if p, ok := l.live.runningTool(sessionID, row); ok && i < len(wp.Parts) && wp.Parts[i].ID == p.ID {
				wp.Parts[i] = p
			}
		}
		for _, p := range live[m.ID] {
			if !storedHas(parts[m.ID], p.ID) {
				wp.Parts = append(wp.Parts, p)
			}
		}
		page.Items = append(page.Items, wp)
	}
	return page, nil
}

// MessagesJSON is Messages encoded for the wire, a JSON array of {info, parts}: the stored
// documents are passed through as they are, never decoded and encoded again.
func (l messageLog) MessagesJSON(ctx context.Context, sessionID string, in MessagesInput) (body []byte, nextCursor string, err error) {
	if err := l.exists(ctx, sessionID); err != nil {
		return nil, "", err
	}
	msgs, parts, next, err := l.messageRows(ctx, l.db, sessionID, in)
	if err != nil {
		return nil, "", err
	}
	// The parts a model is streaming right now, with the text announced so far.
	for mid, live := range l.live.parts(sessionID) {
		if parts == nil {
			parts = map[string][]store.Part{}
		}
		for _, p := range live {
			if storedHas(parts[mid], p.ID) {
				continue
			}
			data, err := json.Marshal(p)
			if err != nil {
				return nil, "", err
			}
			parts[mid] = append(parts[mid], store.Part{ID: p.ID, MessageID: mid, SessionID: sessionID, Data: data})
		}
	}
	// Running tools with the live output announced so far (the rows may be shared: copied first).
	for mid, rows := range parts {
		for i, row := range rows {
			if p, ok := l.live.runningTool(sessionID, row); ok {
				data, err := json.Marshal(p)
				if err != nil {
					return nil, "", err
				}
				rows = slices.Clone(rows)
				rows[i].Data = data
				parts[mid] = rows
			}
		}
	}
	size := 2
	for _, m := range msgs {
		size += len(m.Data) + len(`{"info":,"parts":[]},`)
		for _, p := range parts[m.ID] {
			size += len(p.Data) + 1
		}
	}
	body = make([]byte, 0, size)
	body = append(body, '[')
	for i, m := range msgs {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"info":`...)
		body = append(body, m.Data...)
		body = append(body, `,"parts":[`...)
		for j, p := range parts[m.ID] {
			if j > 0 {
				body = append(body, ',')
			}
			body = append(body, p.Data...)
		}
		body = append(body, "]}"...)
	}
	return append(body, ']'), next, nil
}

// exists checks a session ID and that the session is stored, without decoding it.
func (l messageLog) exists(ctx context.Context, sessionID string) error {
	if !id.Valid(id.Session, sessionID) {
		return errs.E(errs.Invalid, "malformed session ID %q", sessionID)
	}
	_, err := l.rows.db.GetSession(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return errs.E(errs.NotFound, "Session not found: %s", sessionID)
	}
	return err
}

// messageRows reads one page of stored messages and their parts, and the cursor to the older ones.
func (l messageLog) messageRows(ctx context.Context, q store.Messages, sessionID string, in MessagesInput) ([]store.Message, map[string][]store.Part, string, error) {
	if in.Limit < 0 {
		return nil, nil, "", errs.E(errs.Invalid, "limit: must not be negative")
	}
	mq := store.MessageQuery{SessionID: sessionID}
	if in.Limit > 0 {
		mq.Limit = in.Limit + 1
	}
	if in.Before != "" {
		var c messageCursor
		if err := decodeCursor(in.Before, &c); err != nil || !id.Valid(id.Message, c.ID) {
			return nil, nil, "", errs.Named(errs.Invalid, "InvalidCursorError", "before: not a cursor this server issued")
		}
		mq.BeforeCreated, mq.BeforeID = c.Created, c.ID
	}
	msgs, parts, err := q.ListMessages(ctx, mq)
	if err != nil {
		return nil, nil, "", err
	}
	next := ""
	if in.Limit > 0 && len(msgs) > in.Limit {
		msgs = msgs[len(msgs)-in.Limit:]
		next = encodeCursor(messageCursor{ID: msgs[0].ID, Created: msgs[0].Created})
	}
	return msgs, parts, next, nil
}

// Message returns one message with its parts.
func (l messageLog) Message(ctx context.Context, sessionID, messageID string) (WithParts, error) {
	if _, err := l.rows.Get(ctx, sessionID); err != nil {
		return WithParts{}, err
	}
	if !id.Valid(id.Message, messageID) {
		return WithParts{}, errs.E(errs.Invalid, "malformed message ID %q", messageID)
	}
	m, parts, err := l.db.GetMessage(ctx, sessionID, messageID)
	if errors.Is(err, store.ErrNotFound) {
		return WithParts{}, errs.Named(errs.NotFound, "MessageNotFoundError", "Message not found: %s", messageID)
	}
	if err != nil {
		return WithParts{}, err
	}
	return decodeWithParts(m, parts)
}

func decodeWithParts(m store.Message, rows []store.Part) (WithParts, error) {
	var wp WithParts
	if err := json.Unmarshal(m.Data, &wp.Info); err != nil {
		return WithParts{}, fmt.Errorf("session: decode message %s: %w", m.ID, err)
	}
	if wp.Info.Summary != nil {
		fillLegacyPatches(m.Data, wp.Info.Summary.Diffs)
	}
	wp.Parts = make([]Part, 0, len(rows))
	for _, r := range rows {
		var p Part
		if err := json.Unmarshal(r.Data, &p); err != nil {
			return WithParts{}, fmt.Errorf("session: decode part %s: %w", r.ID, err)
		}
		wp.Parts = append(wp.Parts, p)
	}
	return wp, nil
}

func putMessage(ctx context.Context, q store.Messages, m Message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return q.PutMessage(ctx, store.Message{ID: m.ID, SessionID: m.SessionID, Created: m.Time.Created, Data: data})
}

func putPart(ctx context.Context, q store.Messages, p Part) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return q.PutPart(ctx, store.Part{ID: p.ID, MessageID: p.MessageID, SessionID: p.SessionID, Data: data})
}
