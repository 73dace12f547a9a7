package store

import "context"

// PendingRequest is a request waiting for a person, stored while it waits.
type PendingRequest struct {
	ID        string
	Kind      string // "permission"
	SessionID string
	Created   int64
	Data      []byte // the owning package's document
}

// PutPending stores (or replaces) a waiting request.
func (s *Queries) PutPending(ctx context.Context, r PendingRequest) error {
	_, err := s.exec(ctx, `INSERT INTO pending_requests (id, kind, session_id, created, data) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET data = excluded.data`, r.ID, r.Kind, r.SessionID, r.Created, r.Data)
	return wrap("put pending request", err)
}

// DeletePending forgets a request that has been resolved; an unknown ID is not an error.
func (s *Queries) DeletePending(ctx context.Context, id string) error {
	_, err := s.exec(ctx, `DELETE FROM pending_requests WHERE id = ?`, id)
	return wrap("delete pending request", err)
}

// ListPending returns the waiting requests of a kind, oldest first.
func (s *Queries) ListPending(ctx context.Context, kind string) ([]PendingRequest, error) {
	rows, err := s.query(ctx, `SELECT id, kind, session_id, created, data FROM pending_requests WHERE kind = ? ORDER BY created, id`, kind)
	if err != nil {
		return nil, wrap("list pending requests", err)
	}
	defer rows.Close()
	var out []PendingRequest
	for rows.Next() {
		var r PendingRequest
		if err := rows.Scan(&r.ID, &r.Kind, &r.SessionID, &r.Created, &r.Data); err != nil {
			return nil, wrap("list pending requests", err)
		}
		out = append(out, r)
	}
	return out, wrap("list pending requests", rows.Err())
}
