package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"tandem/errs"
	"tandem/store"
)

// A share is a read-only link to one session that tandem serves itself, at base/s/{token}: the
// browser UI in read-only mode for that session and nothing else. The token is 256 random bits;
// only its hash is stored, so the database alone does not open the link. Revoking deletes it.

// SharePath is where shared sessions are served; the token follows it.
const SharePath = "/s/"

// Share gives a session a read-only link under base (the server's URL as the client reached it),
// or returns the link it already has.
func (s *Service) Share(ctx context.Context, sessionID, base string) (Session, error) {
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return Session{}, err
	}
	if sess.Share != nil {
		return sess, nil
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24+)
	token := base64.RawURLEncoding.EncodeToString(raw)
	hash := sha256.Sum256([]byte(token))
	err = s.db.Tx(ctx, func(q store.Tx) error {
		if err := q.PutShare(ctx, sessionID, hash[:], s.nowMS()); err != nil {
			return err
		}
		sess, err = s.change(ctx, q, sessionID, func(x *Session) {
			x.Share = &Share{URL: strings.TrimSuffix(base, "/") + SharePath + token}
		})
		return err
	})
	if err != nil {
		return Session{}, err
	}
	s.announce(sess)
	return sess, nil
}

// Unshare revokes a session's link: it stops working at once.
func (s *Service) Unshare(ctx context.Context, sessionID string) (Session, error) {
	if _, err := s.Get(ctx, sessionID); err != nil {
		return Session{}, err
	}
	var sess Session
	err := s.db.Tx(ctx, func(q store.Tx) error {
		if err := q.DeleteShare(ctx, sessionID); err != nil {
			return err
		}
		var err error
		sess, err = s.change(ctx, q, sessionID, func(x *Session) { x.Share = nil })
		return err
	})
	if err != nil {
		return Session{}, err
	}
	s.announce(sess)
	return sess, nil
}

// Shared is the session a link's token opens, without what only its owner should see (the
// project's directory, the permission rules, client metadata). An unknown or revoked token is
// NotFound, the same answer as for a token that never existed.
func (s *Service) Shared(ctx context.Context, token string) (Session, error) {
	sess, err := s.shared(ctx, token)
	if err != nil {
		return Session{}, err
	}
	sess.Directory, sess.Permission, sess.Metadata = "", nil, nil
	return sess, nil
}

func (s *Service) shared(ctx context.Context, token string) (Session, error) {
	hash := sha256.Sum256([]byte(token))
	sessionID, err := s.db.SharedSession(ctx, hash[:])
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, errs.E(errs.NotFound, "this link does not exist or was revoked")
	}
	if err != nil {
		return Session{}, err
	}
	return s.Get(ctx, sessionID)
}
