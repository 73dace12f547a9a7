package store

import (
	"context"
	"database/sql"
	"errors"
)

// PutShare stores the read-only link of a session, replacing an earlier one.
func (s *Queries) PutShare(ctx context.Context, sessionID string, tokenHash []byte, created int64) error {
	_, err := s.exec(ctx, `INSERT INTO session_shares (session_id, token_hash, created) VALUES (?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET token_hash = excluded.token_hash, created = excluded.created`,
		sessionID, tokenHash, created)
	return wrap("put share", err)
}

// SharedSession returns the session a link's token hash opens, or ErrNotFound.
func (s *Queries) SharedSession(ctx context.Context, tokenHash []byte) (string, error) {
	var sessionID string
	err := s.queryRow(ctx, `SELECT session_id FROM session_shares WHERE token_hash = ?`, tokenHash).Scan(&sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return sessionID, wrap("shared session", err)
}

// DeleteShare revokes a session's link; a session without one is not an error.
func (s *Queries) DeleteShare(ctx context.Context, sessionID string) error {
	_, err := s.exec(ctx, `DELETE FROM session_shares WHERE session_id = ?`, sessionID)
	return wrap("delete share", err)
}
