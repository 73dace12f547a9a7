package session

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// step is the state of one model call: the assistant message and the parts it is growing.
type step struct {
	s    *Service
	dir  string
	msg  *Message
	text *Part // the text part being streamed, if any
	rsn  *Part // the reasoning part being streamed, if any

	emitted bool // anything reached the client; a retry would duplicate it
	calls   []provider.ToolCall
	reason  string
	usage   provider.Usage

	// deltas announces the streamed text at a bounded rate; unsent holds what it has not announced
	// yet, consecutive deltas of one part joined.
	deltas *coalescer
	unsent []partDelta
	live   []*Part // the parts open() started, guarded by deltas: Service.live reads them
	// announced is, per part, how much of its text the deltas sent so far carry, in UTF-16 code
	// units (a browser's string length): each delta says where it starts, so a client that loaded
	// the part mid-stream applies exactly what its copy lacks.
	announced map[*Part]int
}

type partDelta struct {
	part *Part
	text string
}

func (s *Service) newStep(dir string, msg *Message) *step {
	st := &step{s: s, dir: dir, msg: msg}
	st.deltas = newCoalescer(s.updateEvery, st.publishDeltas)
	s.live.add(st)
	return st
}

// open starts a streamed text or reasoning part.
func (st *step) open(kind string) *Part {
	empty := ""
	p := &Part{ID: st.s.ids.New(id.Part), SessionID: st.msg.SessionID, MessageID: st.msg.ID, Type: kind,
		Text: &empty, Time: &PartTime{Start: st.s.nowMS()}}
	st.deltas.Flush() // the other part's text comes first
	st.deltas.Do(func() { st.live = append(st.live, p) })
	st.s.publishPart(st.dir, *p)
	return p
}

// delta grows a streamed part; its text is announced with the step's other deltas, at a bounded rate.
func (st *step) delta(p *Part, d string) {
	st.deltas.Add(func() {
		*p.Text += d
		if n := len(st.unsent); n > 0 && st.unsent[n-1].part == p {
			st.unsent[n-1].text += d
			return
		}
		st.unsent = append(st.unsent, partDelta{part: p, text: d})
	})
}

func (st *step) publishDeltas() {
	if st.announced == nil {
		st.announced = map[*Part]int{}
	}
	for _, d := range st.unsent {
		offset := st.announced[d.part]
		st.announced[d.part] = offset + utf16Len(d.text)
		st.s.publish(st.dir, "message.part.delta", map[string]any{
			"sessionID": d.part.SessionID, "messageID": d.part.MessageID, "partID": d.part.ID, "field": "text", "delta": d.text,
			"offset": offset,
		})
	}
	clear(st.unsent)
	st.unsent = st.unsent[:0]
}

// closeStreams finishes the open text and reasoning parts and stores them in one transaction.
func (st *step) closeStreams(ctx context.Context) error {
	st.deltas.Close()          // every delta is out before the parts' final state
	defer st.s.live.remove(st) // once stored: a listing in between finds the parts in both places
	var closed []Part
	st.deltas.Do(func() {
		for _, pp := range []**Part{&st.rsn, &st.text} {
			if p := *pp; p != nil {
				p.Time.End = st.s.nowMS()
				closed = append(closed, *p)
			}
		}
	})
	if len(closed) == 0 {
		return nil
	}
	err := st.s.db.Tx(ctx, func(q store.Tx) error {
		for _, p := range closed {
			if err := putPart(ctx, q, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// The parts were announced as they streamed but never stored: withdraw them, so that no
		// client keeps text the store does not hold (the message's error says why).
		for _, p := range closed {
			st.s.publish(st.dir, "message.part.removed", map[string]any{"sessionID": p.SessionID, "messageID": p.MessageID, "partID": p.ID})
		}
		st.rsn, st.text = nil, nil
		return saveFailed(err)
	}
	for _, p := range closed {
		st.s.publishPart(st.dir, p)
	}
	st.rsn, st.text = nil, nil
	return nil
}

func (st *step) emit(ev provider.Event) error {
	switch ev.Kind {
	case provider.TextDelta:
		if ev.Text == "" {
			return nil
		}
		st.emitted = true
		if st.text == nil {
			st.text = st.open("text")
		}
		st.delta(st.text, ev.Text)
	case provider.ReasoningDelta:
		if ev.Text == "" {
			return nil
		}
		st.emitted = true
		if st.rsn == nil {
			st.rsn = st.open("reasoning")
		}
		st.delta(st.rsn, ev.Text)
	case provider.ToolCallReady:
		st.emitted = true
		st.calls = append(st.calls, ev.ToolCall)
	case provider.Finished:
		st.reason, st.usage = ev.Reason, ev.Usage
	}
	return nil
}

// runTurn answers one user message: model calls and tool calls until the model stops, the step
// limit is reached, the turn fails or it is aborted. The reply is the last assistant message.
//
// Every write happens before the event that announces it, and a write that fails ends the turn
// with session.error: what the stream said is what the store holds.
func (s *Service) runTurn(ctx context.Context, ag Agent, t *turn) (WithParts, error) {
	if t.compact != nil {
		return s.runCompaction(ctx, ag, t)
	}
	keep := context.WithoutCancel(ctx) // stores must land even when the turn is aborted
	user := t.user                     // the runner's own copy: prompt_async callers read t.user concurrently
	sess, err := s.Get(keep, user.SessionID)
	if err != nil {
		return WithParts{}, err
	}
	dir, sid := sess.Directory, sess.ID
	s.setStatus(dir, sid, Status{Type: "busy"})
	prov, _ := ag.Providers.Get(t.input.Model.ProviderID)
	if t.title != "" {
		// The session's model titles it from the first prompt while the turn runs; the turn waits
		// for the title before it ends, so nothing outlives it.
		titled := make(chan struct{})
		go func() {
			defer close(titled)
			s.generateTitle(ctx, prov, t.input.Model.ModelID, sid, t.title, firstText(t.input.Parts))
		}()
		defer func() { <-titled }()
	}
	def, _ := findAgent(ag, t.input.Agent) // checked when the prompt was accepted
	if r := t.resume; r != nil && r.elicitation != "" && ag.Elicitations != nil {
		// The MCP server that asked stopped with the previous process: its tools are back once the
		// new process has connected it (or failed to, and the call fails as a missing tool).
		_ = ag.Elicitations.WaitStarted(ctx)
	}
	tools := toolsFor(ag, sid, def, t.input.Tools)
	if task := s.taskTool(ag, def, t.input.Tools); task != nil {
		tools = append(tools, task)
	}
	tools = editToolsFor(ag, t.input.Model, tools)
	specs := make([]provider.ToolSpec, 0, len(tools))
	byName := make(map[string]tool.Tool, len(tools))
	for _, tl := range tools {
		specs = append(specs, provider.ToolSpec{Name: tl.Name(), Description: tl.Description(), Parameters: tl.Parameters()})
		byName[tl.Name()] = tl
	}
	system := def.system(dir)
	if t.input.System != "" {
		system = append(system, t.input.System)
	}

	var reply WithParts
	var turnCost float64
	var turnTokens Tokens
	turnDiff := map[string]fileChange{}
	if r := t.resume; r != nil {
		// A turn that waited for an approval when the server stopped: finish that step first.
		msg := r.msg
		parts, stop, err := s.resumeStep(ctx, ag, sess, t, byName)
		if err != nil {
			return s.failTurn(ctx, dir, &msg, parts, err, user)
		}
		if ctx.Err() != nil {
			return s.failTurn(ctx, dir, &msg, parts, ctx.Err(), user)
		}
		if err := s.commitStep(keep, dir, &msg, &parts, "", provider.ReasonToolCalls, 0, Tokens{}); err != nil {
			return s.failTurn(ctx, dir, &msg, parts, err, user)
		}
		foldDiffs(turnDiff, parts)
		reply = WithParts{Info: msg, Parts: parts}
		if stop {
			s.finishTurn(keep, dir, sid, user, turnDiff, 0, Tokens{})
			return reply, nil
		}
	}
	// The history is read once (a resumed turn's after its first step); each step's output is
	// appended in memory.
	conv, err := s.conversation(keep, sid, user.ID)
	if err != nil {
		return s.failTurn(ctx, dir, nil, nil, err, user)
	}
	var auto bool    // compact by itself at all
	var usable int64 // compact before a call estimated over this many tokens; 0: unknown
	if limits, ok := ag.Providers.(ContextLimits); ok {
		auto, usable = limits.Compaction(t.input.Model.ProviderID, t.input.Model.ModelID)
	}
	compacted := !auto // at most once a turn, and never when switched off
	for n := 0; n < ag.MaxSteps; n++ {
		// Once per turn, a call that would carry more than the model can take first compacts what
		// came before the turn (the turn's own messages are kept as they are).
		if usable > 0 && !compacted && conv.at > conv.summarized &&
			provider.EstimateTokens(provider.Request{System: system, Messages: conv.msgs, Tools: specs}) > usable {
			compacted = true
			next, tokens, cost, err := s.autoCompact(ctx, ag, prov, sess, t, conv, false)
			if err != nil {
				return s.failTurn(ctx, dir, nil, nil, err, user)
			}
			conv = next
			turnCost += cost
			addTokens(&turnTokens, tokens)
		}
		history := conv.msgs
		zero := 0.0
		msg := &Message{
			ID: s.ids.New(id.Message), SessionID: sid, Role: RoleAssistant, ParentID: t.user.ID,
			Agent: t.input.Agent, Mode: t.input.Agent, ModelID: t.input.Model.ModelID, ProviderID: t.input.Model.ProviderID,
			Path: &MessagePath{Cwd: dir, Root: Worktree(dir)}, Cost: &zero, Tokens: &Tokens{},
			Time: MessageTime{Created: s.nowMS()},
		}
		start := Part{ID: s.ids.New(id.Part), SessionID: sid, MessageID: msg.ID, Type: "step-start"}
		var touched Session
		summarized := user
		summarized.Summary = &MessageSummary{Diffs: []FileDiff{}}
		// The step opens with one write: its message and step-start (and, on the first step, the
		// session's touch and the user message's still empty summary, which OpenCode announces here).
		err := s.db.Tx(keep, func(q store.Tx) error {
			if err := putMessage(keep, q, *msg); err != nil {
				return err
			}
			if n == 0 {
				var err error
				if touched, err = s.change(keep, q, sid, func(*Session) {}); err != nil {
					return err
				}
				if err := putMessage(keep, q, summarized); err != nil {
					return err
				}
			}
			return putPart(keep, q, start)
		})
		if err != nil {
			return s.failTurn(ctx, dir, nil, nil, saveFailed(err), user)
		}
		s.publishMessage(dir, *msg)
		if n == 0 {
			s.announce(touched)
			s.publish(dir, "session.diff", map[string]any{"sessionID": sid, "diff": []FileDiff{}})
			user = summarized
			s.publishMessage(dir, user)
			s.setStatus(dir, sid, Status{Type: "busy"})
		}
		st := s.newStep(dir, msg)
		s.publishPart(dir, start)
		parts := []Part{start}

		req := provider.Request{Model: t.input.Model.ModelID, System: system, Messages: history, Tools: specs}
		callErr := s.callModel(ctx, ag, prov, req, st, dir, sid)
		textParts := []*Part{st.rsn, st.text}
		if err := st.closeStreams(keep); err != nil {
			return s.failTurn(ctx, dir, msg, parts, err, user)
		}
		for _, p := range textParts {
			if p != nil {
				parts = append(parts, *p)
			}
		}
		if callErr != nil {
			// The model said the conversation does not fit (the estimate was short): compact what
			// came before the turn, if that was not done yet, and call it again.
			var pe *provider.Error
			if errors.As(callErr, &pe) && pe.Kind == provider.ErrContextOverflow && ctx.Err() == nil && !st.emitted &&
				!compacted && conv.at > conv.summarized {
				compacted = true
				s.markFailed(keep, dir, msg, providerError(callErr))
				next, tokens, cost, err := s.autoCompact(ctx, ag, prov, sess, t, conv, true)
				if err != nil {
					return s.failTurn(ctx, dir, nil, nil, err, user)
				}
				conv = next
				turnCost += cost
				addTokens(&turnTokens, tokens)
				continue
			}
			return s.failTurn(ctx, dir, msg, parts, callErr, user)
		}

		stop := false
		for _, call := range st.calls {
			// The project's files are recorded before the step's first call that may change them
			// (a step that only talks or reads costs no snapshot); the step-start part carries it.
			if parts[0].Snapshot == "" && mayChangeFiles(call.Name) {
				parts[0].Snapshot = s.track(keep, dir)
			}
			p, stopTurn, err := s.runTool(ctx, ag, sess, msg, byName, call, t.input.Agent)
			parts = append(parts, p)
			if err != nil {
				return s.failTurn(ctx, dir, msg, parts, err, user)
			}
			if ctx.Err() != nil {
				return s.failTurn(ctx, dir, msg, parts, ctx.Err(), user)
			}
			stop = stop || stopTurn
		}

		cost := ag.Providers.Cost(msg.ProviderID, msg.ModelID, st.usage)
		tokens := tokensOf(st.usage)
		reason := st.reason
		if reason == "" {
			reason = provider.ReasonStop
		}
		if err := s.commitStep(keep, dir, msg, &parts, parts[0].Snapshot, reason, cost, tokens); err != nil {
			return s.failTurn(ctx, dir, msg, parts, err, user)
		}
		foldDiffs(turnDiff, parts)
		conv.msgs = appendStep(history, parts)
		turnCost += cost
		addTokens(&turnTokens, tokens)
		reply = WithParts{Info: *msg, Parts: parts}
		if len(st.calls) == 0 || stop {
			break
		}
	}
	s.finishTurn(keep, dir, sid, user, turnDiff, turnCost, turnTokens)
	return reply, nil
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
		finish.Snapshot = s.track(ctx, dir)
		if files := s.changed(ctx, dir, startSnapshot, finish.Snapshot); len(files) > 0 {
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

// resumePoint is where a turn stopped when the server died: a tool call waiting for approval.
type resumePoint struct {
	msg      Message            // the step's assistant message, never completed
	part     Part               // the tool part, still running
	req      permission.Request // the stored approval it waits for, or
	question *question.Stored   // the stored question it waits for, or
	// elicitation is the ID of the stored MCP elicitation it waits for: the call runs again on the
	// new MCP server process, and the elicitation it asks takes that ID.
	elicitation string
}

// resumeStep runs the interrupted tool call again from its stored input, behind a gate that waits
// for the stored request, and returns the step's parts.
func (s *Service) resumeStep(ctx context.Context, ag Agent, sess Session, t *turn, byName map[string]tool.Tool) ([]Part, bool, error) {
	r := t.resume
	row, rows, err := s.db.GetMessage(context.WithoutCancel(ctx), sess.ID, r.msg.ID)
	if err != nil {
		return nil, false, saveFailed(err)
	}
	stored, err := decodeWithParts(row, rows)
	if err != nil {
		return nil, false, err
	}
	var parts []Part
	for _, p := range stored.Parts {
		if p.ID != r.part.ID {
			parts = append(parts, p)
		}
	}
	call := provider.ToolCall{ID: r.part.CallID, Name: r.part.Tool, Input: r.part.State.Input}
	msg := r.msg
	p, stop, err := s.runToolAs(ctx, ag, sess, &msg, byName, call, t.input.Agent, r)
	// A call that failed before asking (its tool is gone) leaves the reserved request unclaimed.
	s.unreserve(context.WithoutCancel(ctx), ag, r, pending.ServerStopping(ctx))
	return append(parts, p), stop, err
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

// callModel streams one model call, retrying errors where retrying helps and nothing was shown yet.
func (s *Service) callModel(ctx context.Context, ag Agent, prov provider.Provider, req provider.Request, st *step, dir, sid string) error {
	for attempt := 1; ; attempt++ {
		err := prov.Stream(ctx, req, st.emit)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var pe *provider.Error
		if !errors.As(err, &pe) || !pe.Retryable() || st.emitted || attempt > ag.Retries {
			return err
		}
		wait := ag.RetryBase << (attempt - 1)
		if pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		wait = min(wait, time.Minute)
		s.setStatus(dir, sid, Status{Type: "retry", Attempt: attempt, Message: pe.Message, Next: s.now().Add(wait).UnixMilli()})
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		s.setStatus(dir, sid, Status{Type: "busy"})
	}
}

// failTurn records an error (an abort, a provider error, a failed write) on the assistant message,
// when there is one, announces it with session.error and ends the turn.
//
// A turn the server stopped at shutdown is left unfinished, as a crash leaves it: the next start's
// Recover resumes it or marks it interrupted.
func (s *Service) failTurn(ctx context.Context, dir string, msg *Message, parts []Part, cause error, user Message) (WithParts, error) {
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
			if files := s.changed(keep, dir, parts[0].Snapshot, s.track(keep, dir)); len(files) > 0 {
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
	s.publish(dir, "session.error", map[string]any{"sessionID": sid, "error": me})
	// The turn's error is announced once: a summary that cannot be stored either is only logged.
	if err := s.closeTurn(keep, dir, sid, user, map[string]fileChange{}, 0, Tokens{}); err != nil {
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
		s.publish(dir, "session.error", map[string]any{"sessionID": sid, "error": unknownError(saveFailed(err))})
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
	s.publish(dir, "session.idle", map[string]any{"sessionID": sid})
	if err != nil {
		return err
	}
	s.announce(sess)
	s.publish(dir, "session.diff", map[string]any{"sessionID": sid, "diff": list})
	s.publishMessage(dir, user)
	return nil
}

func (s *Service) publishMessage(dir string, m Message) {
	s.publish(dir, "message.updated", map[string]any{"sessionID": m.SessionID, "info": m})
}

// toolsFor filters every tool there is for a session, once, by what the agent is offered and what
// the prompt switched off.
func toolsFor(ag Agent, sessionID string, def agent, switched map[string]bool) []tool.Tool {
	var all []tool.Tool
	if ag.Tools != nil {
		all = ag.Tools()
	}
	if ag.SessionTools != nil {
		all = append(all, ag.SessionTools(sessionID)...)
	}
	var out []tool.Tool
	for _, tl := range all {
		if !def.offers(tl.Name()) {
			continue
		}
		if enabled, listed := switched[tl.Name()]; listed && !enabled {
			continue
		}
		out = append(out, tl)
	}
	return out
}

// EditTools is implemented by Providers that know which tools a model changes files with (see
// provider.EditTools); without it, OpenCode's rule for the model's ID decides.
type EditTools interface {
	EditTools(providerID, modelID string) string
}

// editToolsFor keeps the file-changing tools the turn's model is offered: apply_patch for the
// models trained on its format (OpenAI's GPT models), edit, multiedit and write for the others.
func editToolsFor(ag Agent, model *MessageModel, tools []tool.Tool) []tool.Tool {
	if model == nil {
		return tools
	}
	mode := provider.DefaultEditTools(model.ModelID)
	if et, ok := ag.Providers.(EditTools); ok {
		mode = et.EditTools(model.ProviderID, model.ModelID)
	}
	return slices.DeleteFunc(tools, func(tl tool.Tool) bool {
		switch tl.Name() {
		case "apply_patch":
			return mode == provider.EditToolsEdit
		case "edit", "multiedit", "write":
			return mode == provider.EditToolsPatch
		}
		return false
	})
}

// runTool runs one call through its part's states: pending → running → completed | error. A
// non-nil error is a failed write: the part's state could not be stored, and the turn must stop.
func (s *Service) runTool(ctx context.Context, ag Agent, sess Session, msg *Message, byName map[string]tool.Tool, call provider.ToolCall, agent string) (Part, bool, error) {
	return s.runToolAs(ctx, ag, sess, msg, byName, call, agent, nil)
}

// runToolAs is runTool, or with resume the tool call of a resumed turn: its part keeps its ID and
// its start, and its gate waits for the stored request.
func (s *Service) runToolAs(ctx context.Context, ag Agent, sess Session, msg *Message, byName map[string]tool.Tool, call provider.ToolCall, agent string, resume *resumePoint) (Part, bool, error) {
	keep := context.WithoutCancel(ctx)
	dir := sess.Directory
	empty := ""
	input := inputOrEmpty(call.Input)
	p := Part{ID: s.ids.New(id.Part), SessionID: sess.ID, MessageID: msg.ID, Type: "tool", CallID: call.ID, Tool: call.Name,
		State: &ToolState{Status: "pending", Input: json.RawMessage("{}"), Raw: &empty}}
	start := s.nowMS()
	if resume != nil {
		p.ID = resume.part.ID
		if resume.part.State.Time != nil {
			start = resume.part.State.Time.Start
		}
	} else {
		s.publishPart(dir, p)
	}
	p.State = &ToolState{Status: "running", Input: input, Time: &PartTime{Start: start}}
	if err := putPart(keep, s.db, p); err != nil {
		return p, false, saveFailed(err)
	}
	s.publishPart(dir, p)
	stored := p // live progress is announced but not stored; a failed final write falls back to this

	// settle stores the final state and announces it only once it is stored. When the write fails,
	// the stored running state is announced again, so that the stream's last word is the store's.
	settle := func(final ToolState) error {
		p.State = &final
		if err := putPart(keep, s.db, p); err != nil {
			p = stored
			s.publishPart(dir, p)
			return saveFailed(err)
		}
		s.publishPart(dir, p)
		return nil
	}
	fail := func(msgText string) error {
		return settle(ToolState{Status: "error", Input: input, Error: msgText, Metadata: p.State.Metadata, Time: &PartTime{Start: start, End: s.nowMS()}})
	}
	tl, ok := byName[call.Name]
	if !ok {
		return p, false, fail("Unknown tool " + call.Name + ": it is not available to this agent.")
	}
	if !json.Valid(input) {
		return p, false, fail("The tool input is not valid JSON: " + string(call.Input))
	}
	var within []permission.Layer
	var parentID, rootID string
	if sess.ParentID != "" {
		var err error
		if within, parentID, rootID, err = s.lineage(keep, ag, sess); err != nil {
			return p, false, fail("The rules of the session that started this subagent could not be read, so nothing was run: " + err.Error())
		}
	}
	var gate tool.Gate = allowAll{}
	if ag.Permissions != nil {
		def, _ := findAgent(ag, agent)
		scope := permission.Scope{SessionID: sess.ID, Directory: sess.Directory, ProjectID: s.GrantScope(ctx, sess.Directory),
			MessageID: msg.ID, CallID: call.ID, Rules: def.info.Permission, Session: sess.Permission,
			Within: within, ParentSessionID: parentID, RootSessionID: rootID}
		switch {
		case resume != nil && resume.elicitation != "":
			// The call was approved and running when the server stopped: it runs again as it was.
			gate = &approvedOnce{Gate: ag.Permissions.Gate(scope), permission: call.Name}
		case resume != nil && resume.question == nil:
			gate = ag.Permissions.Resume(scope, resume.req)
		default:
			gate = ag.Permissions.Gate(scope)
		}
	}
	// Live progress (a command's output so far) is announced at a bounded rate, the newest always.
	var mu sync.Mutex
	var latest tool.Progress
	updates := newCoalescer(s.updateEvery, func() {
		mu.Lock()
		defer mu.Unlock()
		if p.State.Status != "running" {
			return
		}
		st := *p.State
		st.Title, st.Metadata = latest.Title, latest.Metadata
		p.State = &st
		s.publishPart(dir, p)
	})
	progress := func(pr tool.Progress) { updates.Add(func() { latest = pr }) }
	files := s.filesOf(sess.ID)
	terminals, _ := files.(tool.Terminals) // a client that serves files may run commands too
	res, err := tl.Run(ctx, &tool.Call{
		ID: call.ID, SessionID: sess.ID, MessageID: msg.ID, Agent: agent, Dir: dir, Input: input,
		Gate: gate, Progress: progress, Todos: s, Files: files, Terminals: terminals,
		ParentSessionID: parentID, RootSessionID: rootID,
	})
	updates.Close()
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		if pending.ServerStopping(ctx) {
			if errors.Is(err, pending.ErrServerStopping) {
				// It waits for a person: its part stays running and its request stored, as a crash
				// leaves them, and the next start resumes it.
				return p, false, err
			}
			if ferr := fail(interruptedTool); ferr != nil {
				return p, false, ferr
			}
			return p, false, err
		}
		if ctx.Err() != nil {
			return p, false, fail("Tool execution aborted")
		}
		// A dismissed question ends the turn without another model call, as in OpenCode.
		stop := errors.Is(err, question.ErrDismissed)
		return p, stop, fail(err.Error())
	}
	output := res.Output
	return p, false, settle(ToolState{Status: "completed", Input: input, Output: &output, Title: res.Title, Metadata: orEmpty(res.Metadata),
		Time: &PartTime{Start: start, End: s.nowMS()}})
}

// approvedOnce lets the first check of one permission pass without asking: the check of a call that
// was approved, and running, when the server stopped, and that now runs again as it was. Every
// other check is the gate's.
type approvedOnce struct {
	tool.Gate
	permission string
	mu         sync.Mutex
	used       bool
}

func (g *approvedOnce) Check(ctx context.Context, ask tool.Ask) error {
	g.mu.Lock()
	mine := !g.used && ask.Permission == g.permission
	g.used = g.used || mine
	g.mu.Unlock()
	if mine {
		return nil
	}
	return g.Gate.Check(ctx, ask)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

type allowAll struct{}

func (allowAll) Check(context.Context, tool.Ask) error { return nil }

// appendStep adds one assistant step — its text, its finished tool calls and their results — to
// a provider history.
func appendStep(out []provider.Message, parts []Part) []provider.Message {
	am := provider.Message{Role: provider.RoleAssistant}
	var results []provider.Message
	for _, p := range parts {
		switch {
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
