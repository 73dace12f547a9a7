package session

import (
	"context"
	"errors"
	"slices"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// ContextLimits is implemented by Providers that know the models' context windows. With it, a
// turn whose input would not fit compacts the conversation before it first, and a call the
// provider refuses as too long compacts and is made again.
type ContextLimits interface {
	// Compaction says whether turns compact by themselves at all, and how many input tokens a
	// call to the model may carry (0: unknown, only a refusal compacts).
	Compaction(providerID, modelID string) (auto bool, usable int64)
}

// SummarizeInput is the body of POST /session/{id}/summarize.
type SummarizeInput = api.SummarizeInput

// compactions owns the compactions a client asks for (POST /session/{id}/summarize): the check,
// the stored request and its hand-over to the session's runner, which writes the summary as a turn
// (Service.runCompaction). A turn that compacts by itself stores its request here too.
type compactions struct {
	rows  sessionRows
	msgs  messageLog
	db    conversationStore
	ids   *id.Source
	agent *Agent
	runs  heldRunner
	// forget drops the kept history of a session whose messages a compaction removed.
	forget func(sessionID string)
}

// heldRunner is the run queue as a compaction uses it: hold the session's runner, then hand it the
// compaction's turn, or let it go.
type heldRunner interface {
	hold(sessionID string, waitRetiring bool) error
	release(sessionID string)
	runHeld(sessionID string, t *turn)
}

// compactJob marks a turn that summarises its session instead of answering a prompt.
type compactJob struct{}

// Summarize compacts a session, as OpenCode's /compact: a user message with a compaction part,
// answered by the model with a summary of the conversation before it (an assistant message with
// summary true). From then on the history sent to a model starts from that summary. It is refused
// with 409 while the session is busy, and returns once the summary is written.
func (c compactions) Summarize(ctx context.Context, sessionID string, in SummarizeInput) error {
	if in.ProviderID == "" || in.ModelID == "" {
		return errs.E(errs.Invalid, "providerID and modelID are both required")
	}
	if c.agent == nil {
		return errs.E(errs.Unavailable, "no agent is configured")
	}
	sess, err := c.rows.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	if _, ok := c.agent.Providers.Get(in.ProviderID); !ok {
		return errs.Named(errs.Invalid, "ProviderNotFoundError", "providerID: provider %q is not configured", in.ProviderID)
	}
	agentName, err := c.lastAgent(ctx, sess)
	if err != nil {
		return err
	}
	model := &MessageModel{ProviderID: in.ProviderID, ModelID: in.ModelID}

	// Hold the session's runner from the check on, so that no turn starts in between; prompts
	// that arrive meanwhile queue behind the compaction.
	if err := c.runs.hold(sessionID, false); err != nil {
		return err
	}

	user, part, sess, err := c.storeCompaction(ctx, sess, agentName, model, in.Auto, "", false)
	if err != nil {
		c.runs.release(sessionID)
		return err
	}
	c.rows.announce(sess)
	c.rows.publishMessage(sess.Directory, user)
	c.rows.publishPart(sess.Directory, part)

	t := &turn{ctx: context.WithoutCancel(ctx), user: user, input: PromptInput{Agent: agentName, Model: model},
		result: make(chan turnResult, 1), compact: &compactJob{}}
	c.runs.runHeld(sessionID, t)
	select {
	case res := <-t.result:
		return res.err
	case <-ctx.Done():
		return ctx.Err() // the compaction goes on and is visible on the stream
	}
}

// lastAgent is the agent of the session's last user message (the session's own, else build), the
// agent a compaction is stored under, as OpenCode picks it.
func (c compactions) lastAgent(ctx context.Context, sess Session) (string, error) {
	in := MessagesInput{Limit: 50}
	for {
		page, err := c.msgs.messages(ctx, sess.ID, in)
		if err != nil {
			return "", err
		}
		for i := len(page.Items) - 1; i >= 0; i-- {
			if m := page.Items[i].Info; m.Role == RoleUser && m.Agent != "" {
				return m.Agent, nil
			}
		}
		if page.NextCursor == "" {
			break
		}
		in.Before = page.NextCursor
	}
	if sess.Agent != "" {
		return sess.Agent, nil
	}
	return "build", nil
}

// storeCompaction stores the user message that asks for a compaction, and its compaction part,
// in one write with the session's touch (which makes a pending revert permanent, as a prompt does).
func (c compactions) storeCompaction(ctx context.Context, sess Session, agentName string, model *MessageModel, auto bool, tail string, overflow bool) (Message, Part, Session, error) {
	user := Message{ID: c.ids.New(id.Message), SessionID: sess.ID, Role: RoleUser, Agent: agentName,
		Time: MessageTime{Created: c.rows.nowMS()}, Model: model}
	part := Part{ID: c.ids.New(id.Part), SessionID: sess.ID, MessageID: user.ID, Type: "compaction", Auto: &auto, Overflow: overflow, TailStartID: tail}
	var touched Session
	var dropped removed
	err := c.db.Tx(ctx, func(q store.Tx) error {
		// A compaction after a revert makes it permanent first, as a prompt does.
		var err error
		if dropped, err = commitRevert(ctx, q, sess.ID); err != nil {
			return err
		}
		if err := putMessage(ctx, q, user); err != nil {
			return err
		}
		if err := putPart(ctx, q, part); err != nil {
			return err
		}
		touched, err = c.rows.change(ctx, q, sess.ID, func(x *Session) { x.Revert = nil })
		return err
	})
	if err != nil {
		return Message{}, Part{}, Session{}, saveFailed(err)
	}
	if len(dropped.messages)+len(dropped.parts) > 0 {
		c.forget(sess.ID)
		c.rows.announceRemoved(sess.Directory, sess.ID, dropped)
	}
	return user, part, touched, nil
}

// runCompaction is the turn of a compaction asked for through Summarize: the summary of
// everything before its user message.
func (s *Service) runCompaction(ctx context.Context, ag Agent, t *turn) (WithParts, error) {
	keep := context.WithoutCancel(ctx)
	user := t.user
	sess, err := s.Get(keep, user.SessionID)
	if err != nil {
		return WithParts{}, err
	}
	dir, sid := sess.Directory, sess.ID
	s.setStatus(dir, sid, Status{Type: "busy"})
	prov, _ := ag.Providers.Get(t.input.Model.ProviderID)
	conv, err := s.conversation(keep, sid, user.ID)
	if err != nil {
		return s.failTurn(ctx, dir, nil, nil, err, user)
	}
	msg, parts, _, err := s.summarizeStep(ctx, ag, prov, dir, user, t.input.Model, conv.msgs[:conv.at])
	if err != nil {
		return s.failTurn(ctx, dir, msg, parts, err, user)
	}
	s.publish(dir, api.EventSessionCompacted, api.SessionCompacted{SessionID: sid})
	cost := 0.0
	if msg.Cost != nil {
		cost = *msg.Cost
	}
	s.finishTurn(keep, dir, sid, user, map[string]fileChange{}, cost, *msg.Tokens)
	return WithParts{Info: *msg, Parts: parts}, nil
}

// autoCompact compacts the conversation before a turn's user message when the next model call
// would carry more than the model's usable input, or the model said it did not fit (overflow). It
// stores a compaction (auto, keeping the turn's own messages as they are), writes the summary and
// returns the turn's history from the summary on. When the summary cannot be written the turn goes
// on with the history it had; an abort is returned.
func (s *Service) autoCompact(ctx context.Context, ag Agent, prov provider.Provider, sess Session, t *turn, conv conversation, overflow bool) (conversation, Tokens, float64, error) {
	keep := context.WithoutCancel(ctx)
	dir := sess.Directory
	user, part, touched, err := s.storeCompaction(keep, sess, t.input.Agent, t.input.Model, true, t.user.ID, overflow)
	if err != nil {
		return conv, Tokens{}, 0, err
	}
	s.announce(touched)
	s.publishMessage(dir, user)
	s.publishPart(dir, part)
	msg, _, summary, err := s.summarizeStep(ctx, ag, prov, dir, user, t.input.Model, conv.msgs[:conv.at])
	if err != nil {
		if ctx.Err() != nil {
			s.markFailed(keep, dir, msg, abortedError())
			return conv, Tokens{}, 0, ctx.Err()
		}
		var save errSave
		if errors.As(err, &save) {
			return conv, Tokens{}, 0, err
		}
		s.log.Warn("auto compaction failed; the turn goes on with the whole history", "session", sess.ID, "err", err)
		s.markFailed(keep, dir, msg, providerError(err))
		return conv, Tokens{}, 0, nil
	}
	s.publish(dir, api.EventSessionCompacted, api.SessionCompacted{SessionID: sess.ID})
	next := []provider.Message{userMessage([]Part{part})}
	next = append(next, provider.Message{Role: provider.RoleAssistant, Text: summary})
	next = append(next, conv.msgs[conv.at:]...)
	cost := 0.0
	if msg.Cost != nil {
		cost = *msg.Cost
	}
	return conversation{msgs: next, at: 2, summarized: 2, cache: conv.cache}, *msg.Tokens, cost, nil
}

// summarizeStep asks the model for a summary of history, as the assistant message (summary true,
// agent and mode "compaction") that answers the compaction's user message parent.
func (s *Service) summarizeStep(ctx context.Context, ag Agent, prov provider.Provider, dir string, parent Message, model *MessageModel, history []provider.Message) (*Message, []Part, string, error) {
	keep := context.WithoutCancel(ctx)
	zero := 0.0
	msg := &Message{
		ID: s.ids.New(id.Message), SessionID: parent.SessionID, Role: RoleAssistant, ParentID: parent.ID,
		Agent: "compaction", Mode: "compaction", ModelID: model.ModelID, ProviderID: model.ProviderID,
		Path: &MessagePath{Cwd: dir, Root: Worktree(dir)}, Cost: &zero, Tokens: &Tokens{},
		Time: MessageTime{Created: s.nowMS()}, Summary: &MessageSummary{Compacted: true},
	}
	start := Part{ID: s.ids.New(id.Part), SessionID: msg.SessionID, MessageID: msg.ID, Type: "step-start"}
	err := s.db.Tx(keep, func(q store.Tx) error {
		if err := putMessage(keep, q, *msg); err != nil {
			return err
		}
		return putPart(keep, q, start)
	})
	if err != nil {
		return nil, nil, "", saveFailed(err)
	}
	s.publishMessage(dir, *msg)
	s.publishPart(dir, start)
	parts := []Part{start}

	st := s.newStep(dir, msg)
	msgs := append(slices.Clip(history), provider.Message{Role: provider.RoleUser, Text: provider.CompactionPrompt})
	req := provider.Request{Model: model.ModelID, System: []string{provider.CompactionSystem}, Messages: s.withAttachments(ag, model, dir, msgs)}
	callErr := st.call(ctx, ag, prov, req)
	text := st.text
	if err := st.closeStreams(keep); err != nil {
		return msg, parts, "", err
	}
	if text != nil {
		parts = append(parts, *text)
	}
	if callErr != nil {
		return msg, parts, "", callErr
	}
	if text == nil || *text.Text == "" {
		return msg, parts, "", errors.New("the model answered the compaction with no summary")
	}
	cost := ag.Providers.Cost(msg.ProviderID, msg.ModelID, st.usage)
	reason := st.reason
	if reason == "" {
		reason = provider.ReasonStop
	}
	if err := s.commitStep(keep, dir, msg, &parts, "", reason, cost, tokensOf(st.usage)); err != nil {
		return msg, parts, "", err
	}
	return msg, parts, *text.Text, nil
}

// markFailed records an error on an assistant message that did not finish, without ending its turn.
func (s *Service) markFailed(ctx context.Context, dir string, msg *Message, me *MessageError) {
	if msg == nil {
		return
	}
	msg.Error = me
	msg.Time.Completed = s.nowMS()
	if err := putMessage(ctx, s.db, *msg); err != nil {
		s.log.Error("store failed compaction", "session", msg.SessionID, "err", err)
		return
	}
	s.publishMessage(dir, *msg)
}
