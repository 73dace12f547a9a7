package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"tandem/bus"
	"tandem/errs"
	"tandem/id"
	"tandem/pending"
	"tandem/store"
	"tandem/tool"
)

// Reply is a client's answer.
type Reply string

// The three replies, exactly as OpenCode spells them.
const (
	Once   Reply = "once"
	Always Reply = "always"
	Reject Reply = "reject"
)

// ParseReply accepts only the exact spellings (OpenCode answers "Once" with 400 too).
func ParseReply(s string) (Reply, error) {
	switch r := Reply(s); r {
	case Once, Always, Reject:
		return r, nil
	case "":
		return "", errs.E(errs.Invalid, "reply: required, one of \"once\" | \"always\" | \"reject\"")
	}
	return "", errs.E(errs.Invalid, "reply: expected \"once\" | \"always\" | \"reject\", got %q", s)
}

// Request is OpenCode's PermissionRequest, plus its creation time.
type Request struct {
	ID         string         `json:"id"`
	SessionID  string         `json:"sessionID"`
	Permission string         `json:"permission"`
	Patterns   []string       `json:"patterns"`
	Metadata   map[string]any `json:"metadata"`
	Always     []string       `json:"always"`
	Tool       *ToolRef       `json:"tool,omitempty"`
	Time       struct {
		Created int64 `json:"created"`
	} `json:"time"`

	directory string
	projectID string
	ctx       context.Context // the asking turn's, without its cancellation: the decision is logged even after an abort
}

// ToolRef names the tool call that asked.
type ToolRef struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// Answer is a reply with its optional message for the model.
type Answer struct {
	Reply   Reply  `json:"reply"`
	Message string `json:"message,omitempty"`
}

// Grant is a persisted "always" (our extension, GET /permission/grant).
type Grant struct {
	ID         string `json:"id"`
	ProjectID  string `json:"projectID"`
	Permission string `json:"permission"`
	Pattern    string `json:"pattern"`
	SessionID  string `json:"sessionID"`
	RequestID  string `json:"requestID"`
	Time       struct {
		Created int64 `json:"created"`
	} `json:"time"`
}

// Decision is one entry of the decision log (GET /permission/history).
type Decision struct {
	RequestID  string   `json:"requestID"`
	SessionID  string   `json:"sessionID"`
	Directory  string   `json:"directory"`
	Permission string   `json:"permission"`
	Patterns   []string `json:"patterns"`
	Reply      Reply    `json:"reply"`
	Message    string   `json:"message,omitempty"`
	Cause      string   `json:"cause" enum:"reply,timeout,cancel"`
	Client     string   `json:"client,omitempty"`
	Addr       string   `json:"addr,omitempty"`
	Time       struct {
		Asked   int64 `json:"asked"`
		Decided int64 `json:"decided"`
	} `json:"time"`
}

// Service evaluates rules, holds pending requests and remembers grants.
type Service struct {
	db     store.Store
	bus    *bus.Bus
	log    *slog.Logger
	ids    *id.Source
	broker *pending.Broker[Request, Answer]

	mu     sync.Mutex
	config Config
	grants map[string][]Rule // project -> allow rules from "always"
	loaded map[string]bool
}

// Options configure the Service.
type Options struct {
	DB     store.Store
	Bus    *bus.Bus
	Logger *slog.Logger
	Config Config
}

// New makes the permission service.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{db: o.DB, bus: o.Bus, log: o.Logger, ids: id.NewSource(), config: o.Config,
		grants: map[string][]Rule{}, loaded: map[string]bool{}}
	s.broker = pending.New[Request, Answer](id.Permission, "Permission request",
		func(reason string) Answer { return Answer{Reply: Reject, Message: reason} },
		pending.Hooks[Request, Answer]{Asked: s.asked, Resolved: s.resolved, Recorded: s.record})
	return s
}

// SetConfig replaces the configured rules and timeout (PATCH /config).
func (s *Service) SetConfig(c Config) {
	s.mu.Lock()
	s.config = c
	s.mu.Unlock()
}

func (s *Service) asked(it pending.Item[Request]) {
	s.publish(it.Request.directory, "permission.asked", it.Request)
}

func (s *Service) resolved(it pending.Item[Request], r pending.Resolution[Answer]) {
	req := it.Request
	s.publish(req.directory, "permission.replied", map[string]any{
		"sessionID": req.SessionID, "requestID": req.ID, "reply": r.Reply.Reply, "cause": string(r.Cause),
	})
}

// record appends a decision to the log and forgets the stored request, in one write, after the
// waiting tool call has been released.
func (s *Service) record(it pending.Item[Request], r pending.Resolution[Answer]) {
	req := it.Request
	patterns, err := json.Marshal(req.Patterns)
	if err == nil {
		err = s.db.Tx(req.ctx, func(q store.Tx) error {
			if err := q.LogDecision(req.ctx, store.Decision{
				RequestID: req.ID, SessionID: req.SessionID, Directory: req.directory, Permission: req.Permission, Patterns: patterns,
				Reply: string(r.Reply.Reply), Message: r.Reply.Message, Cause: string(r.Cause), Client: r.By.Client, Addr: r.By.Addr,
				Asked: req.Time.Created, Decided: r.At.UnixMilli(),
			}); err != nil {
				return err
			}
			return q.DeletePending(req.ctx, req.ID)
		})
	}
	if err != nil {
		s.log.Error("log permission decision", "request", req.ID, "err", err)
	}
}

// storedRequest is a waiting request as the store keeps it, with what the API does not show.
type storedRequest struct {
	Request
	Directory string `json:"directory"`
	ProjectID string `json:"projectID"`
}

const pendingKind = "permission"

func (s *Service) persist(ctx context.Context, req Request) error {
	data, err := json.Marshal(storedRequest{Request: req, Directory: req.directory, ProjectID: req.projectID})
	if err != nil {
		return err
	}
	return s.db.PutPending(ctx, store.PendingRequest{ID: req.ID, Kind: pendingKind, SessionID: req.SessionID, Created: req.Time.Created, Data: data})
}

// Stored returns the requests that were waiting when the server last stopped, oldest first. A
// session resumes each one's turn with Resume, or gives it up with Abandon.
func (s *Service) Stored(ctx context.Context) ([]Request, error) {
	rows, err := s.db.ListPending(ctx, pendingKind)
	if err != nil {
		return nil, err
	}
	out := make([]Request, 0, len(rows))
	for _, row := range rows {
		var sr storedRequest
		if err := json.Unmarshal(row.Data, &sr); err != nil {
			return nil, fmt.Errorf("permission: stored request %s: %w", row.ID, err)
		}
		req := sr.Request
		req.directory, req.projectID, req.ctx = sr.Directory, sr.ProjectID, context.WithoutCancel(ctx)
		out = append(out, req)
	}
	return out, nil
}

// Abandon resolves a stored request that cannot be resumed as cancelled: it is logged, forgotten
// and announced with permission.replied, so that no client keeps showing it.
func (s *Service) Abandon(req Request, reason string) {
	r := pending.Resolution[Answer]{Reply: Answer{Reply: Reject, Message: reason}, Cause: pending.Cancelled, At: time.Now(), Reason: reason}
	it := pending.Item[Request]{ID: req.ID, SessionID: req.SessionID, Request: req}
	s.resolved(it, r)
	s.record(it, r)
}

// Reserve lists and announces a stored request again from the moment the server starts, before
// its resumed turn reaches the gate that waits for it.
func (s *Service) Reserve(req Request) {
	s.broker.Reserve(req.ID, req.SessionID, req, time.UnixMilli(req.Time.Created))
}

// Unreserve cancels a reserved request whose resumed turn ended without asking it.
func (s *Service) Unreserve(requestID string) {
	s.broker.Unreserve(requestID, "the resumed tool call did not ask for it again")
}

// Resume returns the gate for running again a tool call whose request req was waiting when the
// server stopped. The call's first check that asks what req asked waits for req itself — same ID,
// announced again, its timeout counted from when it was first asked — so that what is approved is
// exactly what runs; any other check is an ordinary one.
func (s *Service) Resume(sc Scope, req Request) tool.Gate {
	return &resumeGate{gate: gate{s: s, sc: sc}, req: req}
}

type resumeGate struct {
	gate
	req  Request
	mu   sync.Mutex
	used bool
}

func (g *resumeGate) Check(ctx context.Context, ask tool.Ask) error {
	patterns := ask.Patterns
	if len(patterns) == 0 {
		patterns = []string{"*"}
	}
	g.mu.Lock()
	mine := !g.used && ask.Permission == g.req.Permission && slices.Equal(patterns, g.req.Patterns)
	g.used = g.used || mine
	g.mu.Unlock()
	if !mine {
		return g.gate.Check(ctx, ask)
	}
	g.s.mu.Lock()
	timeout := g.s.config.Timeout
	g.s.mu.Unlock()
	if timeout > 0 {
		timeout -= time.Since(time.UnixMilli(g.req.Time.Created))
		timeout = max(timeout, time.Nanosecond) // expired while the server was down: times out at once
	}
	return g.s.wait(ctx, g.req, timeout)
}

func (s *Service) publish(dir, typ string, props any) {
	s.bus.Emit(s.log, dir, typ, props)
}

// Scope identifies where a tool call runs, for rules and grants.
type Scope struct {
	SessionID string
	Directory string
	ProjectID string
	MessageID string
	CallID    string
	Rules     []Rule // the session's (and agent's) rules, applied after the config's
}

// Gate returns the tool.Gate for one tool call.
func (s *Service) Gate(sc Scope) tool.Gate { return gate{s: s, sc: sc} }

type gate struct {
	s  *Service
	sc Scope
}

// ErrRejected matches (errors.Is) every error a refused request returns.
var ErrRejected = errors.New("permission rejected")

// rejected is a refusal whose text is exactly what the model is told.
type rejected string

func (r rejected) Error() string        { return string(r) }
func (r rejected) Is(target error) bool { return target == ErrRejected }

func rejectf(format string, args ...any) error { return rejected(fmt.Sprintf(format, args...)) }

func (g gate) Check(ctx context.Context, ask tool.Ask) error {
	return g.s.check(ctx, g.sc, ask)
}

// rulesFor returns the rules a call is judged by (defaults, the user's configuration, the session's
// agent) and, apart, the project's remembered grants: a grant only turns an ask into an allow, so a
// deny from the configuration always wins over an earlier "always".
func (s *Service) rulesFor(ctx context.Context, sc Scope) (rules, grants []Rule, timeout time.Duration, err error) {
	grants, err = s.projectGrants(ctx, sc.ProjectID)
	if err != nil {
		return nil, nil, 0, err
	}
	s.mu.Lock()
	cfg := s.config
	s.mu.Unlock()
	rules = append(Defaults(), cfg.Rules...)
	rules = append(rules, sc.Rules...)
	return rules, grants, cfg.Timeout, nil
}

// granted reports whether a remembered grant covers permission and pattern.
func granted(grants []Rule, permission, pattern string) bool {
	return Evaluate(grants, permission, pattern) == Allow
}

func (s *Service) check(ctx context.Context, sc Scope, ask tool.Ask) error {
	rules, grants, timeout, err := s.rulesFor(ctx, sc)
	if err != nil {
		return err
	}
	patterns := ask.Patterns
	if len(patterns) == 0 {
		patterns = []string{"*"}
	}
	needAsk := false
	for _, p := range patterns {
		switch Evaluate(rules, ask.Permission, p) {
		case Deny:
			return rejectf("The user has specified a rule which prevents you from using this specific tool call (%s %s). Try another approach, or ask the user", ask.Permission, p)
		case Ask:
			// What cannot be judged before it runs is never covered by a remembered grant.
			if len(ask.Unjudged) > 0 || !granted(grants, ask.Permission, p) {
				needAsk = true
			}
		}
	}
	if !needAsk {
		return nil
	}
	req := Request{ID: s.broker.NewID(), SessionID: sc.SessionID, Permission: ask.Permission, Patterns: patterns,
		Metadata: ask.Metadata, Always: ask.Always, directory: sc.Directory, projectID: sc.ProjectID,
		ctx: context.WithoutCancel(ctx)}
	if req.Metadata == nil {
		req.Metadata = map[string]any{}
	}
	if req.Always == nil {
		req.Always = []string{}
	}
	if sc.CallID != "" {
		req.Tool = &ToolRef{MessageID: sc.MessageID, CallID: sc.CallID}
	}
	req.Time.Created = time.Now().UnixMilli()
	if err := s.persist(ctx, req); err != nil {
		return fmt.Errorf("the permission request could not be stored, so the action was not performed: %w", err)
	}
	return s.wait(ctx, req, timeout)
}

// wait asks req (stored already) and turns the answer into what the tool call gets.
func (s *Service) wait(ctx context.Context, req Request, timeout time.Duration) error {
	res := s.broker.Ask(ctx, req.ID, req.SessionID, req, timeout)
	switch {
	case res.Cause == pending.TimedOut:
		return rejectf("Permission request timed out: no one answered within %s, so the action was not performed", timeout)
	case res.Cause == pending.Cancelled:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return rejectf("the permission request was cancelled (%s)", res.Reason)
	case res.Reply.Reply == Reject:
		if res.Reply.Message != "" {
			return rejectf("The user rejected permission to use this specific tool call with the following feedback: %s", res.Reply.Message)
		}
		return rejectf("The user rejected permission to use this specific tool call")
	case res.Reply.Reply == Always:
		if err := s.remember(req.ctx, req); err != nil {
			s.log.Error("persist always grant", "err", err)
		}
	}
	return nil
}

// unjudged reports whether req asks for something that cannot be judged before it runs (its
// metadata says why); such a request is answered each time and never remembered.
func unjudged(req Request) bool {
	_, ok := req.Metadata["unjudged"]
	return ok
}

// remember persists the "always" patterns of req for its project and approves other waiting
// requests of the project that they now cover.
func (s *Service) remember(ctx context.Context, req Request) error {
	if unjudged(req) {
		return nil // nothing lasting may be remembered for it; this one answer allowed it once
	}
	always := req.Always
	if len(always) == 0 {
		always = req.Patterns
	}
	now := time.Now().UnixMilli()
	// The patterns of one answer are one grant set: all of them are stored, or none.
	err := s.db.Tx(ctx, func(q store.Tx) error {
		for _, p := range always {
			g := store.Grant{ID: s.ids.New(id.Grant), ProjectID: req.projectID, Permission: req.Permission, Pattern: p,
				SessionID: req.SessionID, RequestID: req.ID, Created: now}
			if err := q.AddGrant(ctx, g); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.loaded, req.projectID)
	s.mu.Unlock()
	grants, err := s.projectGrants(ctx, req.projectID)
	if err != nil {
		return err
	}
	for _, it := range s.broker.List("") {
		other := it.Request
		if other.projectID != req.projectID || unjudged(other) {
			continue
		}
		covered := true
		for _, p := range other.Patterns {
			if !granted(grants, other.Permission, p) {
				covered = false
			}
		}
		if covered {
			if err := s.broker.Reply(other.ID, Answer{Reply: Always}, pending.Who{Client: "tandem", Addr: "always grant " + req.ID}); err != nil {
				// Resolved meanwhile by someone else: that answer stands.
				s.log.Debug("always grant: request already resolved", "request", other.ID, "err", err)
			}
		}
	}
	return nil
}

func (s *Service) projectGrants(ctx context.Context, projectID string) ([]Rule, error) {
	s.mu.Lock()
	if s.loaded[projectID] {
		r := s.grants[projectID]
		s.mu.Unlock()
		return r, nil
	}
	s.mu.Unlock()
	rows, err := s.db.Grants(ctx, projectID)
	if err != nil {
		return nil, err
	}
	rules := make([]Rule, 0, len(rows))
	for _, g := range rows {
		rules = append(rules, Rule{Permission: g.Permission, Pattern: g.Pattern, Action: Allow})
	}
	s.mu.Lock()
	s.grants[projectID], s.loaded[projectID] = rules, true
	s.mu.Unlock()
	return rules, nil
}

// List returns the waiting requests, oldest first; empty filters match everything.
func (s *Service) List(sessionID, directory string) []Request {
	items := s.broker.List(sessionID)
	out := make([]Request, 0, len(items))
	for _, it := range items {
		if directory == "" || it.Request.directory == directory {
			out = append(out, it.Request)
		}
	}
	return out
}

// Reply answers a waiting request; the first answer wins, later ones get Conflict with the winner.
func (s *Service) Reply(requestID string, a Answer, by pending.Who) error {
	// The ID's form is checked where it arrives (the route's binder); an unknown one is NotFound.
	if _, err := ParseReply(string(a.Reply)); err != nil {
		return err
	}
	return s.broker.Reply(requestID, a, by)
}

// Owner returns the session of a waiting request, for the legacy route's check.
func (s *Service) Owner(requestID string) (string, bool) {
	it, ok := s.broker.Get(requestID)
	return it.SessionID, ok
}

// Grants lists persisted grants, of one project or all.
func (s *Service) Grants(ctx context.Context, projectID string) ([]Grant, error) {
	rows, err := s.db.Grants(ctx, projectID)
	if err != nil {
		return nil, err
	}
	out := make([]Grant, 0, len(rows))
	for _, g := range rows {
		out = append(out, grantOf(g))
	}
	return out, nil
}

func grantOf(g store.Grant) Grant {
	out := Grant{ID: g.ID, ProjectID: g.ProjectID, Permission: g.Permission, Pattern: g.Pattern, SessionID: g.SessionID, RequestID: g.RequestID}
	out.Time.Created = g.Created
	return out
}

// Revoke deletes a grant; later matching requests ask again.
func (s *Service) Revoke(ctx context.Context, grantID string) (Grant, error) {
	if !id.Valid(id.Grant, grantID) {
		return Grant{}, errs.E(errs.Invalid, "malformed grant ID %q", grantID)
	}
	g, err := s.db.DeleteGrant(ctx, grantID)
	if errors.Is(err, store.ErrNotFound) {
		return Grant{}, errs.E(errs.NotFound, "Grant not found: %s", grantID)
	}
	if err != nil {
		return Grant{}, err
	}
	s.mu.Lock()
	delete(s.loaded, g.ProjectID)
	s.mu.Unlock()
	return grantOf(g), nil
}

// History returns the newest decisions first.
func (s *Service) History(ctx context.Context, sessionID string, limit int) ([]Decision, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := s.db.Decisions(ctx, sessionID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Decision, 0, len(rows))
	for _, d := range rows {
		dec := Decision{RequestID: d.RequestID, SessionID: d.SessionID, Directory: d.Directory, Permission: d.Permission,
			Reply: Reply(d.Reply), Message: d.Message, Cause: d.Cause, Client: d.Client, Addr: d.Addr}
		if err := json.Unmarshal(d.Patterns, &dec.Patterns); err != nil {
			return nil, fmt.Errorf("permission: decision %s: patterns: %w", d.RequestID, err)
		}
		dec.Time.Asked, dec.Time.Decided = d.Asked, d.Decided
		out = append(out, dec)
	}
	return out, nil
}
