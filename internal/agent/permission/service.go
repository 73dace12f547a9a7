package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Reply is a client's answer.
type Reply = api.PermissionReply

// The three replies, exactly as OpenCode spells them.
const (
	Once   = api.PermissionOnce
	Always = api.PermissionAlways
	Reject = api.PermissionReject
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

// Request is a waiting request: its wire form, and where it was asked.
type Request struct {
	api.PermissionRequest

	directory string
	projectID string
	ctx       context.Context // the asking turn's, without its cancellation: the decision is logged even after an abort
}

// ToolRef names the tool call that asked.
type ToolRef = api.PermissionToolRef

// Answer is a reply with its optional message for the model. Reply is what OpenCode's clients
// know (once, always, reject); Decision is the key that was chosen, when it says more.
type Answer struct {
	Reply    Reply  `json:"reply"`
	Decision string `json:"decision,omitempty"`
	Message  string `json:"message,omitempty"`
	// Patterns narrow a lasting answer (session, always, deny-always) to some of the patterns its
	// decision offers; empty means all of them.
	Patterns []string `json:"patterns,omitempty"`

	settled bool // given by a grant to a waiting request it decides, not by a person: nothing more is remembered
}

// key is the decision the answer stands for.
func (a Answer) key() string {
	if a.Decision != "" {
		return a.Decision
	}
	return string(a.Reply)
}

// Grant is a persisted "always" or "deny-always" (our extension, GET /permission/grant).
type Grant struct {
	ID         string `json:"id"`
	ProjectID  string `json:"projectID"`
	Permission string `json:"permission"`
	Pattern    string `json:"pattern"`
	Action     Action `json:"action" enum:"allow,deny"`
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
	Cause      string   `json:"cause" enum:"reply,timeout,cancel,grant"`
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

	mu       sync.Mutex
	config   Config
	grants   map[string][]Rule // project -> allow and deny rules from "always" and "deny-always"
	loaded   map[string]bool
	sessions map[string][]Rule // session -> allow rules from "session", until the session ends
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
		grants: map[string][]Rule{}, loaded: map[string]bool{}, sessions: map[string][]Rule{}}
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
	s.publish(it.Request.directory, api.EventPermissionAsked, it.Request.PermissionRequest)
}

func (s *Service) resolved(it pending.Item[Request], r pending.Resolution[Answer]) {
	req := it.Request
	s.publish(req.directory, api.EventPermissionReplied, api.PermissionReplied{
		SessionID: req.SessionID, RequestID: req.ID, Reply: r.Reply.Reply, Decision: r.Reply.key(), Cause: string(r.Cause),
		Client: r.By.Client,
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
				Reply: r.Reply.key(), Message: r.Reply.Message, Cause: string(r.Cause), Client: r.By.Client, Addr: r.By.Addr,
				Asked: req.Time.Created, Decided: r.At.UnixMilli(),
			}); err != nil {
				return err
			}
			return pending.Forget(req.ctx, q, s.broker.Shared(), req.ID)
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

// Stored returns the requests that were waiting when the server last stopped, oldest first, of
// the sessions only selects. A session resumes each one's turn with Resume, or gives it up with
// Abandon.
func (s *Service) Stored(ctx context.Context, only store.SessionFilter) ([]Request, error) {
	rows, err := s.db.ListPending(ctx, pendingKind)
	if err != nil {
		return nil, err
	}
	out := make([]Request, 0, len(rows))
	for _, row := range rows {
		if !only.Has(row.SessionID) {
			continue
		}
		req, err := decodeStored(ctx, row)
		if err != nil {
			return nil, err
		}
		out = append(out, req)
	}
	return out, nil
}

func decodeStored(ctx context.Context, row store.PendingRequest) (Request, error) {
	var sr storedRequest
	if err := json.Unmarshal(row.Data, &sr); err != nil {
		return Request{}, fmt.Errorf("permission: stored request %s: %w", row.ID, err)
	}
	req := sr.Request
	req.directory, req.projectID, req.ctx = sr.Directory, sr.ProjectID, context.WithoutCancel(ctx)
	req.Decisions = Decisions(req) // stored before decision lists existed, or by an older version
	return req, nil
}

// Share settles requests across the nodes that share the store: any node lists every node's
// requests, and the first answer at any node wins (pending.Shared). claimed tells the node that
// asked a request that an answer given here won; that node calls Apply.
func (s *Service) Share(ctx context.Context, claimed func(kind, itemID, sessionID string)) {
	s.broker.Share(pending.Shared[Request]{Ctx: ctx, DB: s.db, Kind: pendingKind, Log: s.log, Claimed: claimed,
		Decode: func(row store.PendingRequest) (Request, error) { return decodeStored(ctx, row) }})
}

// Apply gives a request waiting here the answer another node claimed for it.
func (s *Service) Apply(requestID string) { s.broker.Apply(requestID) }

// PendingKind is the kind of the rows this service stores (store.PendingRequest.Kind).
const PendingKind = pendingKind

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
	if err := g.s.wait(ctx, g.req, timeout); err != nil {
		return err
	}
	return g.s.stillAllowed(ctx, g.sc, g.req)
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
	Rules     []Rule // the agent's rules, applied after the configuration's
	// Session are the rules a client set on the session (POST /session, PATCH /session/{id}, the
	// MCP tandem tool's permission argument). They can only make a call stricter (see Decide).
	Session []Rule
	// Within are the rules of the sessions a subagent's session descends from, its parent's
	// first: a subagent may do only what each of them may, so a call is judged by its own rules and
	// theirs, and the strictest answer holds.
	Within []Layer
	// ParentSessionID and RootSessionID, for a subagent's session, are shown on its requests.
	ParentSessionID, RootSessionID string
}

// Layer is what one session's calls are judged by besides the configuration: its agent's rules
// and its client's session rules.
type Layer struct {
	Rules   []Rule
	Session []Rule
}

// decide is Decide for a call of sc, made stricter by the sessions sc descends from (sc.Within);
// user are the configuration's rules (defaults included), without the agent's. inherited says a
// parent's rules made it stricter.
func decide(user []Rule, sc Scope, permission, pattern string) (action Action, by, ignored *Rule, inherited bool) {
	action, by, ignored = Decide(append(slices.Clip(user), sc.Rules...), sc.Session, permission, pattern)
	for _, l := range sc.Within {
		up, _, _ := Decide(append(slices.Clip(user), l.Rules...), l.Session, permission, pattern)
		if strictness(up) > strictness(action) {
			action, by, inherited = up, nil, true
		}
	}
	return action, by, ignored, inherited
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

// rulesFor returns the user's rules a call is judged by (defaults, the user's configuration, the
// session's agent) and, apart, the remembered grants of the project and of the session. A persisted
// deny refuses before any rule is read; an allow grant only turns an ask into an allow, so a deny
// from the configuration (or from the session's rules) always wins over an earlier "always".
//
// rules are the defaults and the configuration's, without the agent's (sc.Rules): decide adds
// those, and a subagent's parents' own.
func (s *Service) rulesFor(ctx context.Context, sc Scope) (rules, grants []Rule, timeout time.Duration, err error) {
	grants, err = s.projectGrants(ctx, sc.ProjectID)
	if err != nil {
		return nil, nil, 0, err
	}
	s.mu.Lock()
	cfg := s.config
	grants = append(slices.Clone(grants), s.sessions[sc.SessionID]...)
	s.mu.Unlock()
	rules = append(Defaults(), cfg.Rules...)
	return rules, grants, cfg.Timeout, nil
}

// grantFor returns what remembered grants say about permission and pattern: Deny when a deny grant
// matches (whatever else does), Allow when an allow grant does, and Ask otherwise.
func grantFor(grants []Rule, permission, pattern string) (Action, Rule) {
	action, by := Ask, Rule{}
	for _, g := range grants {
		if !Match(g.Permission, permission) || !Match(g.Pattern, pattern) {
			continue
		}
		if g.Action == Deny {
			return Deny, g
		}
		action, by = Allow, g
	}
	return action, by
}

// granted reports whether a remembered grant allows permission and pattern.
func granted(grants []Rule, permission, pattern string) bool {
	a, _ := grantFor(grants, permission, pattern)
	return a == Allow
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
	for _, p := range patterns {
		if a, by := grantFor(grants, ask.Permission, p); a == Deny {
			s.logDenied(ctx, sc, ask.Permission, patterns, by)
			return rejectf("The user has chosen to always reject this tool call (%s %s). Try another approach, or ask the user", ask.Permission, p)
		}
	}
	needAsk := false
	var ignored []Rule
	for _, p := range patterns {
		action, by, loosening, inherited := decide(rules, sc, ask.Permission, p)
		if loosening != nil {
			s.log.Warn("a session rule from a client cannot allow what the user's rules ask or deny: ignored",
				"session", sc.SessionID, "permission", ask.Permission, "pattern", p, "rule", *loosening, "user", Evaluate(append(slices.Clip(rules), sc.Rules...), ask.Permission, p))
			if !slices.Contains(ignored, *loosening) {
				ignored = append(ignored, *loosening)
			}
		}
		switch action {
		case Deny:
			if inherited {
				return inheritedDenial(ask.Permission, p)
			}
			return denial(by, ask.Permission, p)
		case Ask:
			// What cannot be judged before it runs is never covered by a remembered grant.
			if len(ask.Unjudged) > 0 || !granted(grants, ask.Permission, p) {
				needAsk = true
			}
		}
	}
	// What the action also needs (a command's writes) is decided as its own ask would be, and
	// asked, if at all, in this one request.
	for _, n := range ask.With {
		if a, by := grantFor(grants, n.Permission, n.Pattern); a == Deny {
			s.logDenied(ctx, sc, n.Permission, []string{n.Pattern}, by)
			return rejectf("The user has chosen to always reject this tool call (%s %s). Try another approach, or ask the user", n.Permission, n.Pattern)
		}
		action, _, _, inherited := decide(rules, Scope{Rules: sc.Rules, Within: sc.Within}, n.Permission, n.Pattern)
		switch action {
		case Deny:
			if inherited {
				return inheritedDenial(n.Permission, n.Pattern)
			}
			return rejectf("The user has specified a rule which prevents you from using this specific tool call (%s %s). Try another approach, or ask the user", n.Permission, n.Pattern)
		case Ask:
			if n.Unjudged != "" || !granted(grants, n.Permission, n.Pattern) {
				needAsk = true
			}
		}
	}
	if !needAsk {
		return nil
	}
	req := Request{PermissionRequest: api.PermissionRequest{ID: s.broker.NewID(), SessionID: sc.SessionID, Permission: ask.Permission,
		Patterns: patterns, Metadata: ask.Metadata, Always: ask.Always}, directory: sc.Directory, projectID: sc.ProjectID,
		ctx: context.WithoutCancel(ctx)}
	if req.Metadata == nil {
		req.Metadata = map[string]any{}
	}
	if req.Always == nil {
		req.Always = []string{}
	}
	if len(ask.Unjudged) > 0 {
		if _, ok := req.Metadata["unjudged"]; !ok {
			req.Metadata["unjudged"] = ask.Unjudged
		}
	}
	if len(ignored) > 0 {
		// Whoever answers sees that the client asked to allow this, and that it was not its to allow.
		req.Metadata["ignoredSessionRules"] = ignored
	}
	if sc.CallID != "" {
		req.Tool = &ToolRef{MessageID: sc.MessageID, CallID: sc.CallID}
	}
	req.ParentSessionID, req.RootSessionID = sc.ParentSessionID, sc.RootSessionID
	req.Decisions = Decisions(req)
	req.Time.Created = time.Now().UnixMilli()
	if err := s.persist(ctx, req); err != nil {
		return fmt.Errorf("the permission request could not be stored, so the action was not performed: %w", err)
	}
	if err := s.wait(ctx, req, timeout); err != nil {
		return err
	}
	return s.stillAllowed(ctx, sc, req)
}

// stillAllowed reads the rules again after an approved wait: a deny configured while the request
// waited (PATCH /config, or a restart with a new file) beats the answer, whether a person gave it or
// a grant settled it, because nothing overrules a deny.
func (s *Service) stillAllowed(ctx context.Context, sc Scope, req Request) error {
	rules, _, _, err := s.rulesFor(ctx, sc)
	if err != nil {
		return err
	}
	for _, p := range req.Patterns {
		if action, by, _, inherited := decide(rules, sc, req.Permission, p); action == Deny {
			if inherited {
				return inheritedDenial(req.Permission, p)
			}
			return denial(by, req.Permission, p)
		}
	}
	return nil
}

// denial is what the model is told when a rule denies a call: OpenCode's words for the user's rules,
// and its own for a session's (by, when a session rule denied it).
func denial(by *Rule, permission, pattern string) error {
	if by != nil {
		return rejectf("A rule of this session prevents you from using this specific tool call (%s %s). Try another approach, or ask the user", permission, pattern)
	}
	return rejectf("The user has specified a rule which prevents you from using this specific tool call (%s %s). Try another approach, or ask the user", permission, pattern)
}

// inheritedDenial is what a subagent is told when the rules of the session that started it deny
// the call.
func inheritedDenial(permission, pattern string) error {
	return rejectf("The rules of the session that started this subagent prevent it from using this specific tool call (%s %s). Try another approach, or report back", permission, pattern)
}

// logDenied records in the decision log a call that a deny grant refused without asking.
func (s *Service) logDenied(ctx context.Context, sc Scope, permission string, patterns []string, by Rule) {
	data, err := json.Marshal(patterns)
	if err == nil {
		now := time.Now().UnixMilli()
		err = s.db.LogDecision(ctx, store.Decision{
			RequestID: s.broker.NewID(), SessionID: sc.SessionID, Directory: sc.Directory, Permission: permission, Patterns: data,
			Reply: KeyDenyAlways, Cause: "grant", Client: "tandem", Addr: "deny grant " + by.Permission + " " + by.Pattern,
			Asked: now, Decided: now,
		})
	}
	if err != nil {
		s.log.Error("log a call a deny grant refused", "session", sc.SessionID, "err", err)
	}
}

// wait asks req (stored already) and turns the answer into what the tool call gets.
func (s *Service) wait(ctx context.Context, req Request, timeout time.Duration) error {
	res := s.broker.Ask(ctx, req.ID, req.SessionID, req, timeout)
	switch {
	case res.Cause == pending.Stopped:
		// Still stored: the next start asks it again with the same ID and resumes the call.
		return fmt.Errorf("permission request %s: %w", req.ID, pending.ErrServerStopping)
	case res.Cause == pending.TimedOut:
		return rejectf("Permission request timed out: no one answered within %s, so the action was not performed", timeout)
	case res.Cause == pending.Cancelled:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return rejectf("the permission request was cancelled (%s)", res.Reason)
	}
	key := res.Reply.key()
	switch key {
	case KeySession, KeyAlways, KeyDenyAlways:
		if res.Reply.settled {
			break // a grant answered: remember only what a person saw
		}
		// A lasting answer is kept even when storing it fails; this call gets what was answered.
		if err := s.remember(req.ctx, req, key, remembered(req, res.Reply)); err != nil {
			s.log.Error("remember a lasting answer", "request", req.ID, "decision", key, "err", err)
		}
	}
	if openCodeReply(key) == Reject {
		if res.Reply.Message != "" {
			return rejectf("The user rejected permission to use this specific tool call with the following feedback: %s", res.Reply.Message)
		}
		if key == KeyDenyAlways {
			return rejectf("The user rejected permission to use this specific tool call, and every call like it (%s %s)", req.Permission, strings.Join(remembered(req, res.Reply), ", "))
		}
		return rejectf("The user rejected permission to use this specific tool call")
	}
	return nil
}

// unjudged reports whether req asks for something that cannot be judged before it runs (its
// metadata says why); such a request is answered each time and never remembered.
func unjudged(req Request) bool {
	_, ok := req.Metadata["unjudged"]
	return ok
}

// remembered are the patterns a lasting answer a keeps for req: those the person chose, or all
// that its decision offers.
func remembered(req Request, a Answer) []string {
	if len(a.Patterns) > 0 {
		return slices.Clone(a.Patterns)
	}
	return rulePatterns(req)
}

// remember keeps the lasting answer key to req for patterns: "session" in memory for req's
// session, "always" and "deny-always" persisted for its project. Then it answers the other
// waiting requests the grants now decide.
func (s *Service) remember(ctx context.Context, req Request, key string, patterns []string) error {
	if unjudged(req) {
		return nil // nothing lasting may be remembered for it; this one answer decided it once
	}
	if key == KeySession {
		s.mu.Lock()
		for _, p := range patterns {
			r := Rule{Permission: req.Permission, Pattern: p, Action: Allow}
			if !slices.Contains(s.sessions[req.SessionID], r) {
				s.sessions[req.SessionID] = append(s.sessions[req.SessionID], r)
			}
		}
		s.mu.Unlock()
		return s.settle(ctx, req.projectID, pending.Who{Client: "tandem", Addr: "grant of " + req.ID})
	}
	action := Allow
	if key == KeyDenyAlways {
		action = Deny
	}
	now := time.Now().UnixMilli()
	// The patterns of one answer are one grant set: all of them are stored, or none.
	err := s.db.Tx(ctx, func(q store.Tx) error {
		for _, p := range patterns {
			g := store.Grant{ID: s.ids.New(id.Grant), ProjectID: req.projectID, Permission: req.Permission, Pattern: p,
				Action: string(action), SessionID: req.SessionID, RequestID: req.ID, Created: now}
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
	return s.settle(ctx, req.projectID, pending.Who{Client: "tandem", Addr: "grant of " + req.ID})
}

// settle answers the waiting requests of a project that its grants now decide: refused when a
// deny grant matches one of their patterns, allowed when grants (the project's, or their session's)
// allow every pattern and they can be judged. by is who the answers are logged as.
func (s *Service) settle(ctx context.Context, projectID string, by pending.Who) error {
	project, err := s.projectGrants(ctx, projectID)
	if err != nil {
		return err
	}
	for _, it := range s.broker.List("") {
		other := it.Request
		if other.projectID != projectID {
			continue
		}
		s.mu.Lock()
		grants := append(slices.Clone(project), s.sessions[other.SessionID]...)
		s.mu.Unlock()
		var answer *Answer
		allowed := !unjudged(other)
		for _, p := range other.Patterns {
			a, _ := grantFor(grants, other.Permission, p)
			if a == Deny {
				answer = &Answer{Reply: Reject, Decision: KeyDenyAlways, settled: true}
				break
			}
			allowed = allowed && a == Allow
		}
		if answer == nil && allowed {
			answer = &Answer{Reply: Always, Decision: KeyAlways, settled: true}
			if !coveredBy(project, other) {
				answer.Decision = KeySession
			}
		}
		if answer == nil {
			continue
		}
		if err := s.broker.Reply(other.ID, *answer, by); err != nil {
			// Resolved meanwhile by someone else: that answer stands.
			s.log.Debug("grant: request already resolved", "request", other.ID, "err", err)
		}
	}
	return nil
}

// coveredBy reports whether grants allow every pattern of req.
func coveredBy(grants []Rule, req Request) bool {
	for _, p := range req.Patterns {
		if !granted(grants, req.Permission, p) {
			return false
		}
	}
	return true
}

// EndSession forgets the "session" grants of a session that was deleted.
func (s *Service) EndSession(sessionID string) {
	s.mu.Lock()
	delete(s.sessions, sessionID)
	s.mu.Unlock()
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
		action := Action(g.Action)
		if action != Deny {
			action = Allow
		}
		rules = append(rules, Rule{Permission: g.Permission, Pattern: g.Pattern, Action: action})
	}
	s.mu.Lock()
	s.grants[projectID], s.loaded[projectID] = rules, true
	s.mu.Unlock()
	return rules, nil
}

// List returns the waiting requests, oldest first; empty filters match everything. A session's
// requests include those of the subagents it started (their parentSessionID or rootSessionID is
// the session), so whoever looks at it sees what its subagents wait for.
func (s *Service) List(sessionID, directory string) []Request {
	items := s.broker.List("")
	out := make([]Request, 0, len(items))
	for _, it := range items {
		r := it.Request
		if sessionID != "" && it.SessionID != sessionID && r.ParentSessionID != sessionID && r.RootSessionID != sessionID {
			continue
		}
		if directory == "" || r.directory == directory {
			out = append(out, r)
		}
	}
	return out
}

// Reply answers a waiting request with a decision key (a.Decision, or OpenCode's a.Reply when
// Decision is empty); a key of tandem's must be one the request offers. The first answer wins; later ones get
// Conflict with the winner.
func (s *Service) Reply(requestID string, a Answer, by pending.Who) error {
	// The ID's form is checked where it arrives (the route's binder); an unknown one is NotFound.
	key := a.key()
	if err := parseKey(key); err != nil {
		return err
	}
	// OpenCode's three replies are accepted on every request, as OpenCode's clients offer them
	// all: "always" on a request that cannot be judged allows that one call, remembering nothing.
	it, waiting := s.broker.Get(requestID)
	if waiting && key != string(openCodeReply(key)) {
		if err := offered(it.Request, key); err != nil {
			return err
		}
	}
	if len(a.Patterns) > 0 {
		if err := chosen(it.Request, waiting, key, a.Patterns); err != nil {
			return err
		}
	}
	if key == KeyRejectWithMessage && strings.TrimSpace(a.Message) == "" {
		return errs.E(errs.Invalid, "message: required with %q: it is what the agent is told", key)
	}
	// Decision is kept only when it says more than OpenCode's reply (the 409 of a late reply shows
	// {reply} alone for once, always and reject, as before).
	a.Reply, a.Decision = openCodeReply(key), key
	if key == string(a.Reply) {
		a.Decision = ""
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
	out := Grant{ID: g.ID, ProjectID: g.ProjectID, Permission: g.Permission, Pattern: g.Pattern, Action: Allow, SessionID: g.SessionID, RequestID: g.RequestID}
	if g.Action == string(Deny) {
		out.Action = Deny
	}
	out.Time.Created = g.Created
	return out
}

// NewGrant is a rule a person adds by hand (POST /permission/grant): in the project, requests of
// Permission matching Pattern are refused (deny) or allowed (allow) without asking.
type NewGrant struct {
	Permission string `json:"permission" required:"true" minLength:"1" maxLength:"256" description:"The permission key: bash, edit, read, external_directory, webfetch, an MCP tool's <server>_<tool>, … (wildcards * and ? allowed)."`
	Pattern    string `json:"pattern" required:"true" minLength:"1" maxLength:"4096" description:"What it covers, as the requests' patterns: \"git push *\", \"src/*.go\", \"*\"."`
	Action     Action `json:"action,omitempty" enum:"deny,allow" description:"Default deny."`
}

// AddGrant stores a grant a person wrote for a project, and answers the waiting requests of that
// project it now decides. A deny refuses matching calls before any rule is read, as a
// "deny-always" does; an allow only turns an ask into an allow (a configured deny still wins).
func (s *Service) AddGrant(ctx context.Context, projectID string, in NewGrant, by pending.Who) (Grant, error) {
	in.Permission, in.Pattern = strings.TrimSpace(in.Permission), strings.TrimSpace(in.Pattern)
	switch {
	case in.Permission == "":
		return Grant{}, errs.E(errs.Invalid, "permission: required")
	case in.Pattern == "":
		return Grant{}, errs.E(errs.Invalid, "pattern: required")
	case len(in.Permission) > 256:
		return Grant{}, errs.E(errs.Invalid, "permission: at most 256 bytes")
	case len(in.Pattern) > 4096:
		return Grant{}, errs.E(errs.Invalid, "pattern: at most 4096 bytes")
	}
	switch in.Action {
	case "":
		in.Action = Deny
	case Deny, Allow:
	default:
		return Grant{}, errs.E(errs.Invalid, "action: expected \"deny\" | \"allow\", got %q", in.Action)
	}
	g := store.Grant{ID: s.ids.New(id.Grant), ProjectID: projectID, Permission: in.Permission, Pattern: in.Pattern,
		Action: string(in.Action), Created: time.Now().UnixMilli()}
	if err := s.db.AddGrant(ctx, g); err != nil {
		return Grant{}, err
	}
	s.mu.Lock()
	delete(s.loaded, projectID)
	s.mu.Unlock()
	if err := s.settle(ctx, projectID, by); err != nil {
		return Grant{}, err
	}
	// The store keeps one grant per project, permission, pattern and action: return the one it kept.
	all, err := s.db.Grants(ctx, projectID)
	if err != nil {
		return Grant{}, err
	}
	for _, row := range all {
		if row.Permission == g.Permission && row.Pattern == g.Pattern && row.Action == g.Action {
			return grantOf(row), nil
		}
	}
	return grantOf(g), nil
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
