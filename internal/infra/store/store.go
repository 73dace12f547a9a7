// Package store keeps tandem's state in one SQLite file (modernc.org/sqlite, no cgo), or in a
// PostgreSQL database that several tandem nodes share (pgx): sessions, messages, parts, todos, and
// the permission grants and decision log. Rows carry the documents the
// API serves as JSON blobs plus the few columns queries filter on, so the shapes live in the domain
// packages and the store stays a thin, replaceable layer.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// DB is an open tandem database. Its query methods (from the embedded Queries) run on the pool;
// Tx runs them inside one write transaction.
type DB struct {
	Queries
	db      *sql.DB
	path    string // the file, or the PostgreSQL URL without its password
	dialect dialect
	pg      *postgres // PostgreSQL only
	stmts   sync.Map  // query text -> *sql.Stmt: SQLite statements are prepared once, not per call
	// texts holds each query's text as PostgreSQL runs it (? rewritten to $n), rewritten once.
	texts sync.Map
	// writing serialises writers in the process (SQLite only). SQLite has one writer at a time
	// and its busy handler retries by sleeping, not in turn, so under many concurrent turns some
	// writers would starve past busy_timeout; a Go mutex queues them instead. Readers are not
	// affected (WAL).
	writing sync.Mutex
	// sessionsVersion changes after every committed change to the sessions table.
	sessionsVersion atomic.Uint64
	// parts keeps recently read parts by message, dropped on every committed change to them.
	parts partCache
}

// Queries runs the store's statements, either on the pool or inside one transaction (tx set).
type Queries struct {
	db *DB
	tx *sql.Tx
	// sessionsTouched: the transaction changed the sessions table, and committing it changes
	// SessionsVersion.
	sessionsTouched bool
	// partsTouched: the messages whose parts the transaction changed (allParts: any message's),
	// whose cached parts are dropped when it commits.
	partsTouched []string
	allParts     bool
	// fences: the session leases checked in the transaction (PostgreSQL), each checked once.
	fences map[string]SessionLease
}

// SessionsVersion is a number that changes after every committed change to the sessions table
// (never before the change is visible), so a reader can keep what it derived from the table for
// as long as the number stays the same. On PostgreSQL other nodes change the table unseen, so the
// number changes every time it is read: nothing derived is kept.
func (s *DB) SessionsVersion() uint64 {
	if s.dialect == postgresDialect {
		return s.sessionsVersion.Add(1)
	}
	return s.sessionsVersion.Load()
}

// text is query as the dialect runs it, rewritten once per statement text.
func (s *DB) text(query string) string {
	if s.dialect == sqliteDialect {
		return query
	}
	if t, ok := s.texts.Load(query); ok {
		return t.(string)
	}
	t := s.dialect.rebind(query)
	s.texts.Store(query, t)
	return t
}

// sessionsChanged is called after each statement that changes the sessions table.
func (s *Queries) sessionsChanged() {
	if s.tx != nil {
		s.sessionsTouched = true
		return
	}
	s.db.sessionsVersion.Add(1)
}

// partsChanged is called after each statement that changes a message's parts.
func (s *Queries) partsChanged(messageID string) {
	if s.tx != nil {
		s.partsTouched = append(s.partsTouched, messageID)
		return
	}
	s.db.parts.changed([]string{messageID}, false)
}

// allPartsChanged is called after a statement that may change the parts of any message.
func (s *Queries) allPartsChanged() {
	if s.tx != nil {
		s.allParts = true
		return
	}
	s.db.parts.changed(nil, true)
}

// prepared returns the cached prepared statement for a query (SQLite).
func (s *DB) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// stmt is the cached statement, bound to the transaction when there is one (the transaction
// closes it when it ends).
func (s *Queries) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s.tx == nil {
		return s.db.prepared(ctx, query)
	}
	if st, ok := s.db.stmts.Load(query); ok {
		return s.tx.StmtContext(ctx, st.(*sql.Stmt)), nil
	}
	// A pool of one connection is held by this transaction: preparing on the pool would wait for
	// it forever, so the statement is prepared on the transaction alone (and again next time).
	if s.db.db.Stats().MaxOpenConnections == 1 {
		return s.tx.PrepareContext(ctx, query)
	}
	// Otherwise it is prepared once for the pool, like every other statement: transactions are
	// one at a time, so another connection is free or soon will be. The transaction's connection
	// prepares it once too (database/sql keeps it per connection).
	st, err := s.db.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.tx.StmtContext(ctx, st), nil
}

// direct is what PostgreSQL's statements run on: the transaction, or the pool. They are not
// prepared through database/sql: pgx prepares each statement text once per connection itself
// (its statement cache), and preparing on the pool from inside a transaction could wait for a
// connection that only transactions waiting the same way hold.
func (s *Queries) direct() interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
} {
	if s.tx != nil {
		return s.tx
	}
	return s.db.db
}

func (s *Queries) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s.db.dialect == postgresDialect {
		return s.direct().ExecContext(ctx, s.db.text(query), args...)
	}
	if s.tx == nil { // inside Tx the lock is already held
		s.db.writing.Lock()
		defer s.db.writing.Unlock()
	}
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (s *Queries) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s.db.dialect == postgresDialect {
		return s.direct().QueryContext(ctx, s.db.text(query), args...)
	}
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is QueryRowContext through the statement cache; a prepare error surfaces from Scan.
func (s *Queries) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if s.db.dialect == postgresDialect {
		return s.direct().QueryRowContext(ctx, s.db.text(query), args...)
	}
	st, err := s.stmt(ctx, query)
	if err != nil {
		return s.direct().QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// Open opens the database target and applies pending migrations: a postgres:// or postgresql://
// URL is a PostgreSQL database (pgx; several tandem nodes may share it, see Cluster), anything
// else the path of a SQLite file, created if needed. A database migrated by a newer tandem is
// refused (NewerSchemaError).
func Open(ctx context.Context, target string) (*DB, error) {
	if isPostgresURL(target) {
		return openPostgres(ctx, target)
	}
	return openSQLite(ctx, target)
}

func openSQLite(ctx context.Context, path string) (*DB, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	// The database holds every conversation and command: readable by its owner only. SQLite gives
	// the -wal and -shm files the same mode as the database file.
	if path != ":memory:" {
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
		if err == nil {
			f.Close()
		}
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// SQLite has one writer; a small pool keeps readers concurrent without piling up BUSY waits.
	db.SetMaxOpenConns(4)
	// Keep every connection: database/sql keeps 2 idle by default, so under 4 concurrent readers
	// the others were closed and opened again, their pragmas and prepared statements with them.
	db.SetMaxIdleConns(4)
	fail := func(err error) (*DB, error) {
		db.Close()
		if unwritable(err) {
			return nil, &UnwritableError{Path: path, Err: err}
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fail(err)
	}
	s := &DB{db: db, path: path}
	s.Queries = Queries{db: s}
	if err := s.migrate(ctx, db); err != nil {
		return fail(err)
	}
	if err := s.probeWrite(ctx); err != nil {
		return fail(err)
	}
	return s, nil
}

// Path is the database file, or the PostgreSQL URL without its password.
func (s *DB) Path() string { return s.path }

// Dialect is "sqlite" or "postgres".
func (s *DB) Dialect() string { return s.dialect.String() }

// Close closes the database; SQLite's WAL is checkpointed into the file first.
func (s *DB) Close() error {
	s.stmts.Range(func(_, st any) bool { st.(*sql.Stmt).Close(); return true })
	if s.dialect == sqliteDialect {
		_, _ = s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	}
	return s.db.Close()
}

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("store: not found")

// Session is a stored session document with its query columns.
type Session struct {
	ID        string
	Directory string
	ParentID  string
	Title     string
	Created   int64
	Updated   int64
	Data      []byte
}

// PutSession inserts or replaces a session.
func (s *Queries) PutSession(ctx context.Context, r Session) error {
	return s.fenced(ctx, r.ID, func(q *Queries) error {
		_, err := q.exec(ctx, `INSERT INTO sessions (id, directory, parent_id, title, created, updated, data)
			VALUES (?, ?, NULLIF(?, ''), ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET directory = excluded.directory, parent_id = excluded.parent_id,
			title = excluded.title, updated = excluded.updated, data = excluded.data`,
			r.ID, r.Directory, r.ParentID, r.Title, r.Created, r.Updated, r.Data)
		q.sessionsChanged()
		return wrap("put session", err)
	})
}

// GetSession returns one session, or ErrNotFound.
func (s *Queries) GetSession(ctx context.Context, id string) (Session, error) {
	row := s.queryRow(ctx, `SELECT id, directory, COALESCE(parent_id, ''), title, created, updated, data FROM sessions WHERE id = ?`, id)
	var r Session
	err := row.Scan(&r.ID, &r.Directory, &r.ParentID, &r.Title, &r.Created, &r.Updated, &r.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	return r, wrap("get session", err)
}

// SessionQuery filters ListSessions. Results are ordered by updated time, newest first.
type SessionQuery struct {
	Directory string // empty: all directories
	ParentID  string // non-empty: only children of this session
	RootsOnly bool
	Since     int64  // updated at or after (epoch ms); 0: no bound
	Search    string // case-insensitive substring of the title
	// After continues a listing: only sessions strictly older than this (updated, id) position.
	AfterUpdated int64
	AfterID      string
	Limit        int // 0: no limit
}

// SessionDirectories lists the distinct directories sessions work in, sorted.
func (s *Queries) SessionDirectories(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT directory FROM sessions ORDER BY directory`)
	if err != nil {
		return nil, wrap("session directories", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, wrap("session directories", err)
		}
		out = append(out, d)
	}
	return out, wrap("session directories", rows.Err())
}

// ListSessions returns the sessions matching q. A listed session carries its ID, updated time and
// document, what a listing serves and pages by; GetSession has the other columns.
func (s *Queries) ListSessions(ctx context.Context, q SessionQuery) ([]Session, error) {
	var where []string
	var args []any
	if q.Directory != "" {
		where, args = append(where, "directory = ?"), append(args, q.Directory)
	}
	if q.ParentID != "" {
		where, args = append(where, "parent_id = ?"), append(args, q.ParentID)
	}
	if q.RootsOnly {
		where = append(where, "parent_id IS NULL")
	}
	if q.Since > 0 {
		where, args = append(where, "updated >= ?"), append(args, q.Since)
	}
	if q.Search != "" {
		where, args = append(where, "title "+s.db.dialect.like()+" ? ESCAPE '\\'"), append(args, "%"+escapeLike(q.Search)+"%")
	}
	if q.AfterID != "" {
		// A row value, so that the position is a range of sessions_by_updated, not a filter.
		where, args = append(where, "(updated, id) < (?, ?)"), append(args, q.AfterUpdated, q.AfterID)
	}
	query := `SELECT id, updated, data FROM sessions`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY updated DESC, id DESC"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, wrap("list sessions", err)
	}
	defer rows.Close()
	out := make([]Session, 0, min(max(q.Limit, 0), 128))
	for rows.Next() {
		var r Session
		if err := rows.Scan(&r.ID, &r.Updated, &r.Data); err != nil {
			return nil, wrap("list sessions", err)
		}
		out = append(out, r)
	}
	return out, wrap("list sessions", rows.Err())
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// DeleteSession removes a session and, through foreign keys, its messages, parts and todos.
func (s *Queries) DeleteSession(ctx context.Context, id string) error {
	res, err := s.exec(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	s.sessionsChanged()
	s.allPartsChanged() // its messages' parts go with it
	if err != nil {
		return wrap("delete session", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Message is a stored message document.
type Message struct {
	ID        string
	SessionID string
	Created   int64
	Data      []byte
}

// Part is a stored part document; parts of a message are ordered by ID.
type Part struct {
	ID        string
	MessageID string
	SessionID string
	Data      []byte
}

// PutMessage inserts or replaces a message.
func (s *Queries) PutMessage(ctx context.Context, m Message) error {
	return s.fenced(ctx, m.SessionID, func(q *Queries) error {
		_, err := q.exec(ctx, `INSERT INTO messages (id, session_id, created, data) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET data = excluded.data`, m.ID, m.SessionID, m.Created, m.Data)
		return wrap("put message", err)
	})
}

// PutPart inserts or replaces a part.
func (s *Queries) PutPart(ctx context.Context, p Part) error {
	return s.fenced(ctx, p.SessionID, func(q *Queries) error {
		_, err := q.exec(ctx, `INSERT INTO parts (id, message_id, session_id, data) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET data = excluded.data`, p.ID, p.MessageID, p.SessionID, p.Data)
		q.partsChanged(p.MessageID)
		return wrap("put part", err)
	})
}

// MessageQuery pages through a session's messages: the newest Limit messages older than Before
// (by created time, then ID), returned oldest first as OpenCode returns them. From, when set, keeps
// only the messages at or after that position (a reader that has the ones before already).
type MessageQuery struct {
	SessionID     string
	Limit         int // 0: all
	BeforeCreated int64
	BeforeID      string
	FromCreated   int64
	FromID        string
}

// ListMessages returns the messages matching q, oldest first, each with its parts in ID order.
// It is two queries whatever the page's size: the page's messages, then the parts of that range of
// message IDs (one range of the parts_by_session index).
func (s *Queries) ListMessages(ctx context.Context, q MessageQuery) ([]Message, map[string][]Part, error) {
	var b strings.Builder
	b.WriteString(`SELECT id, created, data FROM messages WHERE session_id = ?`)
	args := []any{q.SessionID}
	// Positions are row values, so that they bound a range of messages_by_session (an OR of
	// comparisons would be a filter over every message of the session).
	if q.BeforeID != "" {
		b.WriteString(` AND (created, id) < (?, ?)`)
		args = append(args, q.BeforeCreated, q.BeforeID)
	}
	if q.FromID != "" {
		b.WriteString(` AND (created, id) >= (?, ?)`)
		args = append(args, q.FromCreated, q.FromID)
	}
	if q.Limit > 0 {
		b.WriteString(` ORDER BY created DESC, id DESC LIMIT ?`)
		args = append(args, q.Limit)
	} else {
		b.WriteString(` ORDER BY created, id`)
	}
	rows, err := s.query(ctx, b.String(), args...)
	if err != nil {
		return nil, nil, wrap("list messages", err)
	}
	var msgs []Message
	if q.Limit > 0 {
		msgs = make([]Message, 0, q.Limit)
	}
	for rows.Next() {
		m := Message{SessionID: q.SessionID}
		if err := rows.Scan(&m.ID, &m.Created, &m.Data); err != nil {
			rows.Close()
			return nil, nil, wrap("list messages", err)
		}
		msgs = append(msgs, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, wrap("list messages", err)
	}
	if q.Limit > 0 {
		slices.Reverse(msgs)
	}
	parts, err := s.partsOf(ctx, q.SessionID, msgs)
	return msgs, parts, err
}

// partsOf returns the parts of msgs. Outside a transaction, those of messages read recently come
// from the cache; the others are read, and cached.
func (s *Queries) partsOf(ctx context.Context, sessionID string, msgs []Message) (map[string][]Part, error) {
	// On PostgreSQL other nodes change parts too, unseen by this node's cache: nothing is cached.
	if s.tx != nil || len(msgs) == 0 || s.db.dialect == postgresDialect {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.ID
		}
		return s.readParts(ctx, sessionID, ids)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	out, missing, version := s.db.parts.get(ids)
	if len(missing) == 0 {
		return out, nil
	}
	read, err := s.readParts(ctx, sessionID, missing)
	if err != nil {
		return nil, err
	}
	s.db.parts.put(read, version)
	for id, ps := range read {
		out[id] = slices.Clip(ps)
	}
	return out, nil
}

// readParts reads the parts of the messages ids: those of the session whose message ID lies
// between the smallest and the largest of ids, keeping the ones of ids.
func (s *Queries) readParts(ctx context.Context, sessionID string, ids []string) (map[string][]Part, error) {
	out := make(map[string][]Part, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	lo, hi := ids[0], ids[0]
	for _, id := range ids {
		lo, hi = min(lo, id), max(hi, id)
		out[id] = nil
	}
	rows, err := s.query(ctx, `SELECT message_id, id, data FROM parts WHERE session_id = ? AND message_id BETWEEN ? AND ? ORDER BY message_id, id`,
		sessionID, lo, hi)
	if err != nil {
		return nil, wrap("list parts", err)
	}
	defer rows.Close()
	for rows.Next() {
		p := Part{SessionID: sessionID}
		if err := rows.Scan(&p.MessageID, &p.ID, &p.Data); err != nil {
			return nil, wrap("list parts", err)
		}
		if ps, ok := out[p.MessageID]; ok {
			out[p.MessageID] = append(ps, p)
		}
	}
	return out, wrap("list parts", rows.Err())
}

// CountMessagesBefore counts a session's messages before a position (created time, then ID): a
// reader that keeps what it read checks with it that nothing was inserted among them since. It
// takes the session's message count (kept by triggers) less the messages from the position on, so
// it costs what came after the position, however long the history before it.
func (s *Queries) CountMessagesBefore(ctx context.Context, sessionID string, created int64, messageID string) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT message_count - (SELECT COUNT(*) FROM messages WHERE session_id = ? AND (created, id) >= (?, ?))
		FROM sessions WHERE id = ?`, sessionID, created, messageID, sessionID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, wrap("count messages", err)
}

// GetMessage returns one message of a session with its parts, or ErrNotFound.
func (s *Queries) GetMessage(ctx context.Context, sessionID, messageID string) (Message, []Part, error) {
	var m Message
	err := s.queryRow(ctx, `SELECT id, session_id, created, data FROM messages WHERE id = ? AND session_id = ?`, messageID, sessionID).
		Scan(&m.ID, &m.SessionID, &m.Created, &m.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, nil, ErrNotFound
	}
	if err != nil {
		return Message{}, nil, wrap("get message", err)
	}
	rows, err := s.query(ctx, `SELECT id, message_id, session_id, data FROM parts WHERE message_id = ? ORDER BY id`, messageID)
	if err != nil {
		return Message{}, nil, wrap("get message parts", err)
	}
	defer rows.Close()
	var parts []Part
	for rows.Next() {
		var p Part
		if err := rows.Scan(&p.ID, &p.MessageID, &p.SessionID, &p.Data); err != nil {
			return Message{}, nil, wrap("get message parts", err)
		}
		parts = append(parts, p)
	}
	return m, parts, wrap("get message parts", rows.Err())
}

// MessageCursor returns the created time of a message, for paging.
func (s *Queries) MessageCursor(ctx context.Context, sessionID, messageID string) (int64, error) {
	var created int64
	err := s.queryRow(ctx, `SELECT created FROM messages WHERE id = ? AND session_id = ?`, messageID, sessionID).Scan(&created)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return created, wrap("message cursor", err)
}

// DeleteMessage removes a message of a session and its parts; ErrNotFound when there is none.
func (s *Queries) DeleteMessage(ctx context.Context, sessionID, messageID string) error {
	return s.fenced(ctx, sessionID, func(q *Queries) error {
		_, err := q.exec(ctx, `DELETE FROM parts WHERE message_id = ? AND session_id = ?`, messageID, sessionID)
		q.partsChanged(messageID)
		if err != nil {
			return wrap("delete message parts", err)
		}
		res, err := q.exec(ctx, `DELETE FROM messages WHERE id = ? AND session_id = ?`, messageID, sessionID)
		if err != nil {
			return wrap("delete message", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrap("delete message", err)
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// DeletePart removes one part of a message; ErrNotFound when there is none.
func (s *Queries) DeletePart(ctx context.Context, sessionID, messageID, partID string) error {
	return s.fenced(ctx, sessionID, func(q *Queries) error {
		res, err := q.exec(ctx, `DELETE FROM parts WHERE id = ? AND message_id = ? AND session_id = ?`, partID, messageID, sessionID)
		q.partsChanged(messageID)
		if err != nil {
			return wrap("delete part", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrap("delete part", err)
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// RunningParts returns the parts whose document says a tool is still pending or running, so the
// session package can mark them interrupted after a crash.
func (s *Queries) RunningParts(ctx context.Context) ([]Part, error) {
	d := s.db.dialect
	rows, err := s.query(ctx, `SELECT id, message_id, session_id, data FROM parts
		WHERE `+d.jsonText("data", "type")+` = 'tool' AND `+d.jsonText("data", "state", "status")+` IN ('pending', 'running')`)
	if err != nil {
		return nil, wrap("running parts", err)
	}
	defer rows.Close()
	var out []Part
	for rows.Next() {
		var p Part
		if err := rows.Scan(&p.ID, &p.MessageID, &p.SessionID, &p.Data); err != nil {
			return nil, wrap("running parts", err)
		}
		out = append(out, p)
	}
	return out, wrap("running parts", rows.Err())
}

// UnfinishedMessages returns assistant messages that never completed (the process died mid-turn).
func (s *Queries) UnfinishedMessages(ctx context.Context) ([]Message, error) {
	d := s.db.dialect
	rows, err := s.query(ctx, `SELECT id, session_id, created, data FROM messages
		WHERE `+d.jsonText("data", "role")+` = 'assistant' AND `+d.jsonText("data", "time", "completed")+` IS NULL`)
	if err != nil {
		return nil, wrap("unfinished messages", err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Created, &m.Data); err != nil {
			return nil, wrap("unfinished messages", err)
		}
		out = append(out, m)
	}
	return out, wrap("unfinished messages", rows.Err())
}

// Todos returns a session's todo list document, or nil when it has none.
func (s *Queries) Todos(ctx context.Context, sessionID string) ([]byte, error) {
	var data []byte
	err := s.queryRow(ctx, `SELECT data FROM todos WHERE session_id = ?`, sessionID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return data, wrap("get todos", err)
}

// PutTodos replaces a session's todo list document.
func (s *Queries) PutTodos(ctx context.Context, sessionID string, data []byte) error {
	return s.fenced(ctx, sessionID, func(q *Queries) error {
		_, err := q.exec(ctx, `INSERT INTO todos (session_id, data) VALUES (?, ?)
			ON CONFLICT (session_id) DO UPDATE SET data = excluded.data`, sessionID, data)
		return wrap("put todos", err)
	})
}

// Tx runs fn in one write transaction: everything fn stores through q is committed together, or
// nothing is when fn (or the commit) fails.
func (s *DB) Tx(ctx context.Context, fn func(q Tx) error) error {
	if s.dialect == sqliteDialect {
		s.writing.Lock()
		defer s.writing.Unlock()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap("begin", err)
	}
	defer tx.Rollback()
	q := &Queries{db: s, tx: tx}
	if err := fn(q); err != nil {
		return err
	}
	err = tx.Commit()
	if q.sessionsTouched {
		s.sessionsVersion.Add(1)
	}
	if q.allParts || len(q.partsTouched) > 0 {
		s.parts.changed(q.partsTouched, q.allParts)
	}
	return wrap("commit", err)
}

// SQL exposes the handle to packages that keep their own tables here (permission grants).
func (s *DB) SQL() *sql.DB { return s.db }

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// SessionDiff returns a session's folded diff document, or nil when none is stored yet.
func (s *Queries) SessionDiff(ctx context.Context, sessionID string) ([]byte, error) {
	var data []byte
	err := s.queryRow(ctx, `SELECT data FROM session_diffs WHERE session_id = ?`, sessionID).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return data, wrap("get session diff", err)
}

// PutSessionDiff replaces a session's folded diff document.
func (s *Queries) PutSessionDiff(ctx context.Context, sessionID string, data []byte) error {
	return s.fenced(ctx, sessionID, func(q *Queries) error {
		_, err := q.exec(ctx, `INSERT INTO session_diffs (session_id, data) VALUES (?, ?)
			ON CONFLICT (session_id) DO UPDATE SET data = excluded.data`, sessionID, data)
		return wrap("put session diff", err)
	})
}
