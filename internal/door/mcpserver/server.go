// Package mcpserver exposes tandem sessions as MCP tools (`tandem mcp`). Approvals the agent needs go
// to the MCP client as spec-standard form elicitations while they also wait in tandem's own pending
// list; the first answer wins, and every wait is bounded so a client that cannot answer never hangs
// the turn.
package mcpserver

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

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/api"
	mcpclient "github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Strategy says what happens to an approval when the MCP client did not declare elicitation.
type Strategy string

// The strategies for clients that cannot answer approvals.
const (
	// Deny rejects every approval the client cannot answer (the default).
	Deny Strategy = "deny"
	// AllowWithinRules runs only what the permission rules already allow; anything that would ask is rejected.
	AllowWithinRules Strategy = "allow-within-rules"
	// Wait leaves the request in the pending list for REST, web or TUI clients, bounded by the timeout.
	Wait Strategy = "wait"
)

// ParseStrategy validates a strategy name from a flag or config.
func ParseStrategy(s string) (Strategy, error) {
	switch st := Strategy(s); st {
	case Deny, AllowWithinRules, Wait:
		return st, nil
	case "":
		return Deny, nil
	}
	return "", fmt.Errorf("approval strategy: expected deny, allow-within-rules or wait, got %q", s)
}

// DefaultTimeout bounds every approval the MCP server waits for.
const DefaultTimeout = 5 * time.Minute

// Options wire the server to tandem's services.
type Options struct {
	Sessions    *session.Service
	Permissions *permission.Service
	Questions   *question.Service // nil: questions stay in GET /question only
	// Elicitations are the forms and links that tandem's own MCP servers ask for during a tool call;
	// nil: they stay in GET /mcp/elicitation only.
	Elicitations Elicitations
	Bus          *bus.Bus
	Directory    string // the default working directory of new sessions
	Version      string
	Timeout      time.Duration // per approval; DefaultTimeout when zero
	Strategy     Strategy      // for clients without elicitation; Deny when empty
	Logger       *slog.Logger
}

// Elicitations is the pending list of what downstream MCP servers asked the person for.
type Elicitations interface {
	Elicitation(id string) (mcpclient.Elicitation, bool)
	Elicitations(sessionID string) []mcpclient.Elicitation
	ReplyElicitation(id string, r mcpclient.ElicitationReply, by pending.Who) error
}

// Server builds MCP servers over one set of tandem services.
type Server struct {
	o  Options
	rt *roundTrips
}

// New returns a Server; call MCP for each connection's *mcp.Server (or share one).
func New(o Options) *Server {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Strategy == "" {
		o.Strategy = Deny
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{o: o, rt: newRoundTrips()}
}

// MCP returns an MCP server with tandem's tools.
func (s *Server) MCP() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tandem", Version: s.o.Version}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{multiRoundTripVersion, "2025-11-25", "2025-06-18", "2025-03-26"},
		Instructions:              "tandem runs coding-agent sessions. Start one with the tandem tool, continue it with tandem-reply.",
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "tandem", Title: "Start a tandem session",
		Description: "Start a coding-agent session on a task and wait for its answer. Approvals the agent needs are asked through elicitation when the client supports it.",
		InputSchema: schemaOf[StartInput](), OutputSchema: schemaOf[Result]()},
		s.start)
	mcp.AddTool(srv, &mcp.Tool{Name: "tandem-reply", Title: "Continue a tandem session",
		Description: "Send a follow-up prompt to an existing tandem session and wait for its answer.",
		InputSchema: schemaOf[ReplyInput](), OutputSchema: schemaOf[Result]()},
		s.reply)
	mcp.AddTool(srv, &mcp.Tool{Name: "tandem-query", Title: "Ask about a codebase (read-only)",
		Description: "Ask a read-only question about a codebase with the plan agent: nothing is written and nothing is asked.",
		InputSchema: schemaOf[QueryInput](), OutputSchema: schemaOf[Result](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		s.query)
	mcp.AddTool(srv, &mcp.Tool{Name: "tandem-sessions", Title: "List tandem sessions",
		Description: "List recent tandem sessions with their status, newest first.",
		InputSchema: schemaOf[SessionsInput](), OutputSchema: schemaOf[SessionsResult](),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		s.sessions)
	return srv
}

// schemaOf infers a tool schema from T, with every nullable union (["null","array"] for a Go slice)
// narrowed to its one non-null type: tandem never sends null there and treats an absent field as
// empty, and single-type schemas are what every client's tool dialect accepts (Gemini's among them).
func schemaOf[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the schema of %T: %v", *new(T), err)) // the types are fixed at compile time
	}
	singleTypes(s)
	return s
}

func singleTypes(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	for _, p := range s.Properties {
		singleTypes(p)
	}
	singleTypes(s.Items)
	for _, sub := range s.AnyOf {
		singleTypes(sub)
	}
}

// StartInput is the tandem tool's input.
type StartInput struct {
	Prompt     string            `json:"prompt" jsonschema:"the task for the agent"`
	Cwd        string            `json:"cwd,omitempty" jsonschema:"the project directory (default: the server's directory)"`
	Agent      string            `json:"agent,omitempty" jsonschema:"build (default) or plan"`
	Model      string            `json:"model,omitempty" jsonschema:"provider/model, e.g. openai/gpt-4o"`
	Permission []permission.Rule `json:"permission,omitempty" jsonschema:"permission rules for this session; they can only tighten the user's rules: ask or deny make calls stricter, and allow never allows what the user's rules ask or deny (it only makes an exception to this list's own ask and deny rules)"`
}

// ReplyInput is the tandem-reply tool's input.
type ReplyInput struct {
	SessionID string `json:"sessionId" jsonschema:"the session to continue (ses_...)"`
	Prompt    string `json:"prompt" jsonschema:"the follow-up prompt"`
}

// QueryInput is the tandem-query tool's input.
type QueryInput struct {
	Prompt string `json:"prompt" jsonschema:"the question about the codebase"`
	Cwd    string `json:"cwd,omitempty" jsonschema:"the project directory (default: the server's directory)"`
}

// Result is what a turn tool returns as structuredContent.
type Result struct {
	SessionID string `json:"sessionId" jsonschema:"the tandem session; pass it to tandem-reply"`
	Answer    string `json:"answer" jsonschema:"the agent's final text"`
	Status    string `json:"status" jsonschema:"completed, unanswered (a question of this call got no answer), error or aborted"`
	Error     string `json:"error,omitempty" jsonschema:"why the turn failed"`
	Approvals string `json:"approvals" jsonschema:"how this client answers approvals and questions, then each one this call asked and how it ended"`
	// Unanswered are the questions the agent asked in this call that got no answer (the client could
	// not or did not answer them): the turn stopped at the first, and tandem-reply can give the answer.
	Unanswered []string `json:"unanswered,omitempty" jsonschema:"the agent's questions in this call that got no answer"`
}

// SessionsInput is the tandem-sessions tool's input.
type SessionsInput struct {
	Cwd   string `json:"cwd,omitempty" jsonschema:"only sessions of this directory"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many (default 20)"`
}

// SessionInfo is one listed session.
type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
	Status    string `json:"status" jsonschema:"idle, busy or retry"`
	Client    string `json:"client,omitempty" jsonschema:"the MCP client that started it"`
	Updated   int64  `json:"updated" jsonschema:"epoch milliseconds"`
}

// SessionsResult is the tandem-sessions tool's structuredContent.
type SessionsResult struct {
	Sessions []SessionInfo `json:"sessions"`
}

func (s *Server) start(ctx context.Context, req *mcp.CallToolRequest, in StartInput) (*mcp.CallToolResult, Result, error) {
	if req.Params.RequestState != "" {
		return s.nextRound(ctx, req)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, Result{}, errors.New("prompt: required")
	}
	model, err := session.ParseModel(in.Model)
	if err != nil {
		return nil, Result{}, fmt.Errorf("model: %w", err)
	}
	sid, err := s.create(ctx, req, in.Cwd, in.Agent, model, in.Permission)
	if err != nil {
		return nil, Result{}, err
	}
	out, res, err := s.turn(ctx, req, sid, in.Prompt, in.Agent, model)
	if err == nil && res.SessionID != "" && slices.ContainsFunc(in.Permission, func(r permission.Rule) bool { return r.Action == permission.Allow }) {
		// Said to the client's model, which may have hoped to approve its own commands.
		res.Approvals += "; " + allowNote
		if out != nil && len(out.Content) > 0 {
			if text, ok := out.Content[0].(*mcp.TextContent); ok {
				text.Text += "; " + allowNote
			}
		}
	}
	return out, res, err
}

// allowNote says what the allow rules of a tandem call's permission argument did.
const allowNote = "the permission argument's allow rules cannot allow what the user's rules ask or deny; they only make exceptions to its own ask and deny rules"

func (s *Server) reply(ctx context.Context, req *mcp.CallToolRequest, in ReplyInput) (*mcp.CallToolResult, Result, error) {
	if req.Params.RequestState != "" {
		return s.nextRound(ctx, req)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, Result{}, errors.New("prompt: required")
	}
	if _, err := s.o.Sessions.Get(ctx, in.SessionID); err != nil {
		return nil, Result{}, err
	}
	return s.turn(ctx, req, in.SessionID, in.Prompt, "", nil)
}

func (s *Server) query(ctx context.Context, req *mcp.CallToolRequest, in QueryInput) (*mcp.CallToolResult, Result, error) {
	if req.Params.RequestState != "" {
		return s.nextRound(ctx, req)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, Result{}, errors.New("prompt: required")
	}
	// The plan agent is read-only; the deny rules make sure nothing writes or asks even if it tried.
	rules := []permission.Rule{
		{Permission: "edit", Pattern: "*", Action: permission.Deny},
		{Permission: "bash", Pattern: "*", Action: permission.Deny},
		{Permission: "question", Pattern: "*", Action: permission.Deny},
	}
	sid, err := s.create(ctx, req, in.Cwd, "plan", nil, rules)
	if err != nil {
		return nil, Result{}, err
	}
	return s.turn(ctx, req, sid, in.Prompt, "plan", nil)
}

func (s *Server) sessions(ctx context.Context, _ *mcp.CallToolRequest, in SessionsInput) (*mcp.CallToolResult, SessionsResult, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 20
	}
	page, err := s.o.Sessions.List(ctx, session.ListInput{Directory: in.Cwd, Roots: true, Limit: limit})
	if err != nil {
		return nil, SessionsResult{}, err
	}
	statuses := s.o.Sessions.Statuses()
	out := SessionsResult{Sessions: []SessionInfo{}}
	for _, ss := range page.Items {
		st := "idle"
		if v, ok := statuses[ss.ID]; ok {
			st = v.Type
		}
		client, _ := ss.Metadata["mcpClient"].(string)
		out.Sessions = append(out.Sessions, SessionInfo{SessionID: ss.ID, Title: ss.Title, Directory: ss.Directory,
			Status: st, Client: client, Updated: ss.Time.Updated})
	}
	return nil, out, nil
}

// create makes an ordinary tandem session tagged with the MCP client's name.
func (s *Server) create(ctx context.Context, req *mcp.CallToolRequest, cwd, agent string, model *session.MessageModel, rules []permission.Rule) (string, error) {
	dir := cwd
	if dir == "" {
		dir = s.o.Directory
	}
	in := session.CreateInput{Agent: agent, Permission: rules, Metadata: map[string]any{"mcpClient": clientName(req)}}
	if model != nil {
		in.Model = &session.SessionModel{ID: model.ModelID, ProviderID: model.ProviderID}
	}
	if err := in.Validate(); err != nil {
		return "", err
	}
	sess, err := s.o.Sessions.Create(ctx, dir, in)
	if err != nil {
		return "", err
	}
	return sess.ID, nil
}

func clientName(req *mcp.CallToolRequest) string {
	if info := req.ClientInfo(); info != nil && info.Name != "" {
		return info.Name
	}
	return "mcp"
}

func canElicit(req *mcp.CallToolRequest) bool {
	c := req.ClientCapabilities()
	return c != nil && c.Elicitation != nil
}

// turn runs one prompt while a watcher routes the session's approvals, and returns its answer.
func (s *Server) turn(ctx context.Context, req *mcp.CallToolRequest, sid, prompt, agent string, model *session.MessageModel) (*mcp.CallToolResult, Result, error) {
	in := session.PromptInput{Agent: agent, Model: model, Parts: []session.PartInput{{Type: "text", Text: prompt}}}
	if multiRoundTrip(req) {
		if err := s.startBackground(ctx, sid, in); err != nil {
			return nil, Result{}, err
		}
		return s.awaitRound(ctx, req, sid)
	}
	led, done, err := s.follow(sid)
	if err != nil {
		return nil, Result{}, err
	}
	defer done()
	w := &watcher{s: s, req: req, sid: sid, elicit: canElicit(req), token: req.Params.GetProgressToken(), led: led}
	sub, _, err := s.o.Bus.Subscribe("", waitsForAPerson)
	if err != nil {
		return nil, Result{}, err
	}
	stop := w.watch(ctx, sub)
	defer stop()
	w.progress(ctx, "turn started")

	reply, err := s.o.Sessions.Prompt(ctx, sid, in)
	stop()
	done()
	if ctx.Err() != nil {
		// The client cancelled the tools/call: the turn stops too.
		if _, aerr := s.o.Sessions.Abort(context.WithoutCancel(ctx), sid); aerr != nil {
			s.o.Logger.Error("mcp: abort after cancel", "session", sid, "err", aerr)
		}
		return nil, Result{}, ctx.Err()
	}
	return s.result(sid, reply, err, led.statement(w.mode()), led.unansweredQuestions())
}

// nextRound continues a multi-round-trip call: it applies the client's answers and waits again.
func (s *Server) nextRound(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, Result, error) {
	sid, err := s.resumeRound(req)
	if err != nil {
		return nil, Result{}, err
	}
	return s.awaitRound(ctx, req, sid)
}

// result is a finished turn as the tool's result: structured, and as text for older clients.
func (s *Server) result(sid string, reply session.WithParts, err error, approvals string, unanswered []string) (*mcp.CallToolResult, Result, error) {
	if err != nil {
		return nil, Result{}, err
	}
	res := Result{SessionID: sid, Approvals: approvals, Answer: answerOf(reply), Status: "completed", Unanswered: unanswered}
	if len(unanswered) > 0 {
		res.Status = "unanswered"
	}
	if e := reply.Info.Error; e != nil {
		res.Status = "error"
		if e.Name == "MessageAbortedError" {
			res.Status = "aborted"
		}
		res.Error = e.Name
		if msg, ok := e.Data["message"].(string); ok && msg != "" {
			res.Error = e.Name + ": " + msg
		}
	}
	text := res.Answer
	if res.Error != "" {
		text = strings.TrimSpace(text + "\n\n" + res.Error)
	}
	if len(unanswered) > 0 {
		text = strings.TrimSpace(text + "\n\nUnanswered: the agent asked " + strings.Join(unanswered, "; ") +
			" and got no answer; its turn stopped there. Give the answer with tandem-reply.")
	}
	if text == "" {
		text = "(no answer)"
	}
	text += "\n\nsessionId: " + sid + "\nstatus: " + res.Status + "\napprovals: " + res.Approvals
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: res.Status == "error"}, res, nil
}

// waitsForAPerson selects the events of requests that wait for a person, and of their ends.
func waitsForAPerson(ev *bus.Event) bool {
	return strings.HasPrefix(ev.Type, "permission.") || strings.HasPrefix(ev.Type, "question.") ||
		strings.HasPrefix(ev.Type, "mcp.elicitation.")
}

// answerOf is the final text of a reply: its text parts, in order.
func answerOf(r session.WithParts) string {
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Type == "text" && p.Text != nil && !p.Synthetic {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// watcher answers one session's permission requests for the duration of one tools/call.
type watcher struct {
	s      *Server
	req    *mcp.CallToolRequest
	sid    string
	elicit bool
	token  any

	rounds bool // a multi-round-trip client: approvals go back in input-required results
	led    *ledger

	mu      sync.Mutex
	waiting map[string]context.CancelFunc // permission ID -> cancels its elicitation
	steps   float64
	wg      sync.WaitGroup
}

// mode is how this client's approvals and questions are answered, the approvals field's first part;
// the ledger adds what happened.
func (w *watcher) mode() string {
	if w.elicit && w.rounds {
		return fmt.Sprintf("asked as input requests (multi-round-trip, %s) and in the pending list, for up to %s each", multiRoundTripVersion, w.s.o.Timeout)
	}
	if w.elicit {
		return fmt.Sprintf("asked through elicitation and in the pending list, for up to %s each", w.s.o.Timeout)
	}
	switch w.s.o.Strategy {
	case Wait:
		return fmt.Sprintf("wait: this client cannot answer; requests wait in tandem's pending list (GET /permission, GET /question) for up to %s", w.s.o.Timeout)
	case AllowWithinRules:
		return "allow-within-rules: this client cannot answer; only what the permission rules allow runs"
	}
	return "deny: this client cannot answer; what needs an answer is rejected unless answered first over REST/web"
}

// cannot notes that this server ends request id itself, and why, for the ledger.
func (w *watcher) cannot(id, why string) {
	if w.led != nil {
		w.led.reason(id, why)
	}
}

type envelope struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// watch routes the session's requests until the returned stop is called; stop also closes sub and
// waits for every request the watcher started.
func (w *watcher) watch(ctx context.Context, sub *bus.Subscription) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(wctx, sub)
	}()
	return func() {
		cancel()
		sub.Close()
		<-done
		w.wg.Wait()
	}
}

func (w *watcher) run(ctx context.Context, sub *bus.Subscription) {
	var batch []*bus.Event
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Ready():
		}
		var err error
		batch, err = sub.Take(batch[:0])
		for _, ev := range batch {
			w.handle(ctx, ev)
		}
		if err != nil {
			return
		}
	}
}

// handle starts an approval or a question for an ask of this session, and withdraws it when another
// client answered first.
func (w *watcher) handle(ctx context.Context, ev *bus.Event) {
	var env envelope
	if err := json.Unmarshal(ev.Payload, &env); err != nil {
		return
	}
	switch env.Type {
	case api.EventPermissionAsked:
		var r permission.Request
		// A subagent's request (its parent or root is this session) is forwarded too.
		if json.Unmarshal(env.Properties, &r) != nil || (r.SessionID != w.sid && r.ParentSessionID != w.sid && r.RootSessionID != w.sid) {
			return
		}
		w.spawn(ctx, r.ID, func(actx context.Context) { w.approve(actx, r) })
	case api.EventQuestionAsked:
		var q question.Request
		if w.s.o.Questions == nil || json.Unmarshal(env.Properties, &q) != nil || (q.SessionID != w.sid && q.ParentSessionID != w.sid && q.RootSessionID != w.sid) {
			return
		}
		w.spawn(ctx, q.ID, func(actx context.Context) { w.ask(actx, q) })
	case api.EventElicitationAsked:
		var e struct {
			ID              string `json:"id"`
			SessionID       string `json:"sessionID"`
			ParentSessionID string `json:"parentSessionID"`
			RootSessionID   string `json:"rootSessionID"`
		}
		if !w.elicit || w.s.o.Elicitations == nil || json.Unmarshal(env.Properties, &e) != nil || (e.SessionID != w.sid && e.ParentSessionID != w.sid && e.RootSessionID != w.sid) {
			return // without forms it stays in GET /mcp/elicitation, under the MCP server's own timeout
		}
		if el, ok := w.s.o.Elicitations.Elicitation(e.ID); ok {
			if params := forwardParams(w.req, el, w.meta()); params != nil {
				w.spawn(ctx, e.ID, func(actx context.Context) { w.forward(actx, el, params) })
			}
		}
	case api.EventPermissionReplied, api.EventQuestionReplied, api.EventQuestionRejected, api.EventElicitationReplied:
		var r struct {
			RequestID string `json:"requestID"`
			ID        string `json:"id"` // what mcp.elicitation.replied calls it
		}
		if json.Unmarshal(env.Properties, &r) == nil {
			if env.Type == api.EventElicitationReplied {
				r.RequestID = r.ID
			}
			w.forget(r.RequestID) // someone answered: cancel our elicitation
		}
	}
}

// spawn runs fn for one pending request with the timeout, until the request is answered elsewhere.
func (w *watcher) spawn(ctx context.Context, id string, fn func(context.Context)) {
	actx, cancel := context.WithTimeout(ctx, w.s.o.Timeout)
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[string]context.CancelFunc{}
	}
	w.waiting[id] = cancel
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.forget(id)
		fn(actx)
	}()
}

func (w *watcher) forget(id string) {
	w.mu.Lock()
	cancel := w.waiting[id]
	delete(w.waiting, id)
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (w *watcher) meta() mcp.Meta { return mcp.Meta{"sessionId": w.sid} }

func (w *watcher) progress(ctx context.Context, msg string) {
	ss := w.req.Session
	w.mu.Lock()
	w.steps++
	n := w.steps
	w.mu.Unlock()
	if w.token != nil {
		if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{Meta: w.meta(), ProgressToken: w.token, Progress: n, Message: msg}); err != nil {
			w.s.o.Logger.Debug("mcp: progress", "err", err)
		}
	}
	//lint:ignore SA1019 the issue asks for notifications/message; 2025-11-25 (what tandem negotiates) has logging
	if err := ss.Log(ctx, &mcp.LoggingMessageParams{Meta: w.meta(), Level: "info", Logger: "tandem", Data: msg}); err != nil {
		w.s.o.Logger.Debug("mcp: log", "err", err)
	}
}

// approvalSchema is the form of one approval: the request's own decision list (permission.Decisions,
// the same keys, labels and patterns GET /permission shows) as a titled single-select, in its order,
// and a message for the agent. The keys go back to the permission service unchanged, so what the
// client can choose is exactly what the request accepts.
func approvalSchema(r permission.Request) map[string]any {
	oneOf := []map[string]any{}
	needsMessage := ""
	for _, d := range decisionsOf(r) {
		title := d.Label
		if len(d.Patterns) > 0 {
			title += " (" + strings.Join(d.Patterns, ", ") + ")"
		}
		oneOf = append(oneOf, map[string]any{"const": d.Key, "title": title})
		if d.Message {
			needsMessage = d.Label
		}
	}
	msgTitle := "Message to the agent (optional)"
	if needsMessage != "" {
		msgTitle = fmt.Sprintf("Message to the agent (required with %q)", needsMessage)
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"decision": map[string]any{"type": "string", "title": "Decision", "oneOf": oneOf},
			"message":  map[string]any{"type": "string", "title": msgTitle},
		},
		"required": []string{"decision"},
	}
}

// decisionsOf is the decision list a request carries; a request that somehow lacks one (stored by
// an older version) gets the list the permission service makes for it.
func decisionsOf(r permission.Request) []permission.Choice {
	if len(r.Decisions) > 0 {
		return r.Decisions
	}
	return permission.Decisions(r)
}

// describe is the approval's message: the tool, what it would do, and where.
func describe(r permission.Request, dir string) string {
	what := strings.Join(r.Patterns, ", ")
	if c, ok := r.Metadata["command"].(string); ok && c != "" {
		what = c
	} else if f, ok := r.Metadata["filepath"].(string); ok && f != "" {
		what = f
	}
	return fmt.Sprintf("tandem wants to use %s: %s\nin %s", r.Permission, what, dir)
}

// approve asks the client (or applies the strategy) and replies through the permission service, which
// is the one place where first-answer-wins is decided.
func (w *watcher) approve(ctx context.Context, r permission.Request) {
	w.progress(ctx, "approval needed: "+r.Permission+" "+strings.Join(r.Patterns, " "))
	who := pending.Who{Client: "mcp:" + clientName(w.req)}
	answer := func(a permission.Answer) {
		if err := w.s.o.Permissions.Reply(r.ID, a, who); err != nil {
			w.s.o.Logger.Debug("mcp: reply", "id", r.ID, "err", err)
		}
	}
	dir := w.s.o.Directory
	if sess, err := w.s.o.Sessions.Get(ctx, r.SessionID); err == nil {
		dir = sess.Directory
	}
	if !w.elicit {
		switch w.s.o.Strategy {
		case Wait:
			<-ctx.Done()
		default:
			w.cannot(r.ID, "this client cannot answer approvals (strategy "+string(w.s.o.Strategy)+"): rejected")
			answer(permission.Answer{Reply: permission.Reject, Message: "the MCP client cannot answer approvals (strategy " + string(w.s.o.Strategy) + ")"})
			return
		}
	} else {
		// An answer the request does not accept (a key it does not offer, reject-with-message without
		// a message) is asked again with the reason, a few times, then rejected.
		msg := describe(r, dir)
		for attempt := 1; ; attempt++ {
			res, err := w.req.Session.Elicit(ctx, &mcp.ElicitParams{Meta: w.meta(), Message: msg, RequestedSchema: approvalSchema(r)})
			if err != nil {
				if ctx.Err() == nil {
					w.cannot(r.ID, "it could not be asked ("+err.Error()+"): rejected")
					answer(permission.Answer{Reply: permission.Reject, Message: "the approval could not be asked: " + err.Error()})
					return
				}
				break
			}
			err = w.s.o.Permissions.Reply(r.ID, permissionAnswer(res), who)
			if !errs.Is(err, errs.Invalid) {
				if err != nil {
					w.s.o.Logger.Debug("mcp: reply", "id", r.ID, "err", err) // answered elsewhere first
				}
				return
			}
			if attempt == maxApprovalAttempts {
				w.cannot(r.ID, fmt.Sprintf("no valid answer in %d attempts: rejected", attempt))
				answer(permission.Answer{Reply: permission.Reject, Message: fmt.Sprintf("the MCP client gave no valid answer in %d attempts (last: %v)", attempt, err)})
				return
			}
			msg = describe(r, dir) + "\n\nThat answer was not accepted: " + err.Error()
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		w.cannot(r.ID, fmt.Sprintf("no answer within %s: rejected", w.s.o.Timeout))
		answer(permission.Answer{Reply: permission.Reject, Message: fmt.Sprintf("no answer within %s; rejected", w.s.o.Timeout)})
	}
}

// maxApprovalAttempts bounds how often one approval is asked again after an answer it does not accept.
const maxApprovalAttempts = 3

// permissionAnswer maps the spec's {action, content} onto a permission answer: the chosen decision
// key, as REST's reply carries it (the permission service checks that the request offers it), with
// the message for the agent. decline and cancel reject.
func permissionAnswer(res *mcp.ElicitResult) permission.Answer {
	if res.Action != "accept" {
		verb := map[string]string{"decline": "declined", "cancel": "cancelled"}[res.Action]
		if verb == "" {
			verb = "did not accept"
		}
		return permission.Answer{Decision: permission.KeyReject, Message: "the user " + verb + " the approval"}
	}
	msg, _ := res.Content["message"].(string)
	key, _ := res.Content["decision"].(string)
	return permission.Answer{Decision: key, Message: msg}
}

// questionSchema turns a question set into one form: a single-select (string with oneOf) or a
// multi-select (array of anyOf) per question, plus an optional free-text field where custom answers
// are allowed.
func questionSchema(q question.Request) map[string]any {
	props := map[string]any{}
	required := []string{}
	for i, info := range q.Questions {
		choices := []map[string]any{}
		for _, o := range info.Options {
			title := o.Label
			if o.Description != "" {
				title += " — " + o.Description
			}
			choices = append(choices, map[string]any{"const": o.Label, "title": title})
		}
		key := fmt.Sprintf("q%d", i)
		if info.Multiple {
			props[key] = map[string]any{"type": "array", "title": info.Question, "items": map[string]any{"anyOf": choices}}
		} else {
			props[key] = map[string]any{"type": "string", "title": info.Question, "oneOf": choices}
		}
		if info.AllowsCustom() {
			props[key+"_other"] = map[string]any{"type": "string", "title": info.Question + " (your own answer)"}
		} else {
			required = append(required, key)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// questionAnswers reads the form back into one answer per question; a typed answer wins over a choice.
func questionAnswers(q question.Request, content map[string]any) []question.Answer {
	out := make([]question.Answer, len(q.Questions))
	for i := range q.Questions {
		key := fmt.Sprintf("q%d", i)
		if other, _ := content[key+"_other"].(string); strings.TrimSpace(other) != "" {
			out[i] = question.Answer{other}
			continue
		}
		switch v := content[key].(type) {
		case string:
			out[i] = question.Answer{v}
		case []any:
			for _, x := range v {
				if sx, ok := x.(string); ok {
					out[i] = append(out[i], sx)
				}
			}
		}
		if out[i] == nil {
			out[i] = question.Answer{}
		}
	}
	return out
}

// forwardParams is a downstream MCP server's elicitation as this client is asked it: a form as the
// server sent it, a link only to a client that declared URL elicitation (nil otherwise: it waits in
// the pending list for a client that can open it).
func forwardParams(req *mcp.CallToolRequest, e mcpclient.Elicitation, meta mcp.Meta) *mcp.ElicitParams {
	msg := fmt.Sprintf("%s\n(asked by the MCP server %s)", e.Message, e.Server)
	if e.Mode == "url" {
		if c := req.ClientCapabilities(); c == nil || c.Elicitation == nil || c.Elicitation.URL == nil {
			return nil
		}
		return &mcp.ElicitParams{Meta: meta, Mode: "url", Message: msg, URL: e.URL, ElicitationID: e.ElicitationID}
	}
	return &mcp.ElicitParams{Meta: meta, Mode: "form", Message: msg, RequestedSchema: e.RequestedSchema}
}

// forward asks the client a downstream server's elicitation and passes the answer on; the MCP
// manager checks it against the form, as for any other client.
func (w *watcher) forward(ctx context.Context, e mcpclient.Elicitation, params *mcp.ElicitParams) {
	res, err := w.req.Session.Elicit(ctx, params)
	if err != nil {
		return // cancelled because answered elsewhere, or the client failed: it still waits in the list
	}
	reply := mcpclient.ElicitationReply{Action: res.Action, Content: res.Content}
	if err := w.s.o.Elicitations.ReplyElicitation(e.ID, reply, pending.Who{Client: "mcp:" + clientName(w.req)}); err != nil {
		w.s.o.Logger.Info("mcp: forwarded elicitation answer refused", "id", e.ID, "err", err)
	}
}

func questionMessage(q question.Request) string {
	var msg []string
	for _, info := range q.Questions {
		msg = append(msg, info.Question)
	}
	return "tandem asks: " + strings.Join(msg, " / ")
}

// ask puts the agent's questions to the client as a form, or applies the strategy. A question the
// client cannot answer is rejected, which ends the turn as a person's dismissal does, and the result
// reports it unanswered; the agent never gets an empty answer.
func (w *watcher) ask(ctx context.Context, q question.Request) {
	w.progress(ctx, "question asked")
	who := pending.Who{Client: "mcp:" + clientName(w.req)}
	reject := func(why string) {
		if why != "" {
			w.cannot(q.ID, why)
		}
		if err := w.s.o.Questions.Reject(q.ID, who); err != nil {
			w.s.o.Logger.Debug("mcp: question reject", "id", q.ID, "err", err)
		}
	}
	timedOut := fmt.Sprintf("no answer within %s: rejected", w.s.o.Timeout)
	if !w.elicit {
		if w.s.o.Strategy == Wait {
			<-ctx.Done()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				reject(timedOut)
			}
			return
		}
		reject("this client cannot answer questions (strategy " + string(w.s.o.Strategy) + "): rejected")
		return
	}
	res, err := w.req.Session.Elicit(ctx, &mcp.ElicitParams{Meta: w.meta(), Message: questionMessage(q), RequestedSchema: questionSchema(q)})
	switch {
	case err == nil:
		answers, why := questionReply(q, res)
		if why != "" {
			reject(why)
			return
		}
		if answers == nil {
			reject("") // declined or cancelled in the client: the person dismissed it
			return
		}
		if err := w.s.o.Questions.Reply(q.ID, answers, who); err != nil {
			if errs.Is(err, errs.Invalid) {
				reject("the client's answer was refused (" + err.Error() + "): rejected")
				return
			}
			w.s.o.Logger.Debug("mcp: question reply", "id", q.ID, "err", err) // answered elsewhere first
		}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		reject(timedOut)
	case ctx.Err() == nil:
		reject("it could not be asked (" + err.Error() + "): rejected")
	}
}

// questionReply reads a client's form answer to a question set: the answers, or nil for a decline or
// a cancel, or why it is no answer (a form accepted with a question left empty, which a client that
// cannot render the form sends).
func questionReply(q question.Request, res *mcp.ElicitResult) (answers []question.Answer, unanswered string) {
	if res.Action != "accept" {
		return nil, ""
	}
	answers = questionAnswers(q, res.Content)
	for i, a := range answers {
		if len(a) == 0 {
			return nil, fmt.Sprintf("the client's form came back without an answer to %q: rejected", q.Questions[i].Question)
		}
	}
	return answers, ""
}
