package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Recover deals with what a crash left running, at start. A tool call that was waiting for an
// approval (its request is stored) resumes: the request is asked again with the same ID and the
// turn goes on once it is answered. Everything else that was running is marked: tool parts become
// errors and unfinished assistant messages are closed with an error, so nothing is left pending
// forever. Stored requests whose call cannot be resumed are resolved as cancelled.
//
// It deals with the sessions only selects (nil: all): on several nodes, a node recovers the
// sessions it runs, at its start and when it takes over those of a node that died.
//
// It returns how many turns it found cut off (marked or resumed): their clients, attached before the
// crash, hold a state the restart changed.
func (s *Service) Recover(ctx context.Context, only store.SessionFilter) (int, error) {
	waiting, byCall, err := s.waitingCalls(ctx, only)
	if err != nil {
		return 0, err
	}
	parts, err := s.db.RunningParts(ctx)
	if err != nil {
		return 0, err
	}
	parts = slices.DeleteFunc(parts, func(p store.Part) bool { return !only.Has(p.SessionID) })
	msgs, err := s.db.UnfinishedMessages(ctx)
	if err != nil {
		return 0, err
	}
	msgs = slices.DeleteFunc(msgs, func(m store.Message) bool { return !only.Has(m.SessionID) })
	now := s.nowMS()
	resumed := map[string]resumePoint{} // assistant message ID -> where its turn resumes
	var marked recovered
	err = s.db.Tx(ctx, func(q store.Tx) error {
		var err error
		if marked.parts, err = s.markParts(ctx, q, parts, byCall, resumed, now); err != nil {
			return err
		}
		marked.msgs, err = s.markMessages(ctx, q, msgs, resumed, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	s.announceRecovered(ctx, marked, resumed)
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
			p, m, err := interrupt(ctx, s.db, r, now)
			if err != nil {
				return 0, err
			}
			s.announceRecovered(ctx, recovered{parts: []Part{p}, msgs: []Message{m}}, nil)
			continue
		}
		if r.question == nil && r.elicitation == "" {
			kept[r.req.ID] = true
		}
	}
	for _, req := range waiting {
		if !kept[req.ID] {
			s.agent.Permissions.Abandon(req, "the server stopped while this request was waiting, and its tool call cannot be resumed")
		}
	}
	return len(msgs), nil
}

// waitingCalls returns the approvals stored by the previous run, and the tool calls waiting for a
// person ("messageID/callID") with the request each waits for: an approval, a question or an MCP
// elicitation.
func (s *Service) waitingCalls(ctx context.Context, only store.SessionFilter) ([]permission.Request, map[string]resumePoint, error) {
	byCall := map[string]resumePoint{}
	if s.agent == nil {
		return nil, byCall, nil
	}
	var waiting []permission.Request
	if s.agent.Permissions != nil {
		var err error
		if waiting, err = s.agent.Permissions.Stored(ctx, only); err != nil {
			return nil, nil, err
		}
	}
	for _, req := range waiting {
		if req.Tool != nil {
			byCall[req.Tool.MessageID+"/"+req.Tool.CallID] = resumePoint{req: req}
		}
	}
	if s.agent.Questions != nil {
		asked, err := s.agent.Questions.Stored(ctx, only)
		if err != nil {
			return nil, nil, err
		}
		for _, q := range asked {
			if q.Tool != nil {
				byCall[q.Tool.MessageID+"/"+q.Tool.CallID] = resumePoint{question: &q}
			}
		}
	}
	if s.agent.Elicitations != nil {
		asked, err := s.agent.Elicitations.StoredElicitations(ctx, only)
		if err != nil {
			return nil, nil, err
		}
		for call, id := range asked {
			byCall[call] = resumePoint{elicitation: id}
		}
	}
	return waiting, byCall, nil
}

// markParts marks the tool parts a crash left running as interrupted, except the first of each
// message whose call waits for a person: that one is kept in resumed, to run again.
func (s *Service) markParts(ctx context.Context, q store.Tx, parts []store.Part, byCall, resumed map[string]resumePoint, now int64) ([]Part, error) {
	var marked []Part
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
			return nil, err
		}
		marked = append(marked, p)
	}
	return marked, nil
}

// markMessages closes the assistant messages a crash left unfinished with an error, except those
// whose turn resumes: resumed gets their message.
func (s *Service) markMessages(ctx context.Context, q store.Tx, msgs []store.Message, resumed map[string]resumePoint, now int64) ([]Message, error) {
	var marked []Message
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
			return nil, err
		}
		marked = append(marked, m)
	}
	return marked, nil
}

// recovered is what a recovery marked as interrupted.
type recovered struct {
	parts []Part
	msgs  []Message
}

// announceRecovered tells connected clients what a recovery changed: the tool parts and messages
// it marked interrupted, and, for a session whose turn does not resume, that it is idle. At a
// start nobody is connected yet (clients that come back are told to reload); at a takeover by
// another node, clients of every node are watching the session.
func (s *Service) announceRecovered(ctx context.Context, marked recovered, resumed map[string]resumePoint) {
	dirs := map[string]string{}
	dirOf := func(sessionID string) (string, bool) {
		if d, ok := dirs[sessionID]; ok {
			return d, true
		}
		sess, err := s.Get(ctx, sessionID)
		if err != nil {
			s.log.Warn("recover: the session of interrupted work is gone", "session", sessionID, "err", err)
			return "", false
		}
		dirs[sessionID] = sess.Directory
		return sess.Directory, true
	}
	for _, p := range marked.parts {
		if dir, ok := dirOf(p.SessionID); ok {
			s.publishPart(dir, p)
		}
	}
	busy := map[string]bool{}
	for _, r := range resumed {
		busy[r.msg.SessionID] = r.msg.ID != ""
	}
	idle := map[string]bool{}
	for _, m := range marked.msgs {
		dir, ok := dirOf(m.SessionID)
		if !ok {
			continue
		}
		s.publishMessage(dir, m)
		if !busy[m.SessionID] && !idle[m.SessionID] {
			idle[m.SessionID] = true
			s.setStatus(dir, m.SessionID, Status{Type: "idle"})
			s.publish(dir, api.EventSessionIdle, api.SessionIdle{SessionID: m.SessionID})
		}
	}
}

// interruptedTool is the error of a tool call the server stopped (a crash, or a shutdown that had
// to stop it): the model reads it in the conversation and the person in the part.
const interruptedTool = "interrupted: the server stopped while this tool was running, so it did not finish; " +
	"whatever it changed before that stays changed. Run it again if it is still needed."

// unreserve cancels the reserved request of a resume point that its call did not claim. At a
// shutdown it stays stored, for the next start.
func (r *resumePoint) unreserve(ctx context.Context, ag Agent, stopping bool) {
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
func interrupt(ctx context.Context, db store.Store, r resumePoint, now int64) (Part, Message, error) {
	p, m := r.part, r.msg
	start := now
	if p.State.Time != nil {
		start = p.State.Time.Start
	}
	p.State = &ToolState{Status: "error", Input: inputOrEmpty(p.State.Input), Metadata: p.State.Metadata,
		Error: "interrupted: the server stopped while this tool was waiting, and it cannot be resumed", Time: &PartTime{Start: start, End: now}}
	m.Time.Completed = now
	m.Error = &MessageError{Name: "MessageAbortedError", Data: map[string]any{"message": "interrupted: the server stopped during this turn"}}
	err := db.Tx(ctx, func(q store.Tx) error {
		if err := putPart(ctx, q, p); err != nil {
			return err
		}
		return putMessage(ctx, q, m)
	})
	return p, m, err
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
	if _, ok := s.agent.Providers.Get(model.ProviderID); !ok {
		return fmt.Errorf("provider %q is not configured any more", model.ProviderID)
	}
	agentName := r.msg.Agent
	if _, ok := findAgent(*s.agent, agentName); !ok {
		return fmt.Errorf("unknown agent %q", agentName)
	}
	in := PromptInput{Agent: agentName, Model: model, Tools: user.Info.Tools, System: user.Info.System}
	t := &turn{ctx: context.WithoutCancel(ctx), user: user.Info, input: in, result: make(chan turnResult, 1), resume: &r}
	// Listed and announced before the turn runs, so that GET /permission (/question) shows it
	// from the start.
	switch {
	case r.elicitation != "":
		if err := s.agent.Elicitations.ReserveElicitation(ctx, r.elicitation); err != nil {
			return err
		}
	case r.question != nil:
		s.agent.Questions.Reserve(*r.question)
	default:
		s.agent.Permissions.Reserve(r.req)
	}
	if !s.runs.schedule(sess.ID, t) {
		r.unreserve(ctx, *s.agent, false)
		return errors.New("the server is shutting down")
	}
	s.setStatus(sess.Directory, sess.ID, Status{Type: "busy"})
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

// rerunCall runs the interrupted tool call again from its stored input, behind a gate that waits
// for the stored request, and returns the step's parts.
func (tr *turnRun) rerunCall() ([]Part, bool, error) {
	s, ctx, ag, sess, r := tr.s, tr.ctx, tr.ag, tr.sess, tr.t.resume
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
	p, stop, err := s.runToolAs(ctx, ag, sess, &msg, tr.byName, call, tr.t.input.Agent, r)
	// A call that failed before asking (its tool is gone) leaves the reserved request unclaimed.
	r.unreserve(context.WithoutCancel(ctx), ag, pending.ServerStopping(ctx))
	return append(parts, p), stop, err
}
