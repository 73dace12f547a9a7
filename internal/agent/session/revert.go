package session

import (
	"context"
	"errors"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/snapshot"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// RevertInput is the body of POST /session/{id}/revert.
type RevertInput struct {
	MessageID string `json:"messageID" required:"true" pattern:"^msg"`
	PartID    string `json:"partID,omitempty" pattern:"^prt"`
}

// Revert undoes a session from a message (or one of its parts) on, as OpenCode's session.revert:
// the files every later step changed are put back as they were before it, and the session's
// revert field marks the point, with a snapshot of the files as they were (so that Unrevert can
// bring them back) and the diff the revert made. The messages stay until the next prompt, which
// drops them; until then the session can be unreverted, or reverted to another point. Refused
// while the session is busy.
func (s *Service) Revert(ctx context.Context, sessionID string, in RevertInput) (Session, error) {
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return Session{}, err
	}
	if !id.Valid(id.Message, in.MessageID) {
		return Session{}, errs.E(errs.Invalid, "messageID: malformed message ID %q", in.MessageID)
	}
	if in.PartID != "" && !id.Valid(id.Part, in.PartID) {
		return Session{}, errs.E(errs.Invalid, "partID: malformed part ID %q", in.PartID)
	}
	var out Session
	err = s.exclusive(sessionID, func() error {
		msgs, err := s.allMessages(ctx, sessionID)
		if err != nil {
			return err
		}
		rv, patches, err := revertPoint(msgs, in)
		if err != nil {
			return err
		}
		sess, err = s.Get(ctx, sessionID)
		if err != nil {
			return err
		}
		worktree := Worktree(sess.Directory)
		// A file behind a symbolic link out of the project refuses the whole revert before any file
		// is touched.
		var every []string
		for _, p := range patches {
			every = append(every, p.Files...)
		}
		if err := snapshot.CheckRevert(worktree, every); err != nil {
			return err
		}
		if sess.Revert != nil && sess.Revert.Snapshot != "" {
			// Moving an existing revert point: start again from the files as they were before it.
			rv.Snapshot = sess.Revert.Snapshot
			if err := s.snaps.store.Restore(ctx, worktree, rv.Snapshot); err != nil {
				return err
			}
		} else if sess.Revert == nil {
			rv.Snapshot = s.snaps.track(ctx, sess.Directory)
		}
		if s.snaps.store != nil {
			// Each file goes back to its state before the first step after the point that changed it.
			seen := map[string]bool{}
			for _, p := range patches {
				var files []string
				for _, f := range p.Files {
					if !seen[f] {
						seen[f] = true
						files = append(files, f)
					}
				}
				if err := s.snaps.store.Revert(ctx, worktree, p.Hash, files); err != nil {
					return err
				}
			}
			if rv.Snapshot != "" {
				if now := s.snaps.track(ctx, sess.Directory); now != "" {
					if rv.Diff, err = s.snaps.store.Patch(ctx, worktree, rv.Snapshot, now); err != nil {
						return err
					}
				}
			}
		}
		out, err = s.mutate(ctx, sessionID, func(x *Session) { x.Revert = &rv })
		return err
	})
	return out, snapshotError(err)
}

// snapshotError names a snapshot that is no longer kept as a conflict a client can show.
func snapshotError(err error) error {
	if errors.Is(err, snapshot.ErrGone) {
		return errs.Named(errs.Conflict, "SnapshotGoneError", "%s", err.Error())
	}
	if errors.Is(err, snapshot.ErrLinkOutside) {
		return errs.Named(errs.Conflict, "RevertLinkError", "nothing was reverted: %s", strings.TrimPrefix(err.Error(), snapshot.ErrLinkOutside.Error()+": "))
	}
	return err
}

// Unrevert brings back what the session's revert undid: the files as they were before it, and
// every message. Refused while the session is busy; a session that is not reverted is returned
// as it is.
func (s *Service) Unrevert(ctx context.Context, sessionID string) (Session, error) {
	if _, err := s.Get(ctx, sessionID); err != nil {
		return Session{}, err
	}
	var out Session
	err := s.exclusive(sessionID, func() error {
		sess, err := s.Get(ctx, sessionID)
		if err != nil {
			return err
		}
		if sess.Revert == nil {
			out = sess
			return nil
		}
		if sess.Revert.Snapshot != "" && s.snaps.store != nil {
			if err := s.snaps.store.Restore(ctx, Worktree(sess.Directory), sess.Revert.Snapshot); err != nil {
				return err
			}
		}
		out, err = s.mutate(ctx, sessionID, func(x *Session) { x.Revert = nil })
		return err
	})
	return out, snapshotError(err)
}

func (s *Service) allMessages(ctx context.Context, sessionID string) ([]WithParts, error) {
	return listAll(ctx, s.db, sessionID)
}

func listAll(ctx context.Context, q store.Messages, sessionID string) ([]WithParts, error) {
	rows, parts, err := q.ListMessages(ctx, store.MessageQuery{SessionID: sessionID})
	if err != nil {
		return nil, err
	}
	out := make([]WithParts, 0, len(rows))
	for _, m := range rows {
		wp, err := decodeWithParts(m, parts[m.ID])
		if err != nil {
			return nil, err
		}
		out = append(out, wp)
	}
	return out, nil
}

// revertPoint finds where a revert starts and the patch parts after it, as OpenCode does: a part
// that leaves no text or tool part before it in its message reverts the whole message, and a
// whole message is reverted from its user message on.
func revertPoint(msgs []WithParts, in RevertInput) (Revert, []Part, error) {
	var rv *Revert
	var patches []Part
	lastUser := ""
	found := false
	for _, m := range msgs {
		if m.Info.Role == RoleUser {
			lastUser = m.Info.ID
		}
		if m.Info.ID == in.MessageID {
			found = true
		}
		useful := false
		for _, p := range m.Parts {
			if rv != nil {
				if p.Type == "patch" {
					patches = append(patches, p)
				}
				continue
			}
			if (m.Info.ID == in.MessageID && in.PartID == "") || (in.PartID != "" && p.ID == in.PartID && m.Info.ID == in.MessageID) {
				rv = &Revert{MessageID: m.Info.ID}
				if in.PartID != "" && useful {
					rv.PartID = in.PartID
				} else if lastUser != "" {
					rv.MessageID = lastUser
				}
			}
			useful = useful || p.Type == "text" || p.Type == "tool"
		}
	}
	switch {
	case !found:
		return Revert{}, nil, errs.Named(errs.NotFound, "MessageNotFoundError", "Message not found: %s", in.MessageID)
	case rv == nil && in.PartID != "":
		return Revert{}, nil, errs.Named(errs.NotFound, "NotFoundError", "Part not found: %s", in.PartID)
	case rv == nil:
		return Revert{}, nil, errs.E(errs.Invalid, "message %s has no parts to revert", in.MessageID)
	}
	return *rv, patches, nil
}

// removed is what dropping a revert removed, announced once the write has committed.
type removed struct {
	messages []string
	parts    [][2]string // message ID, part ID
}

// commitRevert makes a session's pending revert permanent inside the caller's transaction, which
// must also clear the session's revert field: what a new prompt (or shell command) does first.
// The caller announces what was removed (announceRemoved) and drops the kept history once the
// write has committed.
func commitRevert(ctx context.Context, q store.Tx, sessionID string) (removed, error) {
	sess, err := get(ctx, q, sessionID)
	if err != nil || sess.Revert == nil {
		return removed{}, err
	}
	return dropReverted(ctx, q, sess)
}

// dropReverted removes, in the caller's transaction, the messages (and parts) a session's revert
// hid, and recomputes the session's diff from what is left: a prompt after a revert makes it
// permanent, as OpenCode's cleanup does.
func dropReverted(ctx context.Context, q store.Tx, sess Session) (removed, error) {
	var out removed
	rv := sess.Revert
	msgs, err := listAll(ctx, q, sess.ID)
	if err != nil {
		return out, err
	}
	cut := -1
	for i, m := range msgs {
		if m.Info.ID == rv.MessageID {
			cut = i
		}
	}
	if cut < 0 {
		return out, nil // the point was deleted meanwhile: nothing is hidden
	}
	kept := msgs[:cut]
	if rv.PartID != "" {
		m := msgs[cut]
		keep := m.Parts
		for j, p := range m.Parts {
			if p.ID == rv.PartID {
				keep = m.Parts[:j]
				for _, d := range m.Parts[j:] {
					if err := q.DeletePart(ctx, sess.ID, m.Info.ID, d.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
						return out, err
					}
					out.parts = append(out.parts, [2]string{m.Info.ID, d.ID})
				}
				break
			}
		}
		kept = append(kept, WithParts{Info: m.Info, Parts: keep})
		cut++
	}
	for _, m := range msgs[cut:] {
		if err := q.DeleteMessage(ctx, sess.ID, m.Info.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return out, err
		}
		out.messages = append(out.messages, m.Info.ID)
	}
	diff := map[string]fileChange{}
	for _, m := range kept {
		foldDiffs(diff, m.Parts)
	}
	return out, storeDiff(ctx, q, sess.ID, diff)
}

func (s *Service) announceRemoved(dir, sessionID string, r removed) {
	for _, p := range r.parts {
		s.publish(dir, "message.part.removed", map[string]any{"sessionID": sessionID, "messageID": p[0], "partID": p[1]})
	}
	for _, m := range r.messages {
		s.publish(dir, "message.removed", map[string]any{"sessionID": sessionID, "messageID": m})
	}
}
