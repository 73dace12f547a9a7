// Package session owns sessions, their messages and parts, and the prompt loop that runs one agent
// turn at a time per session. It stores through package store and announces every change on the bus;
// it knows nothing of HTTP.
//
// Service is the facade the doors call. Its seams are types of their own, each in its file(s) and
// holding only what it uses, embedded in Service so that the doors call them on it: sessionRows and
// events (rows.go: a stored session read, changed and announced), sessionLists (list.go),
// messageLog (messages.go), sharing (share.go), historyEdits (revert.go with snapshots.go, edit.go,
// fork.go, diff.go), histories (history.go: the provider history a turn starts from), projects
// (project.go), clientFiles (files.go), compactions (compaction.go: a compaction asked for),
// searcher (search.go) and todoLists (todo.go). Service itself
// keeps a session's life (service.go) and the prompt loop: loop.go (prompts in, abort, shutdown),
// queue.go (the per-session run queue), turn.go (one turn: its steps, commit and failure), step.go
// (one model call as it streams), toolcall.go, recover.go (what a crash or a stop left running),
// compaction.go and shell.go.
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

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/snapshot"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Service is the session domain. Create it with New.
//
// The seams it embeds (see the package comment) hold only what they use, and New wires them; what
// is Service's own is a session's life (create, update, delete) and the prompt loop with its run
// queue. A seam keeps its helpers in named fields (rows, msgs, db), never embedded, so that what it
// promotes into Service is its methods alone.
type Service struct {
	sessionRows
	messageLog
	sharing
	historyEdits
	searcher
	todoLists
	sessionLists
	compactions
	clientFiles // sessions whose files a client reads and writes
	projects    // each directory's project and grant scope
	histories   // the start of each recent session's provider history, kept between turns

	db      store.Store
	ids     *id.Source
	snaps   snapshots
	deleted func(sessionID string)
	version string
	// updateEvery is Options.UpdateEvery resolved: 0 announces every update.
	updateEvery time.Duration

	agent *Agent    // what the prompt loop needs; nil without Options.Agent
	runs  *runQueue // each session's turns, one at a time

	live liveSteps // the model calls streaming now, whose open parts are not stored yet

	runner Runner // nil: this process runs every session (one node)
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
	// Runner, when several nodes share the database, leases each turn's session to this node and
	// fences its writes; nil on one node.
	Runner Runner
}

// New makes a session service over an open store.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	rows := sessionRows{db: o.DB, now: time.Now, events: events{bus: o.Bus, log: o.Logger}}
	s := &Service{
		sessionRows: rows,
		db:          o.DB,
		ids:         id.NewSource(),
		snaps:       snapshots{store: o.Snapshots, log: o.Logger},
		deleted:     o.Deleted,
		version:     o.Version,
		updateEvery: o.UpdateEvery,
		runner:      o.Runner,
	}
	s.sessionLists.rows, s.sessionLists.db = rows, o.DB
	s.projects.dirs = o.DB
	s.histories.db, s.histories.logger = o.DB, o.Logger
	s.messageLog = messageLog{rows: rows, db: o.DB, live: &s.live}
	s.sharing = sharing{rows: rows, msgs: s.messageLog, db: o.DB}
	s.historyEdits = historyEdits{rows: rows, msgs: s.messageLog, db: o.DB, ids: s.ids, snaps: s.snaps,
		exclusive: s.exclusive, projectID: s.ProjectID, version: o.Version}
	s.searcher = searcher{rows: rows, db: o.DB}
	s.todoLists = todoLists{rows: rows}
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
	s.compactions = compactions{rows: rows, msgs: s.messageLog, db: o.DB, ids: s.ids, agent: s.agent, runs: s.runs, forget: s.histories.drop}
	return s
}

// CreateInput is the body of POST /session (api.SessionCreateInput), which the session validates.
type CreateInput api.SessionCreateInput

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
func noteAllowRules(log *slog.Logger, sessionID string, rules []permission.Rule) {
	var allows []permission.Rule
	for _, r := range rules {
		if r.Action == permission.Allow {
			allows = append(allows, r)
		}
	}
	if len(allows) > 0 {
		log.Info("a session's rules can only tighten: its allow rules never allow what the user's rules ask or deny",
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
	err := s.db.Tx(ctx, func(q store.Tx) error { return createSession(ctx, q, sess, true) })
	if err != nil {
		return Session{}, err
	}
	noteAllowRules(s.log, sess.ID, in.Permission)
	s.publish(directory, api.EventSessionCreated, api.SessionInfo{SessionID: sess.ID, Info: sess})
	return sess, nil
}

// createSession stores a new session; withDiff stores its (empty) diff too, so that turns never fold it
// from parts (a fork's copied parts already carry changes, so its diff is folded later).
func createSession(ctx context.Context, q store.Sessions, sess Session, withDiff bool) error {
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
	if sess.Summary != nil {
		fillLegacyPatches(data, sess.Summary.Diffs)
	}
	return sess, nil
}

// UpdateInput is the body of PATCH /session/{id}; absent fields are left alone.
type UpdateInput = api.SessionUpdateInput

// Update changes a session's title, metadata, rules or archived time.
func (s *Service) Update(ctx context.Context, sessionID string, in UpdateInput) (Session, error) {
	if in.Title != nil && len(*in.Title) > 1024 {
		return Session{}, errs.E(errs.Invalid, "title: longer than 1024 characters")
	}
	if err := validateRules(in.Permission); err != nil {
		return Session{}, err
	}
	noteAllowRules(s.log, sessionID, in.Permission)
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
	s.publish(sess.Directory, api.EventSessionDeleted, api.SessionInfo{SessionID: sess.ID, Info: sess})
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
type ForkInput = api.SessionForkInput

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
