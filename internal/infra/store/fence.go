package store

import (
	"context"
	"database/sql"
	"errors"
)

// fenced runs write, a write of rows that belong to session sessionID. When ctx carries a fence
// (WithFence) for that session, on PostgreSQL, the write runs in a transaction that first checks,
// sharing a lock on the session's owner row until the commit, that the fence's node still owns
// the session under the fence's epoch: a TakeOver waits for the write to commit, and a write after
// it gets ErrFenced. Inside Tx the check is made once per session, in that transaction.
func (s *Queries) fenced(ctx context.Context, sessionID string, write func(q *Queries) error) error {
	l, ok := FenceOf(ctx)
	if !ok || s.db.dialect != postgresDialect || l.SessionID != sessionID {
		return write(s)
	}
	if s.tx != nil {
		if err := s.checkFence(ctx, l); err != nil {
			return err
		}
		return write(s)
	}
	return s.db.Tx(ctx, func(tx Tx) error {
		q := tx.(*Queries)
		if err := q.checkFence(ctx, l); err != nil {
			return err
		}
		return write(q)
	})
}

// checkFence returns ErrFenced unless l is still its session's lease (in the transaction s runs).
func (s *Queries) checkFence(ctx context.Context, l SessionLease) error {
	if s.fences[l.SessionID] == l {
		return nil
	}
	var epoch int64
	err := s.queryRow(ctx, `SELECT epoch FROM session_owners WHERE session_id = $1 AND node = $2 FOR SHARE`, l.SessionID, l.Node).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) || err == nil && epoch != l.Epoch {
		return ErrFenced
	}
	if err != nil {
		return wrap("check the session lease", err)
	}
	if s.fences == nil {
		s.fences = map[string]SessionLease{}
	}
	s.fences[l.SessionID] = l
	return nil
}
