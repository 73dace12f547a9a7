package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// busyError is the 409 of an edit while a turn runs or waits: OpenCode's SessionBusyError, in
// tandem's one error shape.
func busyError(sessionID string) error {
	return errs.Named(errs.Conflict, "SessionBusyError", "Session %s is busy: abort its turn or wait until it is idle, then try again", sessionID).
		With("sessionID", sessionID)
}

// exclusive runs fn while the session has no turn running or queued, and refuses with busyError
// otherwise. A prompt that arrives while fn runs is queued and starts once fn returns.
func (s *Service) exclusive(sessionID string, fn func() error) error {
	if s.agent == nil {
		defer s.histories.drop(sessionID)
		return fn()
	}
	// The edit holds the session's runner: a prompt queues behind it, as behind a turn.
	if err := s.runs.hold(sessionID, true); err != nil {
		return err
	}
	err := fn()
	// fn may have changed messages the kept history holds: the next turn reads them all again.
	s.histories.drop(sessionID)
	// Prompts that arrived meanwhile run now, as they would after a turn.
	s.runs.release(sessionID)
	return err
}

// DeleteMessage removes a message and its parts in one write, as OpenCode's session.deleteMessage:
// refused while the session is busy; message.removed announces it.
func (s *Service) DeleteMessage(ctx context.Context, sessionID, messageID string) error {
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	if !id.Valid(id.Message, messageID) {
		return errs.E(errs.Invalid, "malformed message ID %q", messageID)
	}
	return s.exclusive(sessionID, func() error {
		err := s.db.Tx(ctx, func(q store.Tx) error { return q.DeleteMessage(ctx, sessionID, messageID) })
		if errors.Is(err, store.ErrNotFound) {
			return errs.Named(errs.NotFound, "MessageNotFoundError", "Message not found: %s", messageID)
		}
		if err != nil {
			return err
		}
		s.publish(sess.Directory, "message.removed", map[string]any{"sessionID": sessionID, "messageID": messageID})
		return nil
	})
}

// DeletePart removes one part of a message, as OpenCode's part.delete: refused while the session is
// busy; message.part.removed announces it.
func (s *Service) DeletePart(ctx context.Context, sessionID, messageID, partID string) error {
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	if err := checkPartIDs(messageID, partID); err != nil {
		return err
	}
	return s.exclusive(sessionID, func() error {
		err := s.db.Tx(ctx, func(q store.Tx) error { return q.DeletePart(ctx, sessionID, messageID, partID) })
		if errors.Is(err, store.ErrNotFound) {
			return errs.Named(errs.NotFound, "NotFoundError", "Part not found: %s", partID)
		}
		if err != nil {
			return err
		}
		s.publish(sess.Directory, "message.part.removed", map[string]any{"sessionID": sessionID, "messageID": messageID, "partID": partID})
		return nil
	})
}

// UpdatePart replaces a part with p, as OpenCode's part.update: p names the same part as the path
// (empty IDs are taken from it) and keeps its type. Refused while the session is busy;
// message.part.updated announces the new part, which is returned.
func (s *Service) UpdatePart(ctx context.Context, sessionID, messageID, partID string, p Part) (Part, error) {
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return Part{}, err
	}
	if err := checkPartIDs(messageID, partID); err != nil {
		return Part{}, err
	}
	for _, f := range []struct{ name, got, want string }{
		{"id", p.ID, partID}, {"messageID", p.MessageID, messageID}, {"sessionID", p.SessionID, sessionID},
	} {
		if f.got != "" && f.got != f.want {
			return Part{}, errs.E(errs.Invalid, "%s: the body names %q, the path %q", f.name, f.got, f.want)
		}
	}
	p.ID, p.MessageID, p.SessionID = partID, messageID, sessionID
	switch {
	case p.Type == "":
		return Part{}, errs.E(errs.Invalid, "type: required")
	case (p.Type == "text" || p.Type == "reasoning") && p.Text == nil:
		return Part{}, errs.E(errs.Invalid, "text: required for a %s part", p.Type)
	case p.Type == "tool" && (p.State == nil || p.Tool == "" || p.CallID == ""):
		return Part{}, errs.E(errs.Invalid, "a tool part needs tool, callID and state")
	}
	err = s.exclusive(sessionID, func() error {
		return s.db.Tx(ctx, func(q store.Tx) error {
			_, rows, err := q.GetMessage(ctx, sessionID, messageID)
			if errors.Is(err, store.ErrNotFound) {
				return errs.Named(errs.NotFound, "MessageNotFoundError", "Message not found: %s", messageID)
			}
			if err != nil {
				return err
			}
			var old *Part
			for _, r := range rows {
				if r.ID == partID {
					old = &Part{}
					if err := json.Unmarshal(r.Data, old); err != nil {
						return fmt.Errorf("session: decode part %s: %w", r.ID, err)
					}
				}
			}
			if old == nil {
				return errs.Named(errs.NotFound, "NotFoundError", "Part not found: %s", partID)
			}
			if old.Type != p.Type {
				return errs.E(errs.Invalid, "type: a %s part cannot become a %s part", old.Type, p.Type)
			}
			return putPart(ctx, q, p)
		})
	})
	if err != nil {
		return Part{}, err
	}
	s.publishPart(sess.Directory, p)
	return p, nil
}

func checkPartIDs(messageID, partID string) error {
	if !id.Valid(id.Message, messageID) {
		return errs.E(errs.Invalid, "malformed message ID %q", messageID)
	}
	if !id.Valid(id.Part, partID) {
		return errs.E(errs.Invalid, "malformed part ID %q", partID)
	}
	return nil
}
