package session

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"tandem/id"
	"tandem/permission"
	"tandem/provider"
	"tandem/question"
	"tandem/tool"
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
}

// open starts a streamed text or reasoning part.
func (st *step) open(kind string) *Part {
	empty := ""
	p := &Part{ID: st.s.ids.New(id.Part), SessionID: st.msg.SessionID, MessageID: st.msg.ID, Type: kind,
		Text: &empty, Time: &PartTime{Start: st.s.nowMS()}}
	st.s.publishPart(st.dir, *p)
	return p
}

func (st *step) delta(p *Part, d string) {
	*p.Text += d
	st.s.publish(st.dir, "message.part.delta", map[string]any{
		"sessionID": p.SessionID, "messageID": p.MessageID, "partID": p.ID, "field": "text", "delta": d,
	})
}

// closeStreams finishes the open text and reasoning parts and stores them.
func (st *step) closeStreams() error {
	for _, pp := range []**Part{&st.rsn, &st.text} {
		p := *pp
		if p == nil {
			continue
		}
		p.Time.End = st.s.nowMS()
		if err := st.s.putPart(context.Background(), *p); err != nil {
			return err
		}
		st.s.publishPart(st.dir, *p)
		*pp = nil
	}
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
func (s *Service) runTurn(ctx context.Context, ag Agent, t *turn) (WithParts, error) {
	bg := context.Background() // stores must land even when ctx is cancelled
	sess, err := s.Get(bg, t.user.SessionID)
	if err != nil {
		return WithParts{}, err
	}
	dir, sid := sess.Directory, sess.ID
	s.setStatus(dir, sid, Status{Type: "busy"})
	prov, _ := ag.Providers.Get(t.input.Model.ProviderID)
	def, _ := agentNamed(t.input.Agent) // checked when the prompt was accepted
	tools := toolsFor(ag, def, t.input.Tools)
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

	user := t.user // the runner's own copy: prompt_async callers read t.user concurrently
	var reply WithParts
	var turnCost float64
	var turnTokens Tokens
	turnDiff := map[string]FileDiff{}
	// The history is read once; each step's output is appended in memory.
	history, err := s.history(bg, sid, user.ID)
	if err != nil {
		return reply, err
	}
	for n := 0; n < ag.MaxSteps; n++ {
		zero := 0.0
		msg := &Message{
			ID: s.ids.New(id.Message), SessionID: sid, Role: RoleAssistant, ParentID: t.user.ID,
			Agent: t.input.Agent, Mode: t.input.Agent, ModelID: t.input.Model.ModelID, ProviderID: t.input.Model.ProviderID,
			Path: &MessagePath{Cwd: dir, Root: Worktree(dir)}, Cost: &zero, Tokens: &Tokens{},
			Time: MessageTime{Created: s.nowMS()},
		}
		if err := s.saveMessage(dir, *msg); err != nil {
			return reply, err
		}
		if n == 0 {
			// OpenCode announces the turn's (still empty) diff and the user message summary here.
			_, _ = s.mutate(bg, sid, func(*Session) {})
			s.publish(dir, "session.diff", map[string]any{"sessionID": sid, "diff": []FileDiff{}})
			summarized := user
			summarized.Summary = &MessageSummary{Diffs: []FileDiff{}}
			if err := s.saveMessage(dir, summarized); err == nil {
				user = summarized
			}
			s.setStatus(dir, sid, Status{Type: "busy"})
		}
		st := &step{s: s, dir: dir, msg: msg}
		start := Part{ID: s.ids.New(id.Part), SessionID: sid, MessageID: msg.ID, Type: "step-start"}
		if err := s.putPart(bg, start); err != nil {
			return reply, err
		}
		s.publishPart(dir, start)
		parts := []Part{start}

		req := provider.Request{Model: t.input.Model.ModelID, System: system, Messages: history, Tools: specs}
		callErr := s.callModel(ctx, ag, prov, req, st, dir, sid)
		textParts := []*Part{st.rsn, st.text}
		if err := st.closeStreams(); err != nil {
			return reply, err
		}
		for _, p := range textParts {
			if p != nil {
				parts = append(parts, *p)
			}
		}
		if callErr != nil {
			return s.failTurn(dir, msg, parts, ctx, callErr, user)
		}

		stop := false
		for _, call := range st.calls {
			p, stopTurn := s.runTool(ctx, ag, sess, msg, byName, call, t.input.Agent)
			parts = append(parts, p)
			if ctx.Err() != nil {
				return s.failTurn(dir, msg, parts, ctx, ctx.Err(), user)
			}
			stop = stop || stopTurn
		}

		cost := ag.Providers.Cost(msg.ProviderID, msg.ModelID, st.usage)
		tokens := tokensOf(st.usage)
		reason := st.reason
		if reason == "" {
			reason = provider.ReasonStop
		}
		finish := Part{ID: s.ids.New(id.Part), SessionID: sid, MessageID: msg.ID, Type: "step-finish",
			Reason: reason, Cost: &cost, Tokens: &tokens}
		if err := s.putPart(bg, finish); err != nil {
			return reply, err
		}
		s.publishPart(dir, finish)
		parts = append(parts, finish)

		// OpenCode announces the finish and then the completion; one write stores both.
		msg.Finish, msg.Cost, msg.Tokens = reason, &cost, &tokens
		s.publish(dir, "message.updated", map[string]any{"sessionID": sid, "info": *msg})
		msg.Time.Completed = s.nowMS()
		if err := s.saveMessage(dir, *msg); err != nil {
			return reply, err
		}
		foldDiffs(turnDiff, parts)
		history = appendStep(history, parts)
		turnCost += cost
		addTokens(&turnTokens, tokens)
		reply = WithParts{Info: *msg, Parts: parts}
		if len(st.calls) == 0 || stop {
			break
		}
	}
	s.finishTurn(dir, sid, user, turnDiff, turnCost, turnTokens)
	return reply, nil
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

// failTurn records an error (or an abort) on the assistant message and ends the turn.
func (s *Service) failTurn(dir string, msg *Message, parts []Part, ctx context.Context, cause error, user Message) (WithParts, error) {
	if ctx.Err() != nil {
		msg.Error = abortedError()
	} else {
		msg.Error = providerError(cause)
		s.log.Warn("turn failed", "session", msg.SessionID, "err", cause)
	}
	msg.Time.Completed = s.nowMS()
	if err := s.saveMessage(dir, *msg); err != nil {
		return WithParts{}, err
	}
	s.publish(dir, "session.error", map[string]any{"sessionID": msg.SessionID, "error": msg.Error})
	s.finishTurn(dir, msg.SessionID, user, map[string]FileDiff{}, 0, Tokens{})
	return WithParts{Info: *msg, Parts: parts}, nil
}

// finishTurn closes a turn the way OpenCode does: idle status, session.idle, the session and its diff.
func (s *Service) finishTurn(dir, sid string, user Message, turnDiff map[string]FileDiff, cost float64, tokens Tokens) {
	bg := context.Background()
	s.setStatus(dir, sid, Status{Type: "busy"})
	s.setStatus(dir, sid, Status{Type: "idle"})
	s.publish(dir, "session.idle", map[string]any{"sessionID": sid})
	list := diffList(s.addTurnDiff(bg, sid, turnDiff))
	_, _ = s.mutate(bg, sid, func(x *Session) {
		x.Cost += cost
		addTokens(&x.Tokens, tokens)
		sum := Summary{Files: len(list)}
		for _, d := range list {
			sum.Additions += d.Additions
			sum.Deletions += d.Deletions
		}
		x.Summary = &sum
	})
	s.publish(dir, "session.diff", map[string]any{"sessionID": sid, "diff": list})
	turnDiffs := diffList(withStats(turnDiff))
	user.Summary = &MessageSummary{Diffs: turnDiffs}
	_ = s.saveMessage(dir, user)
}

func (s *Service) saveMessage(dir string, m Message) error {
	if err := s.putMessage(context.Background(), m); err != nil {
		return err
	}
	s.publish(dir, "message.updated", map[string]any{"sessionID": m.SessionID, "info": m})
	return nil
}

// toolsFor filters every tool there is, once, by what the agent is offered and what the prompt
// switched off.
func toolsFor(ag Agent, def agent, switched map[string]bool) []tool.Tool {
	if ag.Tools == nil {
		return nil
	}
	var out []tool.Tool
	for _, tl := range ag.Tools() {
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

// runTool runs one call through its part's states: pending → running → completed | error.
func (s *Service) runTool(ctx context.Context, ag Agent, sess Session, msg *Message, byName map[string]tool.Tool, call provider.ToolCall, agent string) (Part, bool) {
	bg := context.Background()
	dir := sess.Directory
	empty := ""
	input := inputOrEmpty(call.Input)
	p := Part{ID: s.ids.New(id.Part), SessionID: sess.ID, MessageID: msg.ID, Type: "tool", CallID: call.ID, Tool: call.Name,
		State: &ToolState{Status: "pending", Input: json.RawMessage("{}"), Raw: &empty}}
	s.publishPart(dir, p)
	start := s.nowMS()
	p.State = &ToolState{Status: "running", Input: input, Time: &PartTime{Start: start}}
	_ = s.putPart(bg, p)
	s.publishPart(dir, p)

	fail := func(msgText string) Part {
		p.State = &ToolState{Status: "error", Input: input, Error: msgText, Metadata: p.State.Metadata, Time: &PartTime{Start: start, End: s.nowMS()}}
		_ = s.putPart(bg, p)
		s.publishPart(dir, p)
		return p
	}
	tl, ok := byName[call.Name]
	if !ok {
		return fail("Unknown tool " + call.Name + ": it is not available to this agent."), false
	}
	if !json.Valid(input) {
		return fail("The tool input is not valid JSON: " + string(call.Input)), false
	}
	var gate tool.Gate = allowAll{}
	if ag.Permissions != nil {
		def, _ := agentNamed(agent)
		gate = ag.Permissions.Gate(permission.Scope{SessionID: sess.ID, Directory: sess.Directory, ProjectID: sess.ProjectID,
			MessageID: msg.ID, CallID: call.ID, Rules: append(slices.Clone(sess.Permission), def.info.Permission...)})
	}
	var mu sync.Mutex
	progress := func(pr tool.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.State.Status != "running" {
			return
		}
		st := *p.State
		st.Title, st.Metadata = pr.Title, pr.Metadata
		p.State = &st
		s.publishPart(dir, p)
	}
	res, err := tl.Run(ctx, &tool.Call{
		ID: call.ID, SessionID: sess.ID, MessageID: msg.ID, Agent: agent, Dir: dir, Input: input,
		Gate: gate, Progress: progress, Todos: s,
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return fail("Tool execution aborted"), false
		}
		// A dismissed question ends the turn without another model call, as in OpenCode.
		stop := errors.Is(err, question.ErrDismissed)
		return fail(err.Error()), stop
	}
	output := res.Output
	p.State = &ToolState{Status: "completed", Input: input, Output: &output, Title: res.Title, Metadata: orEmpty(res.Metadata),
		Time: &PartTime{Start: start, End: s.nowMS()}}
	_ = s.putPart(bg, p)
	s.publishPart(dir, p)
	return p, false
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

type allowAll struct{}

func (allowAll) Check(context.Context, tool.Ask) error { return nil }

// history turns the stored conversation up to the turn's user message into provider messages.
// Prompts queued behind this turn are already stored, and stay out of its history.
func (s *Service) history(ctx context.Context, sessionID, upTo string) ([]provider.Message, error) {
	page, err := s.messages(ctx, sessionID, MessagesInput{})
	if err != nil {
		return nil, err
	}
	var out []provider.Message
	included := map[string]bool{}
	reached := false
	for _, wp := range page.Items {
		switch wp.Info.Role {
		case RoleUser:
			if reached {
				continue
			}
			included[wp.Info.ID] = true
			reached = wp.Info.ID == upTo
			var b strings.Builder
			for _, p := range wp.Parts {
				switch p.Type {
				case "text":
					if p.Text != nil && !p.Ignored {
						if b.Len() > 0 {
							b.WriteString("\n")
						}
						b.WriteString(*p.Text)
					}
				case "file":
					b.WriteString("\n[attached file: " + p.Filename + " (" + p.Mime + ") " + p.URL + "]")
				}
			}
			out = append(out, provider.Message{Role: provider.RoleUser, Text: b.String()})
		case RoleAssistant:
			if included[wp.Info.ParentID] {
				out = appendStep(out, wp.Parts)
			}
		}
	}
	return out, nil
}

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
