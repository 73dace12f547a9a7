package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Fork copies a session, up to but not including MessageID when given, into a new session titled
// "<title> (fork #n)". As OpenCode, the fork is not a child of the original.
func (s *Service) Fork(ctx context.Context, sessionID string, in ForkInput) (Session, error) {
	src, err := s.Get(ctx, sessionID)
	if err != nil {
		return Session{}, err
	}
	if in.MessageID != "" && !id.Valid(id.Message, in.MessageID) {
		return Session{}, errs.E(errs.Invalid, "messageID: malformed message ID %q", in.MessageID)
	}
	msgs, parts, err := s.db.ListMessages(ctx, store.MessageQuery{SessionID: sessionID})
	if err != nil {
		return Session{}, err
	}
	if in.MessageID != "" {
		cut := -1
		for i, m := range msgs {
			if m.ID == in.MessageID {
				cut = i
			}
		}
		if cut < 0 {
			return Session{}, errs.Named(errs.NotFound, "MessageNotFoundError", "Message not found: %s", in.MessageID)
		}
		msgs = msgs[:cut]
	}
	in2 := CreateInput{Title: s.forkTitle(ctx, src), Agent: src.Agent, Model: src.Model, Permission: src.Permission}
	now := s.nowMS()
	fork := Session{
		ID: s.ids.NewDescending(id.Session), Slug: slug(), ProjectID: s.ProjectID(ctx, src.Directory), Directory: src.Directory,
		Title: in2.Title, Agent: in2.Agent, Model: in2.Model, Version: s.version, Permission: in2.Permission,
		Time: SessionTime{Created: now, Updated: now},
	}
	// The fork and every copied message and part are one transaction: a failure leaves no half fork.
	err = s.db.Tx(ctx, func(q store.Tx) error {
		if err := s.create(ctx, q, fork, false); err != nil {
			return err
		}
		// Copy with fresh IDs, keeping order: IDs from one Source are ascending.
		msgIDs := make(map[string]string, len(msgs))
		for _, m := range msgs {
			wp, err := decodeWithParts(m, parts[m.ID])
			if err != nil {
				return err
			}
			newID := s.ids.New(id.Message)
			msgIDs[m.ID] = newID
			wp.Info.ID, wp.Info.SessionID = newID, fork.ID
			if wp.Info.ParentID != "" {
				wp.Info.ParentID = msgIDs[wp.Info.ParentID]
			}
			if err := putMessage(ctx, q, wp.Info); err != nil {
				return err
			}
			for _, p := range wp.Parts {
				p.ID, p.MessageID, p.SessionID = s.ids.New(id.Part), newID, fork.ID
				if err := putPart(ctx, q, p); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	s.publish(fork.Directory, "session.created", map[string]any{"sessionID": fork.ID, "info": fork})
	return fork, nil
}

func (s *Service) forkTitle(ctx context.Context, src Session) string {
	base := src.Title
	if i := strings.LastIndex(base, " (fork #"); i > 0 && strings.HasSuffix(base, ")") {
		base = base[:i]
	}
	n := 1
	if rows, err := s.db.ListSessions(ctx, store.SessionQuery{Directory: src.Directory, Search: base + " (fork #"}); err == nil {
		n += len(rows)
	}
	return fmt.Sprintf("%s (fork #%d)", base, n)
}
