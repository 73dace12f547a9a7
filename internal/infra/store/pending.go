package store

import (
	"context"
	"database/sql"
	"errors"
)

// PendingRequest is a request waiting for a person, stored while it waits.
type PendingRequest struct {
	ID        string
	Kind      string // "permission"
	SessionID string
	Created   int64
	Data      []byte // the owning package's document
	// State is PendingWaiting, or PendingClaimed once an answer is recorded by ClaimPending
	// (several nodes); the fields below hold that answer.
	State      string
	Reply      []byte
	AnsweredBy string
	AnsweredAt int64
}

// PutPending stores (or replaces) a waiting request.
func (s *Queries) PutPending(ctx context.Context, r PendingRequest) error {
	return s.fenced(ctx, r.SessionID, func(q *Queries) error {
		_, err := q.exec(ctx, `INSERT INTO pending_requests (id, kind, session_id, created, data) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET data = excluded.data`, r.ID, r.Kind, r.SessionID, r.Created, r.Data)
		return wrap("put pending request", err)
	})
}

// DeletePending forgets a request that has been resolved; an unknown ID is not an error.
func (s *Queries) DeletePending(ctx context.Context, id string) error {
	_, err := s.exec(ctx, `DELETE FROM pending_requests WHERE id = ?`, id)
	return wrap("delete pending request", err)
}

// ListPending returns the requests of a kind not yet finished (waiting or claimed), oldest first.
func (s *Queries) ListPending(ctx context.Context, kind string) ([]PendingRequest, error) {
	rows, err := s.query(ctx, `SELECT `+pendingColumns+` FROM pending_requests WHERE kind = ? AND state <> 'done' ORDER BY created, id`, kind)
	if err != nil {
		return nil, wrap("list pending requests", err)
	}
	defer rows.Close()
	var out []PendingRequest
	for rows.Next() {
		var r PendingRequest
		if err := r.scan(rows); err != nil {
			return nil, wrap("list pending requests", err)
		}
		out = append(out, r)
	}
	return out, wrap("list pending requests", rows.Err())
}

const pendingColumns = `id, kind, session_id, created, data, state, reply, answered_by, answered_at`

func (r *PendingRequest) scan(row interface{ Scan(...any) error }) error {
	return row.Scan(&r.ID, &r.Kind, &r.SessionID, &r.Created, &r.Data, &r.State, &r.Reply, &r.AnsweredBy, &r.AnsweredAt)
}

// GetPending returns one stored request, or ErrNotFound.
func (s *Queries) GetPending(ctx context.Context, id string) (PendingRequest, error) {
	var r PendingRequest
	err := r.scan(s.queryRow(ctx, `SELECT `+pendingColumns+` FROM pending_requests WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return PendingRequest{}, ErrNotFound
	}
	return r, wrap("get pending request", err)
}

// ClaimPending records c as the answer of a request still waiting; the first claim wins.
func (s *Queries) ClaimPending(ctx context.Context, id string, c PendingClaim) (PendingRequest, bool, error) {
	var r PendingRequest
	err := r.scan(s.queryRow(ctx, `UPDATE pending_requests SET state = 'claimed', reply = ?, answered_by = ?, answered_at = ?
		WHERE id = ? AND state = 'pending' RETURNING `+pendingColumns, c.Reply, c.By, c.At, id))
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return PendingRequest{}, false, wrap("claim pending request", err)
	}
	r, err = s.GetPending(ctx, id)
	return r, false, err
}

// FinishPending marks a resolved request done instead of deleting it: on a database several nodes
// share, a late answer arriving at another node still finds who answered first. Done requests are
// never listed; PrunePending deletes them once they are old. at (unix ms) dates a request that was
// never claimed (a timeout, a cancel).
func (s *Queries) FinishPending(ctx context.Context, id string, at int64) error {
	_, err := s.exec(ctx, `UPDATE pending_requests SET state = 'done',
		answered_at = CASE WHEN answered_at = 0 THEN ? ELSE answered_at END WHERE id = ?`, at, id)
	return wrap("finish pending request", err)
}

// PrunePending deletes the requests finished before the given time (unix ms); it returns how many.
func (s *Queries) PrunePending(ctx context.Context, before int64) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM pending_requests WHERE state = 'done' AND answered_at < ?`, before)
	if err != nil {
		return 0, wrap("prune pending requests", err)
	}
	n, err := res.RowsAffected()
	return n, wrap("prune pending requests", err)
}

// SessionFilter selects the sessions a recovery deals with (on several nodes: the ones this node
// runs); nil selects every session.
type SessionFilter func(sessionID string) bool

// Has reports whether the filter selects the session.
func (f SessionFilter) Has(sessionID string) bool { return f == nil || f(sessionID) }
