package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Providers finds the model a turn talks to and prices what it used.
type Providers interface {
	Get(providerID string) (provider.Provider, bool)
	Default() (providerID, modelID string)
	Cost(providerID, modelID string, u provider.Usage) float64
}

// Agent is everything the prompt loop needs beyond the store and the bus, given once to New. What
// each agent (build, plan) may do is its definition in agents.go.
type Agent struct {
	Providers Providers
	// Tools lists every tool there is now (built-ins, question, MCP servers' tools); a turn offers
	// those its agent and its prompt allow.
	Tools func() []tool.Tool
	// SessionTools lists the tools offered to one session only, besides Tools (the MCP servers an
	// editor added for that session); nil: none.
	SessionTools func(sessionID string) []tool.Tool
	// Permissions asks before a tool runs; nil lets every call run (tests of the loop alone).
	Permissions *permission.Service
	// Questions holds the question tool's questions; with it, a question waiting at a crash
	// resumes its turn after the restart. Nil: such turns are marked interrupted.
	Questions *question.Service
	// Elicitations holds the MCP elicitations a graceful stop left waiting; with it, such a tool call
	// resumes its turn after the start. Nil: those turns are marked interrupted.
	Elicitations Elicitations
	// MaxSteps bounds model calls per turn (default 50).
	MaxSteps int
	// Retries is how often a retryable provider error is retried before the turn fails (default 3).
	Retries int
	// RetryBase is the first backoff (default 1 s), doubled each attempt.
	RetryBase time.Duration
}

// Elicitations are the MCP elicitations (package mcp) that a resumed turn may wait for again.
type Elicitations interface {
	// StoredElicitations returns the elicitations left waiting by the previous run, by the tool call
	// that asked each ("messageID/callID") → elicitation ID.
	StoredElicitations(ctx context.Context, only store.SessionFilter) (map[string]string, error)
	// ReserveElicitation lists a stored elicitation again at once; the resumed call's next
	// elicitation takes its ID.
	ReserveElicitation(ctx context.Context, elicitationID string) error
	// UnreserveElicitation cancels a reserved elicitation whose resumed call did not ask it again.
	UnreserveElicitation(ctx context.Context, elicitationID string)
	// WaitStarted waits until the MCP servers of the configuration are connected or failed.
	WaitStarted(ctx context.Context) error
}

// withDefaults applies the defaults of an Agent.
func withDefaults(a Agent) *Agent {
	if a.MaxSteps <= 0 {
		a.MaxSteps = 50
	}
	if a.Retries <= 0 {
		a.Retries = 3
	}
	if a.RetryBase <= 0 {
		a.RetryBase = time.Second
	}
	return &a
}

// PromptInput is the body of POST /session/{id}/message and prompt_async (api.PromptInput), which
// the session validates.
type PromptInput api.PromptInput

// PartInput is one part of a prompt: text, or a file reference.
type PartInput = api.PartInput

// Validate checks a prompt before anything is stored.
func (in *PromptInput) Validate() error {
	if len(in.Parts) == 0 {
		return errs.E(errs.Invalid, "parts: at least one part is required")
	}
	for i, p := range in.Parts {
		switch p.Type {
		case "text":
			if p.Text == "" {
				return errs.E(errs.Invalid, "parts[%d].text: required for a text part", i)
			}
		case "file":
			if p.URL == "" || p.Mime == "" {
				return errs.E(errs.Invalid, "parts[%d]: a file part needs url and mime", i)
			}
			if len(p.Source) > 0 && !isObject(p.Source) {
				return errs.E(errs.Invalid, "parts[%d].source: expected an object", i)
			}
		case "agent":
			if p.Name == "" {
				return errs.E(errs.Invalid, "parts[%d].name: required for an agent part", i)
			}
		default:
			return errs.E(errs.Invalid, "parts[%d].type: expected \"text\" | \"file\" | \"agent\", got %q", i, p.Type)
		}
	}
	if in.MessageID != "" && !id.Valid(id.Message, in.MessageID) {
		return errs.E(errs.Invalid, "messageID: malformed message ID %q", in.MessageID)
	}
	if in.Model != nil && (in.Model.ProviderID == "" || in.Model.ModelID == "") {
		return errs.E(errs.Invalid, "model: providerID and modelID are both required")
	}
	return nil
}

// Prompt stores the user message, runs (or queues) its turn and waits for the reply.
func (s *Service) Prompt(ctx context.Context, sessionID string, in PromptInput) (WithParts, error) {
	t, err := s.enqueue(ctx, sessionID, in)
	if err != nil {
		return WithParts{}, err
	}
	select {
	case r := <-t.result:
		return r.reply, r.err
	case <-ctx.Done():
		// The client went away; the turn goes on and is visible on the stream.
		return WithParts{}, ctx.Err()
	}
}

// PromptAsync stores the user message and schedules its turn; it returns once the message is stored.
func (s *Service) PromptAsync(ctx context.Context, sessionID string, in PromptInput) (Message, error) {
	t, err := s.enqueue(ctx, sessionID, in)
	if err != nil {
		return Message{}, err
	}
	return t.user, nil
}

// enqueue stores a prompt and queues its turn.
func (s *Service) enqueue(ctx context.Context, sessionID string, in PromptInput) (*turn, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if s.agent == nil {
		return nil, errs.E(errs.Unavailable, "no agent is configured")
	}
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	agentName, model, err := resolveAgent(*s.agent, sess, in.Agent, in.Model)
	if err != nil {
		return nil, err
	}
	// A variant is the prompt's, else the session's when the prompt keeps the session's model.
	chosen := *model
	if in.Variant == "" && sess.Model != nil && sess.Model.ProviderID == chosen.ProviderID && sess.Model.ID == chosen.ModelID {
		in.Variant = sess.Model.Variant
	}
	chosen.Variant = in.Variant
	in.Agent, in.Model = agentName, &chosen
	if err := checkAttachments(*s.agent, in.Model, sess.Directory, in.Parts); err != nil {
		return nil, err
	}
	in.Parts = withFileContents(sess.Directory, in.Parts)

	// Store the title, the user message and its parts before anything else, in one write:
	// prompt_async answers only after this.
	retitle := ""
	if sess.Title == "" || strings.HasPrefix(sess.Title, "New session - ") {
		retitle = titleFrom(firstText(in.Parts))
	}
	user, parts := s.promptMessage(sessionID, in)
	if err := s.storePrompt(ctx, sessionID, user, parts, retitle); err != nil {
		return nil, err
	}

	// The turn outlives the request that started it (prompt_async answers at once).
	t := &turn{ctx: context.WithoutCancel(ctx), user: user, input: in, result: make(chan turnResult, 1), title: retitle}
	if in.NoReply {
		t.result <- turnResult{reply: WithParts{Info: user, Parts: nil}}
		return t, nil
	}
	if !s.runs.schedule(sessionID, t) {
		return nil, errs.E(errs.Unavailable, "the server is shutting down")
	}
	return t, nil
}

// promptMessage is the user message of a prompt and its parts, with the IDs a client gave them
// (a malformed part ID is replaced).
func (s *Service) promptMessage(sessionID string, in PromptInput) (Message, []Part) {
	user := Message{
		ID: in.MessageID, SessionID: sessionID, Role: RoleUser, Agent: in.Agent,
		Time: MessageTime{Created: s.nowMS()}, Model: in.Model, System: in.System, Tools: in.Tools,
	}
	if user.ID == "" {
		user.ID = s.ids.New(id.Message)
	}
	parts := make([]Part, 0, len(in.Parts))
	for _, pi := range in.Parts {
		p := Part{ID: pi.ID, SessionID: sessionID, MessageID: user.ID, Type: pi.Type, Synthetic: pi.Synthetic}
		if p.ID == "" || !id.Valid(id.Part, p.ID) {
			p.ID = s.ids.New(id.Part)
		}
		switch pi.Type {
		case "text":
			text := pi.Text
			p.Text = &text
		case "file":
			p.Mime, p.Filename, p.URL, p.Source = pi.Mime, pi.Filename, pi.URL, pi.Source
		case "agent":
			p.Name = pi.Name
		}
		parts = append(parts, p)
	}
	return user, parts
}

// storePrompt stores a prompt's user message and parts, and the session's new title when retitle
// is set, in one write that also makes a pending revert permanent; then it announces them.
func (s *Service) storePrompt(ctx context.Context, sessionID string, user Message, parts []Part, retitle string) error {
	var sess, titled Session
	var dropped removed
	err := s.db.Tx(ctx, func(q store.Tx) error {
		// A prompt after a revert makes it permanent: the reverted messages go, in this write.
		var err error
		if dropped, err = commitRevert(ctx, q, sessionID); err != nil {
			return err
		}
		if retitle != "" {
			if titled, err = s.change(ctx, q, sessionID, func(x *Session) { x.Title = retitle }); err != nil {
				return err
			}
		}
		if err := putMessage(ctx, q, user); err != nil {
			return err
		}
		for _, p := range parts {
			if err := putPart(ctx, q, p); err != nil {
				return err
			}
		}
		sess, err = s.change(ctx, q, sessionID, func(x *Session) { x.Revert = nil })
		return err
	})
	if err != nil {
		return err
	}
	if len(dropped.messages)+len(dropped.parts) > 0 {
		s.histories.drop(sessionID)
		s.announceRemoved(sess.Directory, sessionID, dropped)
	}
	if retitle != "" {
		s.announce(titled)
	}
	s.publishMessage(sess.Directory, user)
	for _, p := range parts {
		s.publishPart(sess.Directory, p)
	}
	s.announce(sess)
	return nil
}

// resolveAgent picks a turn's agent and model: the ones asked for, else the session's, else the
// defaults (build, the configured default model).
func resolveAgent(ag Agent, sess Session, agentName string, model *MessageModel) (string, *MessageModel, error) {
	if agentName == "" {
		agentName = sess.Agent
	}
	if agentName == "" {
		agentName = "build"
	}
	def, ok := findAgent(ag, agentName)
	if !ok {
		return "", nil, errs.E(errs.Invalid, "agent: unknown agent %q (build, plan, or one the configuration defines)", agentName)
	}
	if model == nil && def.model != nil {
		model = def.model
	}
	if model == nil && sess.Model != nil {
		model = &MessageModel{ProviderID: sess.Model.ProviderID, ModelID: sess.Model.ID}
	}
	if model == nil {
		p, m := ag.Providers.Default()
		model = &MessageModel{ProviderID: p, ModelID: m}
	}
	if _, ok := ag.Providers.Get(model.ProviderID); !ok {
		return "", nil, errs.Named(errs.Invalid, "ProviderNotFoundError", "model: provider %q is not configured", model.ProviderID)
	}
	return agentName, model, nil
}

// isObject reports whether raw JSON is an object.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

func firstText(parts []PartInput) string {
	for _, p := range parts {
		if p.Type == "text" && !p.Synthetic {
			return p.Text
		}
	}
	return ""
}

func titleFrom(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if r := []rune(line); len(r) > 60 {
		line = string(r[:57]) + "…"
	}
	return line
}

// Abort stops the running turn of a session and every turn queued behind it. Pending approvals and
// questions of the session resolve as rejected through the turn's cancelled context.
func (s *Service) Abort(ctx context.Context, sessionID string) (bool, error) {
	if _, err := s.Get(ctx, sessionID); err != nil {
		return false, err
	}
	s.abortAndWait(sessionID, nil)
	return true, nil
}

// abortedReply records an assistant message for a queued turn that never ran.
func (s *Service) abortedReply(sessionID string, t *turn) WithParts {
	ctx := t.ctx
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return WithParts{}
	}
	now := s.nowMS()
	zero := 0.0
	msg := Message{
		ID: s.ids.New(id.Message), SessionID: sessionID, Role: RoleAssistant, ParentID: t.user.ID,
		Agent: t.input.Agent, Mode: t.input.Agent, ModelID: t.input.Model.ModelID, ProviderID: t.input.Model.ProviderID,
		Path: &MessagePath{Cwd: sess.Directory, Root: sess.Directory}, Cost: &zero, Tokens: &Tokens{},
		Time:  MessageTime{Created: now, Completed: now},
		Error: &MessageError{Name: "MessageAbortedError", Data: map[string]any{"message": "Aborted"}},
	}
	if err := putMessage(ctx, s.db, msg); err != nil {
		s.log.Error("store aborted reply", "session", sessionID, "err", err)
		s.publish(sess.Directory, api.EventSessionError, api.SessionError{SessionID: sessionID, Error: unknownError(saveFailed(err))})
		return WithParts{Info: msg, Parts: []Part{}}
	}
	s.publishMessage(sess.Directory, msg)
	return WithParts{Info: msg, Parts: []Part{}}
}

func inputOrEmpty(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return in
}

func abortedError() *MessageError {
	return &MessageError{Name: "MessageAbortedError", Data: map[string]any{"message": "Aborted"}}
}

func unknownError(err error) *MessageError {
	return &MessageError{Name: "UnknownError", Data: map[string]any{"message": err.Error()}}
}

func providerError(err error) *MessageError {
	var pe *provider.Error
	if errors.As(err, &pe) {
		p := pe.Payload()
		name, _ := p["name"].(string)
		data, _ := p["data"].(map[string]any)
		return &MessageError{Name: name, Data: data}
	}
	return unknownError(err)
}

// runQueued is the run queue's work: one turn of a session, whichever kind it is.
func (s *Service) runQueued(ctx context.Context, sessionID string, t *turn) (WithParts, error) {
	if s.runner != nil {
		fenced, err := s.runner.Run(ctx, sessionID)
		if err != nil {
			return WithParts{}, err
		}
		ctx = fenced
	}
	if t.shell != nil {
		return s.runShell(ctx, *s.agent, sessionID, t)
	}
	return s.runTurn(ctx, *s.agent, t)
}

// abortAndWait stops a session's turns. cause is why: nil for an abort, which resolves the turn's
// pending requests as rejected; pending.ErrServerStopping for a shutdown, which leaves the turn as a
// crash would (its pending requests stored, its message unfinished) for the next start's Recover.
// Queued turns that never ran are recorded as aborted.
func (s *Service) abortAndWait(sessionID string, cause error) {
	if s.agent == nil {
		return
	}
	// It waits until the runner has recorded the abort, so the caller sees a settled session.
	settle := func(t *turn) WithParts { return s.abortedReply(sessionID, t) }
	if !s.runs.stop(sessionID, cause, settle, 5*time.Second) {
		s.log.Warn("abort: the turn did not stop within 5s", "session", sessionID)
	}
}

// Shutdown stops every running and queued turn and waits for them, or for ctx. A running turn is
// left as a crash leaves it, so that the next start recovers it the one way it recovers a crash:
// a request waiting for a person stays stored and is asked again with the same ID, and its turn
// resumes once it is answered; a tool that had to be stopped is recorded as interrupted. Queued
// turns, which never started, are recorded as aborted.
func (s *Service) Shutdown(ctx context.Context) {
	if s.agent == nil {
		return
	}
	for _, sid := range s.runs.close() {
		s.abortAndWait(sid, pending.ErrServerStopping)
	}
	s.runs.wait(ctx)
}

// Running reports whether a turn of the session runs (or waits to run) on this node.
func (s *Service) Running(sessionID string) bool { return s.runs != nil && s.runs.running(sessionID) }

// Release stops a session's turn on this node as a shutdown would: what waits for a person is let
// go, still stored. It is for a session another node has taken over (this node was not heard from
// in time): the requests and the turn are that node's now, and this node's writes are fenced.
func (s *Service) Release(sessionID string) {
	if s.agent == nil {
		return
	}
	s.abortAndWait(sessionID, pending.ErrServerStopping)
}

func (s *Service) setStatus(directory, sessionID string, st Status) {
	s.runs.setStatus(sessionID, st)
	s.publish(directory, api.EventSessionStatus, api.SessionStatusChanged{SessionID: sessionID, Status: st})
}
