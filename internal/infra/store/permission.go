package store

import (
	"context"
	"database/sql"
	"errors"
)

// Grant is a persisted answer: in a project, requests of a permission matching a pattern are
// allowed ("always") or refused ("deny-always") without asking.
type Grant struct {
	ID         string
	ProjectID  string
	Permission string
	Pattern    string
	Action     string // "allow" or "deny"; empty is "allow"
	SessionID  string
	RequestID  string
	Created    int64
}

// AddGrant stores a grant. A grant of the same project, permission and pattern with the same action
// is kept as it is; one with the other action is replaced (the later answer wins).
func (s *Queries) AddGrant(ctx context.Context, g Grant) error {
	if g.Action == "" {
		g.Action = "allow"
	}
	_, err := s.exec(ctx, `INSERT INTO permission_grants (id, project_id, permission, pattern, action, session_id, request_id, created)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_id, permission, pattern) DO UPDATE SET
		id = excluded.id, action = excluded.action, session_id = excluded.session_id, request_id = excluded.request_id, created = excluded.created
		WHERE permission_grants.action <> excluded.action`,
		g.ID, g.ProjectID, g.Permission, g.Pattern, g.Action, g.SessionID, g.RequestID, g.Created)
	return wrap("add grant", err)
}

// Grants lists grants, all projects when projectID is empty, oldest first.
func (s *Queries) Grants(ctx context.Context, projectID string) ([]Grant, error) {
	q := `SELECT id, project_id, permission, pattern, action, session_id, request_id, created FROM permission_grants`
	var args []any
	if projectID != "" {
		q += ` WHERE project_id = ?`
		args = append(args, projectID)
	}
	rows, err := s.query(ctx, q+` ORDER BY created, id`, args...)
	if err != nil {
		return nil, wrap("list grants", err)
	}
	defer rows.Close()
	var out []Grant
	for rows.Next() {
		var g Grant
		if err := rows.Scan(&g.ID, &g.ProjectID, &g.Permission, &g.Pattern, &g.Action, &g.SessionID, &g.RequestID, &g.Created); err != nil {
			return nil, wrap("list grants", err)
		}
		out = append(out, g)
	}
	return out, wrap("list grants", rows.Err())
}

// DeleteGrant removes a grant, or returns ErrNotFound.
func (s *Queries) DeleteGrant(ctx context.Context, id string) (Grant, error) {
	var g Grant
	err := s.queryRow(ctx, `DELETE FROM permission_grants WHERE id = ?
		RETURNING id, project_id, permission, pattern, action, session_id, request_id, created`, id).
		Scan(&g.ID, &g.ProjectID, &g.Permission, &g.Pattern, &g.Action, &g.SessionID, &g.RequestID, &g.Created)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Grant{}, ErrNotFound
		}
		return Grant{}, wrap("delete grant", err)
	}
	return g, nil
}

// Decision is one entry of the permission decision log.
type Decision struct {
	RequestID  string
	SessionID  string
	Directory  string
	Permission string
	Patterns   []byte // JSON array
	Reply      string
	Message    string
	Cause      string // reply | timeout | cancel
	Client     string
	Addr       string
	Asked      int64
	Decided    int64
}

// LogDecision appends to the decision log.
func (s *Queries) LogDecision(ctx context.Context, d Decision) error {
	_, err := s.exec(ctx, `INSERT INTO permission_decisions
		(request_id, session_id, directory, permission, patterns, reply, message, cause, client, addr, asked, decided)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (request_id) DO UPDATE SET session_id = excluded.session_id, directory = excluded.directory,
		permission = excluded.permission, patterns = excluded.patterns, reply = excluded.reply, message = excluded.message,
		cause = excluded.cause, client = excluded.client, addr = excluded.addr, asked = excluded.asked, decided = excluded.decided`,
		d.RequestID, d.SessionID, d.Directory, d.Permission, d.Patterns, d.Reply, d.Message, d.Cause, d.Client, d.Addr, d.Asked, d.Decided)
	return wrap("log decision", err)
}

// Decisions returns the newest decisions first, optionally of one session.
func (s *Queries) Decisions(ctx context.Context, sessionID string, limit int) ([]Decision, error) {
	q := `SELECT request_id, session_id, directory, permission, patterns, reply, message, cause, client, addr, asked, decided FROM permission_decisions`
	var args []any
	if sessionID != "" {
		q += ` WHERE session_id = ?`
		args = append(args, sessionID)
	}
	q += ` ORDER BY decided DESC, request_id DESC`
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, wrap("list decisions", err)
	}
	defer rows.Close()
	var out []Decision
	for rows.Next() {
		var d Decision
		if err := rows.Scan(&d.RequestID, &d.SessionID, &d.Directory, &d.Permission, &d.Patterns, &d.Reply, &d.Message, &d.Cause, &d.Client, &d.Addr, &d.Asked, &d.Decided); err != nil {
			return nil, wrap("list decisions", err)
		}
		out = append(out, d)
	}
	return out, wrap("list decisions", rows.Err())
}
