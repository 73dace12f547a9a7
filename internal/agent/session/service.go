// Package session owns sessions, their messages and parts, and the prompt loop that runs one agent
// turn at a time per session. It stores through package store and announces every change on the bus;
// it knows nothing of HTTP.
//
// Service is the facade the doors call; its seams live in files of their own: service.go (sessions),
// messages.go, fork.go, project.go, loop.go (prompts in, abort, shutdown), queue.go (the per-session
// run queue), turn.go (one turn: its steps, commit and failure), step.go (one model call as it
// streams), toolcall.go, recover.go (what a crash or a stop left running), compaction.go,
// history.go, revert.go with snapshots.go, edit.go, share.go, shell.go.
package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/snapshot"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Service is the session domain. Create it with New.
type Service struct {
	files   clientFiles // sessions whose files a client reads and writes
	db      store.Store
	bus     *bus.Bus
	ids     *id.Source
	log     *slog.Logger
	snaps   snapshots
	deleted func(sessionID string)
	version string
	now     func() time.Time
	// updateEvery is Options.UpdateEvery resolved: 0 announces every update.
	updateEvery time.Duration

	agent    *Agent    // what the prompt loop needs; nil without Options.Agent
	runs     *runQueue // each session's turns, one at a time
	projects projects  // each directory's project and grant scope

	live      liveSteps // the model calls streaming now, whose open parts are not stored yet
	histories histories // the start of each recent session's provider history, kept between turns
	listed    listCache // encoded listings, kept while the sessions table does not change
}

// Options configure a Service.
type Options struct {
	DB      store.Store
	Bus     *bus.Bus
	Logger  *slog.Logger
	Version string
	// Agent enables prompting; without it a prompt is refused as Unavailable.
	Agent *Agent
	// UpdateEvery bounds how often a streaming part (text, reasoning, a tool's live output) is
	// announced: at most once per interval, the newest state always (default 40 ms; negative
	// announces every update).
	UpdateEvery time.Duration
	// Snapshots records the project's files at each step, for revert and unrevert; nil turns
	// them off (revert then only hides messages).
	Snapshots *snapshot.Store
	// Deleted is told the ID of every session deleted (each child too), after it is gone from
	// the store and before session.deleted is published: what belonged to it alone (the MCP
	// servers added for it) ends there. Nil: nobody is told.
	Deleted func(sessionID string)
}

// New makes a session service over an open store.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		db:          o.DB,
		bus:         o.Bus,
		ids:         id.NewSource(),
		log:         o.Logger,
		snaps:       snapshots{store: o.Snapshots, log: o.Logger},
		deleted:     o.Deleted,
		version:     o.Version,
		now:         time.Now,
		updateEvery: o.UpdateEvery,
	}
	switch {
	case s.updateEvery == 0:
		s.updateEvery = defaultUpdateEvery
	case s.updateEvery < 0:
		s.updateEvery = 0
	}
	if o.Agent != nil {
		s.agent = withDefaults(*o.Agent)
	}
	s.runs = newRunQueue(s.runQueued)
	return s
}

func (s *Service) nowMS() int64 { return s.now().UnixMilli() }

// publish sends an event; a failure to encode is a bug and is logged, never returned to a client.
func (s *Service) publish(directory, typ string, props any) {
	s.bus.Emit(s.log, directory, typ, props)
}

// CreateInput is the body of POST /session.
type CreateInput struct {
	ParentID    string            `json:"parentID,omitempty"`
	Title       string            `json:"title,omitempty"`
	Agent       string            `json:"agent,omitempty"`
	Model       *SessionModel     `json:"model,omitempty"`
	Metadata    map[string]any    `json:"metadata,omitempty"`
	Permission  []permission.Rule `json:"permission,omitempty"`
	WorkspaceID string            `json:"workspaceID,omitempty"`
}

// Validate checks the fields a client can get wrong.
func (in CreateInput) Validate() error {
	if in.ParentID != "" && !id.Valid(id.Session, in.ParentID) {
		return errs.E(errs.Invalid, "parentID: malformed session ID %q", in.ParentID)
	}
	if len(in.Title) > 1024 {
		return errs.E(errs.Invalid, "title: longer than 1024 characters")
	}
	return validateRules(in.Permission)
}

// noteAllowRules logs that a client's allow rules on a session do not loosen the user's rules: the
// permission service lets a session's rules only tighten (permission.Decide), and a client that
// hoped otherwise can find out why its calls still ask.
func (s *Service) noteAllowRules(sessionID string, rules []permission.Rule) {
	var allows []permission.Rule
	for _, r := range rules {
		if r.Action == permission.Allow {
			allows = append(allows, r)
		}
	}
	if len(allows) > 0 {
		s.log.Info("a session's rules can only tighten: its allow rules never allow what the user's rules ask or deny",
			"session", sessionID, "allow", allows)
	}
}

func validateRules(rules []permission.Rule) error {
	for i, r := range rules {
		switch r.Action {
		case permission.Allow, permission.Ask, permission.Deny:
		default:
			return errs.E(errs.Invalid, "permission[%d].action: expected \"allow\" | \"ask\" | \"deny\", got %q", i, r.Action)
		}
		if r.Permission == "" {
			return errs.E(errs.Invalid, "permission[%d].permission: required", i)
		}
	}
	return nil
}

// Create makes a session in directory.
func (s *Service) Create(ctx context.Context, directory string, in CreateInput) (Session, error) {
	if err := in.Validate(); err != nil {
		return Session{}, err
	}
	if in.ParentID != "" {
		if _, err := s.Get(ctx, in.ParentID); err != nil {
			return Session{}, err
		}
	}
	now := s.nowMS()
	sess := Session{
		ID:          s.ids.NewDescending(id.Session),
		Slug:        slug(),
		ProjectID:   s.ProjectID(ctx, directory),
		WorkspaceID: in.WorkspaceID,
		Directory:   directory,
		ParentID:    in.ParentID,
		Title:       in.Title,
		Agent:       in.Agent,
		Model:       in.Model,
		Version:     s.version,
		Metadata:    in.Metadata,
		Permission:  in.Permission,
		Time:        SessionTime{Created: now, Updated: now},
	}
	if sess.Title == "" {
		prefix := "New session - "
		if in.ParentID != "" {
			prefix = "Child session - "
		}
		sess.Title = prefix + time.UnixMilli(now).UTC().Format(time.RFC3339Nano)
	}
	err := s.db.Tx(ctx, func(q store.Tx) error { return s.create(ctx, q, sess, true) })
	if err != nil {
		return Session{}, err
	}
	s.noteAllowRules(sess.ID, in.Permission)
	s.publish(directory, "session.created", map[string]any{"sessionID": sess.ID, "info": sess})
	return sess, nil
}

// create stores a new session; withDiff stores its (empty) diff too, so that turns never fold it
// from parts (a fork's copied parts already carry changes, so its diff is folded later).
func (s *Service) create(ctx context.Context, q store.Tx, sess Session, withDiff bool) error {
	if err := put(ctx, q, sess); err != nil {
		return err
	}
	if withDiff {
		return storeDiff(ctx, q, sess.ID, map[string]fileChange{})
	}
	return nil
}

func put(ctx context.Context, q store.Sessions, sess Session) error {
	data, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	return q.PutSession(ctx, store.Session{
		ID: sess.ID, Directory: sess.Directory, ParentID: sess.ParentID, Title: sess.Title,
		Created: sess.Time.Created, Updated: sess.Time.Updated, Data: data,
	})
}

// Get returns a session; a malformed ID is Invalid and an unknown one NotFound.
func (s *Service) Get(ctx context.Context, sessionID string) (Session, error) {
	if !id.Valid(id.Session, sessionID) {
		return Session{}, errs.E(errs.Invalid, "malformed session ID %q", sessionID)
	}
	return get(ctx, s.db, sessionID)
}

// get reads a session through q (the pool, or a transaction that is about to change it).
func get(ctx context.Context, q store.Sessions, sessionID string) (Session, error) {
	row, err := q.GetSession(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, errs.E(errs.NotFound, "Session not found: %s", sessionID)
	}
	if err != nil {
		return Session{}, err
	}
	return decodeSession(row.Data)
}

func decodeSession(data []byte) (Session, error) {
	var sess Session
	if err := json.Unmarshal(data, &sess); err != nil {
		return Session{}, fmt.Errorf("session: decode: %w", err)
	}
	return sess, nil
}

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

// List returns sessions newest first.
func (s *Service) List(ctx context.Context, in ListInput) (Page[Session], error) {
	rows, next, err := s.listRows(ctx, in)
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
func (s *Service) ListJSON(ctx context.Context, in ListInput) (body []byte, nextCursor string, err error) {
	version := s.db.SessionsVersion()
	if l, ok := s.listed.get(in, version); ok {
		return l.body, l.next, nil
	}
	body, next, err := s.listJSON(ctx, in)
	if err != nil {
		return nil, "", err
	}
	// Kept only when no change committed meanwhile: the rows read may be older or newer than it.
	if s.db.SessionsVersion() == version {
		s.listed.put(in, version, listing{body: body, next: next})
	}
	return body, next, nil
}

func (s *Service) listJSON(ctx context.Context, in ListInput) (body []byte, nextCursor string, err error) {
	rows, next, err := s.listRows(ctx, in)
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
func (s *Service) listRows(ctx context.Context, in ListInput) ([]store.Session, string, error) {
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
	rows, err := s.db.ListSessions(ctx, q)
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
func (s *Service) Children(ctx context.Context, sessionID string) ([]Session, error) {
	if _, err := s.Get(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := s.db.ListSessions(ctx, store.SessionQuery{ParentID: sessionID})
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

// UpdateInput is the body of PATCH /session/{id}; absent fields are left alone.
type UpdateInput struct {
	Title      *string           `json:"title,omitempty"`
	Metadata   map[string]any    `json:"metadata,omitempty"`
	Permission []permission.Rule `json:"permission,omitempty"`
	Time       *struct {
		Archived *int64 `json:"archived,omitempty"`
	} `json:"time,omitempty"`
}

// Update changes a session's title, metadata, rules or archived time.
func (s *Service) Update(ctx context.Context, sessionID string, in UpdateInput) (Session, error) {
	if in.Title != nil && len(*in.Title) > 1024 {
		return Session{}, errs.E(errs.Invalid, "title: longer than 1024 characters")
	}
	if err := validateRules(in.Permission); err != nil {
		return Session{}, err
	}
	s.noteAllowRules(sessionID, in.Permission)
	return s.mutate(ctx, sessionID, func(sess *Session) {
		if in.Title != nil {
			sess.Title = *in.Title
		}
		if in.Metadata != nil {
			sess.Metadata = in.Metadata
		}
		if in.Permission != nil {
			sess.Permission = in.Permission
		}
		if in.Time != nil && in.Time.Archived != nil {
			sess.Time.Archived = *in.Time.Archived
		}
	})
}

// mutate applies fn to a stored session, bumps its updated time, stores and announces it.
func (s *Service) mutate(ctx context.Context, sessionID string, fn func(*Session)) (Session, error) {
	if !id.Valid(id.Session, sessionID) {
		return Session{}, errs.E(errs.Invalid, "malformed session ID %q", sessionID)
	}
	sess, err := s.change(ctx, s.db, sessionID, fn)
	if err != nil {
		return Session{}, err
	}
	s.announce(sess)
	return sess, nil
}

// change is mutate inside a caller's transaction; the caller announces the result after commit.
func (s *Service) change(ctx context.Context, q store.Sessions, sessionID string, fn func(*Session)) (Session, error) {
	sess, err := get(ctx, q, sessionID)
	if err != nil {
		return Session{}, err
	}
	fn(&sess)
	sess.Time.Updated = max(s.nowMS(), sess.Time.Updated)
	if err := put(ctx, q, sess); err != nil {
		return Session{}, err
	}
	return sess, nil
}

func (s *Service) announce(sess Session) {
	s.publish(sess.Directory, "session.updated", map[string]any{"sessionID": sess.ID, "info": sess})
}

// Delete removes a session, its children, messages and parts. A running turn is aborted first.
func (s *Service) Delete(ctx context.Context, sessionID string) error {
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	children, err := s.Children(ctx, sessionID)
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := s.Delete(ctx, c.ID); err != nil && !errs.Is(err, errs.NotFound) {
			return err
		}
	}
	s.abortAndWait(sessionID, nil)
	s.histories.drop(sessionID)
	if err := s.db.DeleteSession(ctx, sessionID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errs.E(errs.NotFound, "Session not found: %s", sessionID)
		}
		return err
	}
	if s.agent != nil && s.agent.Permissions != nil {
		s.agent.Permissions.EndSession(sessionID) // its "session" grants end with it
	}
	if s.deleted != nil {
		s.deleted(sessionID)
	}
	s.publish(sess.Directory, "session.deleted", map[string]any{"sessionID": sess.ID, "info": sess})
	return nil
}

// MessagesInput pages GET /session/{id}/message.
type MessagesInput struct {
	Limit  int
	Before string // cursor from a previous page
}

type messageCursor struct {
	ID      string `json:"id"`
	Created int64  `json:"time"`
}

// ForkInput is the body of POST /session/{id}/fork.
type ForkInput struct {
	MessageID string `json:"messageID,omitempty"`
}

// Statuses returns the sessions that are not idle, as GET /session/status.
func (s *Service) Statuses() map[string]Status {
	return s.runs.statuses()
}

func encodeCursor(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(c string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		b, err = base64.StdEncoding.DecodeString(c)
		if err != nil {
			return err
		}
	}
	return json.Unmarshal(b, v)
}

var slugWords = [2][]string{
	{"brave", "calm", "clever", "eager", "gentle", "happy", "jolly", "kind", "lucky", "mighty", "nimble", "proud", "quiet", "swift", "tidy", "witty"},
	{"engine", "falcon", "garden", "harbor", "island", "knight", "lantern", "meadow", "otter", "pixel", "river", "rocket", "tiger", "valley", "wizard", "comet"},
}

func slug() string {
	pick := func(words []string) string {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(words))))
		return words[n.Int64()]
	}
	return pick(slugWords[0]) + "-" + pick(slugWords[1])
}
