package session

import (
	"context"
	"errors"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// runTurn answers one user message: model calls and tool calls until the model stops, the step
// limit is reached, the turn fails or it is aborted. The reply is the last assistant message.
//
// Every write happens before the event that announces it, and a write that fails ends the turn
// with session.error: what the stream said is what the store holds.
func (s *Service) runTurn(ctx context.Context, ag Agent, t *turn) (WithParts, error) {
	if t.compact != nil {
		return s.runCompaction(ctx, ag, t)
	}
	tr, err := s.startTurn(ctx, ag, t)
	if err != nil {
		return WithParts{}, err
	}
	defer tr.waitTitle()
	if t.resume != nil {
		// A turn that waited for an approval when the server stopped: finish that step first.
		if stop := tr.resumeStep(); stop || tr.failed {
			return tr.end()
		}
	}
	// The history is read once (a resumed turn's after its first step); each step's output is
	// appended in memory.
	conv, err := s.conversation(tr.keep, tr.sid, tr.user.ID)
	if err != nil {
		tr.fail(nil, nil, err)
		return tr.end()
	}
	tr.conv = conv
	for n := 0; n < ag.MaxSteps; n++ {
		if more := tr.step(n); !more {
			break
		}
	}
	return tr.end()
}

// turnRun is one turn as it runs: what it offers the model, the conversation so far, and what its
// steps added up to.
type turnRun struct {
	s         *Service
	ag        Agent
	t         *turn
	ctx, keep context.Context // keep: stores must land even when the turn is aborted
	sess      Session
	dir, sid  string
	user      Message // the runner's own copy: prompt_async callers read t.user concurrently
	prov      provider.Provider
	system    []string
	specs     []provider.ToolSpec
	byName    map[string]tool.Tool
	conv      conversation

	// usable is how many tokens a call may carry before the turn compacts first (0: unknown);
	// compacted says it did already (at most once a turn, and never when switched off).
	usable    int64
	compacted bool

	cost   float64
	tokens Tokens
	// paid is what the step's model call cost once it answered, until the step is committed: a turn
	// that fails in one of the call's tools still counts it, on the message and in the session.
	paidCost   float64
	paidTokens Tokens
	diff       map[string]fileChange
	reply      WithParts
	failed     bool  // failTurn recorded the end: reply and err are its
	err        error // the turn's error, when failed
	titled     chan struct{}
}

// startTurn marks the session busy, starts titling it when the prompt asked for that, and gathers
// what every step offers the model: the system prompt and the tools.
func (s *Service) startTurn(ctx context.Context, ag Agent, t *turn) (*turnRun, error) {
	keep := context.WithoutCancel(ctx)
	sess, err := s.Get(keep, t.user.SessionID)
	if err != nil {
		return nil, err
	}
	tr := &turnRun{s: s, ag: ag, t: t, ctx: ctx, keep: keep, sess: sess, dir: sess.Directory, sid: sess.ID, user: t.user,
		diff: map[string]fileChange{}}
	s.setStatus(tr.dir, tr.sid, Status{Type: "busy"})
	tr.prov, _ = ag.Providers.Get(t.input.Model.ProviderID)
	if t.title != "" {
		// The session's model titles it from the first prompt while the turn runs; the turn waits
		// for the title before it ends, so nothing outlives it.
		tr.titled = make(chan struct{})
		go func() {
			defer close(tr.titled)
			s.generateTitle(ctx, tr.prov, t.input.Model.ModelID, tr.sid, t.title, firstText(t.input.Parts))
		}()
	}
	def, _ := findAgent(ag, t.input.Agent) // checked when the prompt was accepted
	if r := t.resume; r != nil && r.elicitation != "" && ag.Elicitations != nil {
		// The MCP server that asked stopped with the previous process: its tools are back once the
		// new process has connected it (or failed to, and the call fails as a missing tool).
		_ = ag.Elicitations.WaitStarted(ctx)
	}
	tools := toolsFor(ag, tr.sid, def, t.input.Tools)
	if task := s.taskTool(ag, def, t.input.Tools); task != nil {
		tools = append(tools, task)
	}
	tools = editToolsFor(ag, t.input.Model, tools)
	tr.specs = make([]provider.ToolSpec, 0, len(tools))
	tr.byName = make(map[string]tool.Tool, len(tools))
	for _, tl := range tools {
		tr.specs = append(tr.specs, provider.ToolSpec{Name: tl.Name(), Description: tl.Description(), Parameters: tl.Parameters()})
		tr.byName[tl.Name()] = tl
	}
	tr.system = def.system(tr.dir)
	if t.input.System != "" {
		tr.system = append(tr.system, t.input.System)
	}
	var auto bool // compact by itself at all
	if limits, ok := ag.Providers.(ContextLimits); ok {
		auto, tr.usable = limits.Compaction(t.input.Model.ProviderID, t.input.Model.ModelID)
	}
	tr.compacted = !auto
	return tr, nil
}

// waitTitle waits for the title the model is writing, if any.
func (tr *turnRun) waitTitle() {
	if tr.titled != nil {
		<-tr.titled
	}
}

// fail ends the turn with an error (see failTurn).
func (tr *turnRun) fail(msg *Message, parts []Part, cause error) {
	tokens := tr.tokens
	addTokens(&tokens, tr.paidTokens)
	tr.reply, tr.err = tr.s.failTurnSpent(tr.ctx, tr.dir, msg, parts, cause, tr.user, tr.cost+tr.paidCost, tokens)
	tr.failed = true
}

// end closes a turn that did not fail, and returns the turn's reply.
func (tr *turnRun) end() (WithParts, error) {
	if tr.failed {
		return tr.reply, tr.err
	}
	tr.s.finishTurn(tr.keep, tr.dir, tr.sid, tr.user, tr.diff, tr.cost, tr.tokens)
	return tr.reply, nil
}

// resumeStep finishes the step the server stopped in, and reports whether that ends the turn.
func (tr *turnRun) resumeStep() (stop bool) {
	msg := tr.t.resume.msg
	parts, stop, err := tr.rerunCall()
	if err == nil {
		err = tr.ctx.Err()
	}
	if err == nil {
		err = tr.s.commitStep(tr.keep, tr.dir, &msg, &parts, "", provider.ReasonToolCalls, 0, Tokens{})
	}
	if err != nil {
		tr.fail(&msg, parts, err)
		return true
	}
	foldDiffs(tr.diff, parts)
	tr.reply = WithParts{Info: msg, Parts: parts}
	return stop
}

// step makes the turn's step n: one model call and the tool calls it asked for. It reports
// whether another step follows.
func (tr *turnRun) step(n int) (more bool) {
	// Once per turn, a call that would carry more than the model can take first compacts what
	// came before the turn (the turn's own messages are kept as they are).
	if tr.usable > 0 && tr.canCompact() &&
		provider.EstimateTokens(provider.Request{System: tr.system, Messages: tr.conv.msgs, Tools: tr.specs}) > tr.usable {
		if !tr.compact(false) {
			return false
		}
	}
	history := tr.conv.msgs
	msg, start, err := tr.openStep(n)
	if err != nil {
		tr.fail(nil, nil, saveFailed(err))
		return false
	}
	st := tr.s.newStep(tr.dir, msg)
	tr.s.publishPart(tr.dir, start)
	parts := []Part{start}

	req := provider.Request{Model: tr.t.input.Model.ModelID, System: tr.system,
		Messages: tr.s.withAttachments(tr.ag, tr.t.input.Model, tr.dir, history), Tools: tr.specs, Variant: tr.t.input.Model.Variant,
		Cache: tr.conv.cache}
	callErr := st.call(tr.ctx, tr.ag, tr.prov, req)
	textParts := st.parts()
	if err := st.closeStreams(tr.keep); err != nil {
		tr.fail(msg, parts, err)
		return false
	}
	for _, p := range textParts {
		if p != nil {
			parts = append(parts, *p)
		}
	}
	if callErr != nil {
		if tr.overflowed(callErr, st) {
			// The model said the conversation does not fit (the estimate was short): compact what
			// came before the turn and call it again.
			tr.s.markFailed(tr.keep, tr.dir, msg, providerError(callErr))
			return tr.compact(true)
		}
		tr.fail(msg, parts, callErr)
		return false
	}
	// The call is paid for once it answered, whatever becomes of its tool calls.
	cost, tokens := tr.ag.Providers.Cost(msg.ProviderID, msg.ModelID, st.usage), tokensOf(st.usage)
	msg.Cost, msg.Tokens = &cost, &tokens
	tr.paidCost, tr.paidTokens = cost, tokens
	parts, stop, ok := tr.runCalls(st, msg, parts)
	if !ok {
		return false
	}
	if !tr.finishStep(st, msg, history, parts) {
		return false
	}
	return len(st.calls) > 0 && !stop
}

// canCompact says whether the turn may still compact: once, and only with something before the
// turn to summarise.
func (tr *turnRun) canCompact() bool {
	return !tr.compacted && tr.conv.at > tr.conv.summarized
}

// overflowed says whether a failed model call is the model's refusal of a conversation too long,
// one the turn can still compact and call again (nothing of the call was shown).
func (tr *turnRun) overflowed(callErr error, st *step) bool {
	var pe *provider.Error
	return errors.As(callErr, &pe) && pe.Kind == provider.ErrContextOverflow && tr.ctx.Err() == nil && !st.emitted &&
		tr.canCompact()
}

// compact compacts what came before the turn and goes on from the summary; it reports false when
// that ended the turn.
func (tr *turnRun) compact(overflow bool) bool {
	tr.compacted = true
	next, tokens, cost, err := tr.s.autoCompact(tr.ctx, tr.ag, tr.prov, tr.sess, tr.t, tr.conv, overflow)
	if err != nil {
		tr.fail(nil, nil, err)
		return false
	}
	tr.conv = next
	tr.cost += cost
	addTokens(&tr.tokens, tokens)
	return true
}

// openStep opens step n with one write: its message and step-start (and, on the first step, the
// session's touch and the user message's still empty summary, which OpenCode announces here).
func (tr *turnRun) openStep(n int) (*Message, Part, error) {
	s, t, dir, sid := tr.s, tr.t, tr.dir, tr.sid
	zero := 0.0
	msg := &Message{
		ID: s.ids.New(id.Message), SessionID: sid, Role: RoleAssistant, ParentID: t.user.ID,
		Agent: t.input.Agent, Mode: t.input.Agent, ModelID: t.input.Model.ModelID, ProviderID: t.input.Model.ProviderID,
		Path: &MessagePath{Cwd: dir, Root: Worktree(dir)}, Cost: &zero, Tokens: &Tokens{},
		Time: MessageTime{Created: s.nowMS()}, Variant: tr.t.input.Model.Variant,
	}
	start := Part{ID: s.ids.New(id.Part), SessionID: sid, MessageID: msg.ID, Type: "step-start"}
	var touched Session
	summarized := tr.user
	summarized.Summary = &MessageSummary{Diffs: []FileDiff{}}
	err := s.db.Tx(tr.keep, func(q store.Tx) error {
		if err := putMessage(tr.keep, q, *msg); err != nil {
			return err
		}
		if n == 0 {
			var err error
			if touched, err = s.change(tr.keep, q, sid, func(*Session) {}); err != nil {
				return err
			}
			if err := putMessage(tr.keep, q, summarized); err != nil {
				return err
			}
		}
		return putPart(tr.keep, q, start)
	})
	if err != nil {
		return nil, Part{}, err
	}
	s.publishMessage(dir, *msg)
	if n == 0 {
		s.announce(touched)
		s.publish(dir, api.EventSessionDiff, api.SessionDiff{SessionID: sid, Diff: []FileDiff{}})
		tr.user = summarized
		s.publishMessage(dir, tr.user)
		s.setStatus(dir, sid, Status{Type: "busy"})
	}
	return msg, start, nil
}

// runCalls runs the tool calls of a step, in order. It reports whether a tool ended the turn, and
// ok false when the turn failed.
func (tr *turnRun) runCalls(st *step, msg *Message, parts []Part) (_ []Part, stop, ok bool) {
	for _, call := range st.calls {
		// The project's files are recorded before the step's first call that may change them
		// (a step that only talks or reads costs no snapshot); the step-start part carries it.
		if parts[0].Snapshot == "" && mayChangeFiles(call.Name) {
			parts[0].Snapshot = tr.s.snaps.track(tr.keep, tr.dir)
		}
		p, stopTurn, err := tr.s.runTool(tr.ctx, tr.ag, tr.sess, msg, tr.byName, call, tr.t.input.Agent)
		parts = append(parts, p)
		if err == nil {
			err = tr.ctx.Err()
		}
		if err != nil {
			tr.fail(msg, parts, err)
			return parts, false, false
		}
		stop = stop || stopTurn
	}
	return parts, stop, true
}

// finishStep commits a step and adds it to the turn: its cost, its changes and the conversation.
// It reports false when the turn failed.
func (tr *turnRun) finishStep(st *step, msg *Message, history []provider.Message, parts []Part) bool {
	cost, tokens := *msg.Cost, *msg.Tokens
	tr.paidCost, tr.paidTokens = 0, Tokens{} // a step that cannot be stored is not counted
	reason := st.reason
	if reason == "" {
		reason = provider.ReasonStop
	}
	if err := tr.s.commitStep(tr.keep, tr.dir, msg, &parts, parts[0].Snapshot, reason, cost, tokens); err != nil {
		tr.fail(msg, parts, err)
		return false
	}
	foldDiffs(tr.diff, parts)
	tr.conv.msgs = appendStep(history, parts)
	tr.cost += cost
	addTokens(&tr.tokens, tokens)
	tr.reply = WithParts{Info: *msg, Parts: parts}
	return true
}

// commitStep ends a step with one write: step-finish (with a snapshot of the project's files), a
// patch part listing the files the step changed since its start snapshot (when it has one and
// they differ), the completed message and the session's diff. Only then are they announced, the
// finish before the completion as OpenCode does.
func (s *Service) commitStep(ctx context.Context, dir string, msg *Message, parts *[]Part, startSnapshot, reason string, cost float64, tokens Tokens) error {
	finish := Part{ID: s.ids.New(id.Part), SessionID: msg.SessionID, MessageID: msg.ID, Type: "step-finish",
		Reason: reason, Cost: &cost, Tokens: &tokens}
	var patch, started *Part
	if startSnapshot != "" {
		if p := (*parts)[0]; p.Type == "step-start" {
			started = &p // stored again, with the snapshot taken after it was announced
		}
		finish.Snapshot = s.snaps.track(ctx, dir)
		if files := s.snaps.changed(ctx, dir, startSnapshot, finish.Snapshot); len(files) > 0 {
			patch = &Part{ID: s.ids.New(id.Part), SessionID: msg.SessionID, MessageID: msg.ID, Type: "patch", Hash: startSnapshot, Files: files}
		}
	}
	stepDiff := map[string]fileChange{}
	foldDiffs(stepDiff, *parts)
	msg.Finish, msg.Cost, msg.Tokens = reason, &cost, &tokens
	finished := *msg
	msg.Time.Completed = s.nowMS()
	err := s.db.Tx(ctx, func(q store.Tx) error {
		if started != nil {
			if err := putPart(ctx, q, *started); err != nil {
				return err
			}
		}
		if err := putPart(ctx, q, finish); err != nil {
			return err
		}
		if patch != nil {
			if err := putPart(ctx, q, *patch); err != nil {
				return err
			}
		}
		if err := putMessage(ctx, q, *msg); err != nil {
			return err
		}
		_, err := addTurnDiff(ctx, q, msg.SessionID, stepDiff)
		return err
	})
	if err != nil {
		*msg = finished
		return saveFailed(err)
	}
	if started != nil {
		s.publishPart(dir, *started)
	}
	s.publishPart(dir, finish)
	*parts = append(*parts, finish)
	if patch != nil {
		s.publishPart(dir, *patch)
		*parts = append(*parts, *patch)
	}
	s.publishMessage(dir, finished)
	s.publishMessage(dir, *msg)
	return nil
}

// errSave marks an error of the store: the turn stops because what happened could not be recorded.
type errSave struct{ err error }

func (e errSave) Error() string {
	msg := "tandem could not save this turn, so it was stopped: " + e.err.Error()
	switch {
	case store.Full(e.err):
		msg += " (the disk is full: free some space, then send the prompt again)"
	case store.ReadOnly(e.err):
		msg += " (the database is read-only: make tandem's data directory writable again, then send the prompt again)"
	}
	return msg
}
func (e errSave) Unwrap() error { return e.err }

func saveFailed(err error) error {
	if err == nil {
		return nil
	}
	var already errSave
	if errors.As(err, &already) {
		return err
	}
	return errSave{err}
}

// failTurn records an error (an abort, a provider error, a failed write) on the assistant message,
// when there is one, announces it with session.error and ends the turn.
//
// A turn the server stopped at shutdown is left unfinished, as a crash leaves it: the next start's
// Recover resumes it or marks it interrupted.
func (s *Service) failTurn(ctx context.Context, dir string, msg *Message, parts []Part, cause error, user Message) (WithParts, error) {
	return s.failTurnSpent(ctx, dir, msg, parts, cause, user, 0, Tokens{})
}

// failTurnSpent is failTurn for a turn whose finished steps cost something: the session's totals
// count them, as they would have had the turn finished.
func (s *Service) failTurnSpent(ctx context.Context, dir string, msg *Message, parts []Part, cause error, user Message, cost float64, tokens Tokens) (WithParts, error) {
	keep := context.WithoutCancel(ctx)
	sid := user.SessionID
	if pending.ServerStopping(ctx) {
		var reply WithParts
		if msg != nil {
			reply = WithParts{Info: *msg, Parts: parts}
		}
		return reply, nil
	}
	var me *MessageError
	var save errSave
	switch {
	case errors.As(cause, &save):
		me = unknownError(cause)
		s.log.Error("turn stopped: a write failed", "session", sid, "err", cause)
	case ctx.Err() != nil:
		me = abortedError()
	default:
		me = providerError(cause)
		s.log.Warn("turn failed", "session", sid, "err", cause)
	}
	var reply WithParts
	if msg != nil {
		msg.Error = me
		msg.Time.Completed = s.nowMS()
		// A step stopped midway may have changed files already: its patch part lists them, so that
		// a revert puts them back too.
		var patch *Part
		if len(parts) > 0 && parts[0].Type == "step-start" && parts[0].Snapshot != "" {
			if files := s.snaps.changed(keep, dir, parts[0].Snapshot, s.snaps.track(keep, dir)); len(files) > 0 {
				patch = &Part{ID: s.ids.New(id.Part), SessionID: sid, MessageID: msg.ID, Type: "patch", Hash: parts[0].Snapshot, Files: files}
			}
		}
		err := s.db.Tx(keep, func(q store.Tx) error {
			if patch != nil {
				if err := putPart(keep, q, *patch); err != nil {
					return err
				}
			}
			return putMessage(keep, q, *msg)
		})
		if err != nil {
			// The store refused even this (a full disk, a read-only database): the message is still
			// closed with its error for every client watching, so nothing spins as running. The
			// stored copy stays open, and a restart marks it interrupted.
			s.log.Error("store failed turn", "session", sid, "err", err)
		} else if patch != nil {
			s.publishPart(dir, *patch)
			parts = append(parts, *patch)
		}
		s.publishMessage(dir, *msg)
		reply = WithParts{Info: *msg, Parts: parts}
	}
	s.publish(dir, api.EventSessionError, api.SessionError{SessionID: sid, Error: me})
	// The turn's error is announced once: a summary that cannot be stored either is only logged.
	if err := s.closeTurn(keep, dir, sid, user, map[string]fileChange{}, cost, tokens); err != nil {
		s.log.Error("store turn summary", "session", sid, "err", err)
	}
	return reply, nil
}

// finishTurn closes a turn the way OpenCode does: idle status, session.idle, the session and its
// diff. The session's totals and the user message's summary are one write; when it fails,
// session.error says so.
func (s *Service) finishTurn(ctx context.Context, dir, sid string, user Message, turnDiff map[string]fileChange, cost float64, tokens Tokens) {
	if err := s.closeTurn(ctx, dir, sid, user, turnDiff, cost, tokens); err != nil {
		s.log.Error("store turn summary", "session", sid, "err", err)
		s.publish(dir, api.EventSessionError, api.SessionError{SessionID: sid, Error: unknownError(saveFailed(err))})
	}
}

// closeTurn is finishTurn without announcing a failed write: the session goes idle either way, and
// the write's error is returned.
func (s *Service) closeTurn(ctx context.Context, dir, sid string, user Message, turnDiff map[string]fileChange, cost float64, tokens Tokens) error {
	var sess Session
	var list []FileDiff
	root := Worktree(dir)
	user.Summary = &MessageSummary{Diffs: diffList(turnDiff, root)}
	err := s.db.Tx(ctx, func(q store.Tx) error {
		diff, err := sessionDiff(ctx, q, sid)
		if err != nil {
			return err
		}
		list = diffList(diff, root)
		sess, err = s.change(ctx, q, sid, func(x *Session) {
			x.Cost += cost
			addTokens(&x.Tokens, tokens)
			sum := Summary{Files: len(list)}
			for _, d := range list {
				sum.Additions += d.Additions
				sum.Deletions += d.Deletions
			}
			x.Summary = &sum
		})
		if err != nil {
			return err
		}
		return putMessage(ctx, q, user)
	})
	s.setStatus(dir, sid, Status{Type: "busy"})
	s.setStatus(dir, sid, Status{Type: "idle"})
	s.publish(dir, api.EventSessionIdle, api.SessionIdle{SessionID: sid})
	if err != nil {
		return err
	}
	s.announce(sess)
	s.publish(dir, api.EventSessionDiff, api.SessionDiff{SessionID: sid, Diff: list})
	s.publishMessage(dir, user)
	return nil
}

// appendStep adds one assistant step — its text, its finished tool calls and their results — to
// a provider history.
func appendStep(out []provider.Message, parts []Part) []provider.Message {
	am := provider.Message{Role: provider.RoleAssistant}
	var results []provider.Message
	for _, p := range parts {
		switch {
		case p.Type == "reasoning" && p.Text != nil:
			am.Reasoning = append(am.Reasoning, reasoningOf(*p.Text, p.Metadata))
		case p.Type == "text" && p.Text != nil:
			am.Text += *p.Text
		case p.Type == "tool" && p.State != nil && (p.State.Status == "completed" || p.State.Status == "error"):
			am.ToolCalls = append(am.ToolCalls, provider.ToolCall{ID: p.CallID, Name: p.Tool, Input: p.State.Input})
			r := provider.Message{Role: provider.RoleTool, ToolCallID: p.CallID, ToolName: p.Tool}
			if p.State.Status == "completed" && p.State.Output != nil {
				r.Text = *p.State.Output
			} else {
				r.Text, r.IsError = p.State.Error, true
			}
			results = append(results, r)
		}
	}
	if am.Text == "" && len(am.ToolCalls) == 0 {
		return out
	}
	return append(append(out, am), results...)
}

func tokensOf(u provider.Usage) Tokens {
	return Tokens{Total: u.Input + u.Output + u.Reasoning, Input: u.Input, Output: u.Output, Reasoning: u.Reasoning,
		Cache: TokensCache{Read: u.CacheRead, Write: u.CacheWrite}}
}

func addTokens(dst *Tokens, t Tokens) {
	dst.Input += t.Input
	dst.Output += t.Output
	dst.Reasoning += t.Reasoning
	dst.Cache.Read += t.Cache.Read
	dst.Cache.Write += t.Cache.Write
	if dst.Total > 0 || t.Total > 0 {
		dst.Total += t.Total
	}
}
