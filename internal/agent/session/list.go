package session

import (
	"context"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// ListInput filters GET /session.
type ListInput struct {
	Directory string
	Roots     bool
	Start     int64 // updated at or after, epoch ms
	Search    string
	Limit     int    // default and maximum 100... see MaxPage
	Cursor    string // from a previous page's NextCursor
}

// DefaultPage is how many sessions a listing returns without a limit, as OpenCode.
const DefaultPage = 100

// MaxPage bounds one page.
const MaxPage = 1000

// Page is one page of a listing. NextCursor is set when more results exist, so a listing is never
// truncated silently.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

type listCursor struct {
	Updated int64  `json:"u"`
	ID      string `json:"id"`
}

// sessionLists lists sessions (a directory's, a parent's children), keeping encoded listings
// while the sessions table does not change.
type sessionLists struct {
	rows sessionRows
	db   interface {
		ListSessions(ctx context.Context, q store.SessionQuery) ([]store.Session, error)
		SessionsVersion() uint64
	}
	listed listCache // encoded listings, kept while the sessions table does not change
}

// List returns sessions newest first.
func (l *sessionLists) List(ctx context.Context, in ListInput) (Page[Session], error) {
	rows, next, err := l.listRows(ctx, in)
	if err != nil {
		return Page[Session]{}, err
	}
	page := Page[Session]{NextCursor: next, Items: make([]Session, 0, len(rows))}
	for _, r := range rows {
		sess, err := decodeSession(r.Data)
		if err != nil {
			return Page[Session]{}, err
		}
		page.Items = append(page.Items, sess)
	}
	return page, nil
}

// ListJSON is List encoded for the wire, a JSON array of the stored session documents passed
// through as they are. The body may be shared with other callers and must not be modified.
func (l *sessionLists) ListJSON(ctx context.Context, in ListInput) (body []byte, nextCursor string, err error) {
	version := l.db.SessionsVersion()
	if l, ok := l.listed.get(in, version); ok {
		return l.body, l.next, nil
	}
	body, next, err := l.listJSON(ctx, in)
	if err != nil {
		return nil, "", err
	}
	// Kept only when no change committed meanwhile: the rows read may be older or newer than it.
	if l.db.SessionsVersion() == version {
		l.listed.put(in, version, listing{body: body, next: next})
	}
	return body, next, nil
}

func (l *sessionLists) listJSON(ctx context.Context, in ListInput) (body []byte, nextCursor string, err error) {
	rows, next, err := l.listRows(ctx, in)
	if err != nil {
		return nil, "", err
	}
	size := 2
	for _, r := range rows {
		size += len(r.Data) + 1
	}
	body = make([]byte, 0, size)
	body = append(body, '[')
	for i, r := range rows {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, r.Data...)
	}
	return append(body, ']'), next, nil
}

// listRows reads one page of stored sessions and the cursor to the next page.
func (l *sessionLists) listRows(ctx context.Context, in ListInput) ([]store.Session, string, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultPage
	}
	if limit > MaxPage {
		return nil, "", errs.E(errs.Invalid, "limit: at most %d", MaxPage)
	}
	q := store.SessionQuery{Directory: in.Directory, RootsOnly: in.Roots, Since: in.Start, Search: in.Search, Limit: limit + 1}
	if in.Cursor != "" {
		var c listCursor
		if err := decodeCursor(in.Cursor, &c); err != nil || !id.Valid(id.Session, c.ID) {
			return nil, "", errs.Named(errs.Invalid, "InvalidCursorError", "cursor: not a cursor this server issued")
		}
		q.AfterUpdated, q.AfterID = c.Updated, c.ID
	}
	rows, err := l.db.ListSessions(ctx, q)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[len(rows)-1]
		next = encodeCursor(listCursor{Updated: last.Updated, ID: last.ID})
	}
	return rows, next, nil
}

// Children lists the sessions whose parent is sessionID.
func (l *sessionLists) Children(ctx context.Context, sessionID string) ([]Session, error) {
	if _, err := l.rows.Get(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := l.db.ListSessions(ctx, store.SessionQuery{ParentID: sessionID})
	if err != nil {
		return nil, err
	}
	out := make([]Session, 0, len(rows))
	for _, r := range rows {
		sess, err := decodeSession(r.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, nil
}
