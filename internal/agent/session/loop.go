package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

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
	StoredElicitations(ctx context.Context) (map[string]string, error)
	// ReserveElicitation lists a stored elicitation again at once; the resumed call's next
	// elicitation takes its ID.
	ReserveElicitation(ctx context.Context, elicitationID string) error
	// UnreserveElicitation cancels a reserved elicitation whose resumed call did not ask it again.
	UnreserveElicitation(ctx context.Context, elicitationID string)
	// WaitStarted waits until the MCP servers of the configuration are connected or failed.
	WaitStarted(ctx context.Context) error
}

// newLoop applies the defaults of an Agent.
func newLoop(a Agent) *loop {
	if a.MaxSteps <= 0 {
		a.MaxSteps = 50
	}
	if a.Retries <= 0 {
		a.Retries = 3
	}
	if a.RetryBase <= 0 {
		a.RetryBase = time.Second
	}
	return &loop{agent: a, runners: map[string]*runner{}}
}

// loop runs turns: one at a time per session, queued in arrival order.
type loop struct {
	agent   Agent
	wg      sync.WaitGroup
	closed  bool
	runners map[string]*runner // guarded by Service.mu
}

type runner struct {
	queue  []*turn
	cancel context.CancelCauseFunc // of the running turn
	done   chan struct{}           // closed when the runner retires
}

type turn struct {
	ctx     context.Context // the enqueuing request's values, never its cancellation
	user    Message
	input   PromptInput
	result  chan turnResult // buffered 1
	resume  *resumePoint    // set when the turn resumes one the server was running when it stopped
	shell   *ShellInput     // set when the turn is a command the user runs (POST /session/{id}/shell)
	compact *compactJob     // set when the turn summarises the session (Summarize) instead
	title   string          // the placeholder title the prompt gave the session, to replace with one the model writes
}

type turnResult struct {
	reply WithParts
	err   error
}

// PromptInput is the body of POST /session/{id}/message and prompt_async.
type PromptInput struct {
	MessageID string          `json:"messageID,omitempty"`
	Model     *MessageModel   `json:"model,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	NoReply   bool            `json:"noReply,omitempty"`
	Tools     map[string]bool `json:"tools,omitempty"`
	System    string          `json:"system,omitempty"`
	Variant   string          `json:"variant,omitempty"`
	Parts     []PartInput     `json:"parts"`
}

// PartInput is one part of a prompt: text, or a file reference.
type PartInput struct {
	ID        string `json:"id,omitempty"`
	Type      string `json:"type" enum:"text,file,agent"`
	Text      string `json:"text,omitempty"`
	Synthetic bool   `json:"synthetic,omitempty"`
	Mime      string `json:"mime,omitempty"`
	Filename  string `json:"filename,omitempty"`
	URL       string `json:"url,omitempty"`
	Name      string `json:"name,omitempty"`
	// Source is where a file part was mentioned (OpenCode's FilePartSource), kept as sent.
	Source json.RawMessage `json:"source,omitempty"`
}

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

func (s *Service) enqueue(ctx context.Context, sessionID string, in PromptInput) (*turn, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	lp := s.loop
	s.mu.Unlock()
	if lp == nil {
		return nil, errs.E(errs.Unavailable, "no agent is configured")
	}
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	agentName, model, err := resolveAgent(lp, sess, in.Agent, in.Model)
	if err != nil {
		return nil, err
	}
	in.Agent, in.Model = agentName, model
	in.Parts = withFileContents(sess.Directory, in.Parts)

	// Store the title, the user message and its parts before anything else, in one write:
	// prompt_async answers only after this.
	retitle := ""
	if sess.Title == "" || strings.HasPrefix(sess.Title, "New session - ") {
		retitle = titleFrom(firstText(in.Parts))
	}
	user := Message{
		ID: in.MessageID, SessionID: sessionID, Role: RoleUser, Agent: agentName,
		Time: MessageTime{Created: s.nowMS()}, Model: model, System: in.System, Tools: in.Tools,
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
	var titled Session
	var dropped removed
	err = s.db.Tx(ctx, func(q store.Tx) error {
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
		return nil, err
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

	// The turn outlives the request that started it (prompt_async answers at once).
	t := &turn{ctx: context.WithoutCancel(ctx), user: user, input: in, result: make(chan turnResult, 1), title: retitle}
	if in.NoReply {
		t.result <- turnResult{reply: WithParts{Info: user, Parts: nil}}
		return t, nil
	}
	if !s.schedule(lp, sessionID, t) {
		return nil, errs.E(errs.Unavailable, "the server is shutting down")
	}
	return t, nil
}

// resolveAgent picks a turn's agent and model: the ones asked for, else the session's, else the
// defaults (build, the configured default model).
func resolveAgent(lp *loop, sess Session, agentName string, model *MessageModel) (string, *MessageModel, error) {
	if agentName == "" {
		agentName = sess.Agent
	}
	if agentName == "" {
		agentName = "build"
	}
	def, ok := findAgent(lp.agent, agentName)
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
		p, m := lp.agent.Providers.Default()
		model = &MessageModel{ProviderID: p, ModelID: m}
	}
	if _, ok := lp.agent.Providers.Get(model.ProviderID); !ok {
		return "", nil, errs.Named(errs.Invalid, "ProviderNotFoundError", "model: provider %q is not configured", model.ProviderID)
	}
	return agentName, model, nil
}

// schedule queues a turn on its session's runner, starting the runner if the session is idle. It
// reports false when the loop is shutting down.
func (s *Service) schedule(lp *loop, sessionID string, t *turn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lp.closed {
		return false
	}
	r, busy := lp.runners[sessionID]
	if !busy {
		r = &runner{done: make(chan struct{})}
		lp.runners[sessionID] = r
	}
	r.queue = append(r.queue, t)
	if !busy {
		lp.wg.Add(1)
		go s.drain(lp, sessionID)
	}
	return true
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

// drain runs a session's queued turns one after another, then retires the runner.
func (s *Service) drain(lp *loop, sessionID string) {
	defer lp.wg.Done()
	for {
		s.mu.Lock()
		r := lp.runners[sessionID]
		if len(r.queue) == 0 {
			delete(lp.runners, sessionID)
			close(r.done)
			s.mu.Unlock()
			return
		}
		t := r.queue[0]
		r.queue = r.queue[1:]
		ctx, cancel := context.WithCancelCause(t.ctx)
		r.cancel = cancel
		s.mu.Unlock()

		var reply WithParts
		var err error
		if t.shell != nil {
			reply, err = s.runShell(ctx, lp.agent, sessionID, t)
		} else {
			reply, err = s.runTurn(ctx, lp.agent, t)
		}
		cancel(nil)
		// The runner retires before the last turn's caller hears of it, so that what the caller
		// does next (an edit, a compaction) finds the session idle.
		s.mu.Lock()
		last := len(r.queue) == 0
		if last {
			delete(lp.runners, sessionID)
			close(r.done)
		}
		s.mu.Unlock()
		t.result <- turnResult{reply: reply, err: err}
		if last {
			return
		}
	}
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

// abortAndWait stops a session's turns. cause is why: nil for an abort, which resolves the turn's
// pending requests as rejected; pending.ErrServerStopping for a shutdown, which leaves the turn as a
// crash would (its pending requests stored, its message unfinished) for the next start's Recover.
func (s *Service) abortAndWait(sessionID string, cause error) {
	s.mu.Lock()
	lp := s.loop
	if lp == nil {
		s.mu.Unlock()
		return
	}
	r, ok := lp.runners[sessionID]
	if !ok {
		s.mu.Unlock()
		return
	}
	queued := r.queue
	r.queue = nil
	cancel := r.cancel
	s.mu.Unlock()
	for _, t := range queued {
		t.result <- turnResult{reply: s.abortedReply(sessionID, t), err: nil}
	}
	if cancel != nil {
		cancel(cause)
	}
	// Wait until the runner has recorded the abort, so the caller sees a settled session. A tool
	// that ignores cancellation cannot hold the caller for long.
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		s.log.Warn("abort: the turn did not stop within 5s", "session", sessionID)
	}
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
		s.publish(sess.Directory, "session.error", map[string]any{"sessionID": sessionID, "error": unknownError(saveFailed(err))})
		return WithParts{Info: msg, Parts: []Part{}}
	}
	s.publishMessage(sess.Directory, msg)
	return WithParts{Info: msg, Parts: []Part{}}
}

// Shutdown stops every running and queued turn and waits for them, or for ctx. A running turn is
// left as a crash leaves it, so that the next start recovers it the one way it recovers a crash:
// a request waiting for a person stays stored and is asked again with the same ID, and its turn
// resumes once it is answered; a tool that had to be stopped is recorded as interrupted. Queued
// turns, which never started, are recorded as aborted.
func (s *Service) Shutdown(ctx context.Context) {
	s.mu.Lock()
	lp := s.loop
	if lp == nil {
		s.mu.Unlock()
		return
	}
	lp.closed = true
	ids := make([]string, 0, len(lp.runners))
	for sid := range lp.runners {
		ids = append(ids, sid)
	}
	s.mu.Unlock()
	for _, sid := range ids {
		s.abortAndWait(sid, pending.ErrServerStopping)
	}
	done := make(chan struct{})
	go func() { lp.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (s *Service) setStatus(directory, sessionID string, st Status) {
	s.mu.Lock()
	if st.Type == "idle" {
		delete(s.status, sessionID)
	} else {
		s.status[sessionID] = st
	}
	s.mu.Unlock()
	s.publish(directory, "session.status", map[string]any{"sessionID": sessionID, "status": st})
}

func (s *Service) publishPart(directory string, p Part) {
	s.publish(directory, "message.part.updated", map[string]any{"sessionID": p.SessionID, "part": p, "time": s.nowMS()})
}

// Recover deals with what a crash left running, at start. A tool call that was waiting for an
// approval (its request is stored) resumes: the request is asked again with the same ID and the
// turn goes on once it is answered. Everything else that was running is marked: tool parts become
// errors and unfinished assistant messages are closed with an error, so nothing is left pending
// forever. Stored requests whose call cannot be resumed are resolved as cancelled.
//
// It returns how many turns it found cut off (marked or resumed): their clients, attached before the
// crash, hold a state the restart changed.
func (s *Service) Recover(ctx context.Context) (int, error) {
	var waiting []permission.Request
	if s.loop != nil && s.loop.agent.Permissions != nil {
		var err error
		if waiting, err = s.loop.agent.Permissions.Stored(ctx); err != nil {
			return 0, err
		}
	}
	byCall := map[string]resumePoint{}
	for _, req := range waiting {
		if req.Tool != nil {
			byCall[req.Tool.MessageID+"/"+req.Tool.CallID] = resumePoint{req: req}
		}
	}
	if s.loop != nil && s.loop.agent.Questions != nil {
		asked, err := s.loop.agent.Questions.Stored(ctx)
		if err != nil {
			return 0, err
		}
		for _, q := range asked {
			if q.Tool != nil {
				byCall[q.Tool.MessageID+"/"+q.Tool.CallID] = resumePoint{question: &q}
			}
		}
	}
	if s.loop != nil && s.loop.agent.Elicitations != nil {
		asked, err := s.loop.agent.Elicitations.StoredElicitations(ctx)
		if err != nil {
			return 0, err
		}
		for call, id := range asked {
			byCall[call] = resumePoint{elicitation: id}
		}
	}
	parts, err := s.db.RunningParts(ctx)
	if err != nil {
		return 0, err
	}
	msgs, err := s.db.UnfinishedMessages(ctx)
	if err != nil {
		return 0, err
	}
	now := s.nowMS()
	resumed := map[string]resumePoint{} // assistant message ID -> where its turn resumes
	err = s.db.Tx(ctx, func(q store.Tx) error {
		for _, row := range parts {
			var p Part
			if err := json.Unmarshal(row.Data, &p); err != nil || p.State == nil {
				s.log.Warn("recover: unreadable tool part left as it is", "part", row.ID, "err", err)
				continue
			}
			key := p.MessageID + "/" + p.CallID
			if r, ok := byCall[key]; ok && p.State.Status == "running" {
				if _, taken := resumed[p.MessageID]; !taken {
					r.part = p
					resumed[p.MessageID] = r
					continue
				}
			}
			start := now
			if p.State.Time != nil {
				start = p.State.Time.Start
			}
			p.State = &ToolState{Status: "error", Input: inputOrEmpty(p.State.Input), Metadata: p.State.Metadata,
				Error: interruptedTool, Time: &PartTime{Start: start, End: now}}
			if err := putPart(ctx, q, p); err != nil {
				return err
			}
		}
		for _, row := range msgs {
			var m Message
			if err := json.Unmarshal(row.Data, &m); err != nil {
				s.log.Warn("recover: unreadable message left as it is", "message", row.ID, "err", err)
				continue
			}
			if r, ok := resumed[m.ID]; ok {
				r.msg = m
				resumed[m.ID] = r
				continue
			}
			m.Time.Completed = now
			if m.Error == nil {
				m.Error = &MessageError{Name: "MessageAbortedError", Data: map[string]any{"message": "interrupted: the server stopped during this turn"}}
			}
			if err := putMessage(ctx, q, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(parts)+len(msgs) > len(resumed)*2 {
		s.log.Warn("marked interrupted work", "tool_parts", len(parts)-len(resumed), "messages", len(msgs)-len(resumed))
	}
	kept := map[string]bool{}
	for _, r := range resumed {
		if r.msg.ID == "" { // its message was completed after all: nothing to resume
			continue
		}
		if err := s.resume(ctx, r); err != nil {
			s.log.Warn("recover: the turn cannot be resumed", "session", r.msg.SessionID, "err", err)
			if err := s.interrupt(ctx, r, now); err != nil {
				return 0, err
			}
			continue
		}
		if r.question == nil && r.elicitation == "" {
			kept[r.req.ID] = true
		}
	}
	for _, req := range waiting {
		if !kept[req.ID] {
			s.loop.agent.Permissions.Abandon(req, "the server stopped while this request was waiting, and its tool call cannot be resumed")
		}
	}
	return len(msgs), nil
}

// interruptedTool is the error of a tool call the server stopped (a crash, or a shutdown that had
// to stop it): the model reads it in the conversation and the person in the part.
const interruptedTool = "interrupted: the server stopped while this tool was running, so it did not finish; " +
	"whatever it changed before that stays changed. Run it again if it is still needed."

// unreserve cancels the reserved request of a resume point that its call did not claim. At a
// shutdown it stays stored, for the next start.
func (s *Service) unreserve(ctx context.Context, ag Agent, r *resumePoint, stopping bool) {
	if stopping {
		return
	}
	if r.elicitation != "" {
		ag.Elicitations.UnreserveElicitation(ctx, r.elicitation)
		return
	}
	if r.question != nil {
		ag.Questions.Unreserve(ctx, *r.question)
		return
	}
	ag.Permissions.Unreserve(r.req.ID)
}

// interrupt marks a step that cannot be resumed as interrupted, its tool part and its message in one write.
func (s *Service) interrupt(ctx context.Context, r resumePoint, now int64) error {
	p, m := r.part, r.msg
	start := now
	if p.State.Time != nil {
		start = p.State.Time.Start
	}
	p.State = &ToolState{Status: "error", Input: inputOrEmpty(p.State.Input), Metadata: p.State.Metadata,
		Error: "interrupted: the server stopped while this tool was waiting, and it cannot be resumed", Time: &PartTime{Start: start, End: now}}
	m.Time.Completed = now
	m.Error = &MessageError{Name: "MessageAbortedError", Data: map[string]any{"message": "interrupted: the server stopped during this turn"}}
	return s.db.Tx(ctx, func(q store.Tx) error {
		if err := putPart(ctx, q, p); err != nil {
			return err
		}
		return putMessage(ctx, q, m)
	})
}

// resume schedules the turn of an interrupted step: the session is busy again at once.
func (s *Service) resume(ctx context.Context, r resumePoint) error {
	sess, err := s.Get(ctx, r.msg.SessionID)
	if err != nil {
		return err
	}
	row, rows, err := s.db.GetMessage(ctx, sess.ID, r.msg.ParentID)
	if err != nil {
		return err
	}
	user, err := decodeWithParts(row, rows)
	if err != nil {
		return err
	}
	model := user.Info.Model
	if model == nil {
		model = &MessageModel{ProviderID: r.msg.ProviderID, ModelID: r.msg.ModelID}
	}
	if _, ok := s.loop.agent.Providers.Get(model.ProviderID); !ok {
		return fmt.Errorf("provider %q is not configured any more", model.ProviderID)
	}
	agentName := r.msg.Agent
	if _, ok := findAgent(s.loop.agent, agentName); !ok {
		return fmt.Errorf("unknown agent %q", agentName)
	}
	in := PromptInput{Agent: agentName, Model: model, Tools: user.Info.Tools, System: user.Info.System}
	t := &turn{ctx: context.WithoutCancel(ctx), user: user.Info, input: in, result: make(chan turnResult, 1), resume: &r}
	// Listed and announced before the turn runs, so that GET /permission (/question) shows it
	// from the start.
	switch {
	case r.elicitation != "":
		if err := s.loop.agent.Elicitations.ReserveElicitation(ctx, r.elicitation); err != nil {
			return err
		}
	case r.question != nil:
		s.loop.agent.Questions.Reserve(*r.question)
	default:
		s.loop.agent.Permissions.Reserve(r.req)
	}
	if !s.schedule(s.loop, sess.ID, t) {
		s.unreserve(ctx, s.loop.agent, &r, false)
		return errors.New("the server is shutting down")
	}
	s.setStatus(sess.Directory, sess.ID, Status{Type: "busy"})
	return nil
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
