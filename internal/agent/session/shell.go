package session

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// shellNote is the synthetic text of the user message a shell command is stored under, as OpenCode
// words it: the model reads it before the command and its output in later turns.
const shellNote = "The following tool was executed by the user"

// ShellInput is the body of POST /session/{id}/shell: a command the user runs themselves (the
// TUI's "!ls").
type ShellInput struct {
	MessageID string        `json:"messageID,omitempty"`
	Agent     string        `json:"agent" description:"build or plan; without it the session's agent, else build."`
	Model     *MessageModel `json:"model,omitempty"`
	Command   string        `json:"command" required:"true"`
}

// Validate checks a shell request before anything is stored.
func (in *ShellInput) Validate() error {
	if strings.TrimSpace(in.Command) == "" {
		return errs.E(errs.Invalid, "command: required")
	}
	if in.MessageID != "" && !id.Valid(id.Message, in.MessageID) {
		return errs.E(errs.Invalid, "messageID: malformed message ID %q", in.MessageID)
	}
	if in.Model != nil && (in.Model.ProviderID == "" || in.Model.ModelID == "") {
		return errs.E(errs.Invalid, "model: providerID and modelID are both required")
	}
	return nil
}

// Shell runs a command the user typed, as OpenCode stores it: a user message with a synthetic
// note, and an assistant message holding one bash tool part that streams like any tool call. The
// user typed the command, so no permission is asked. The session is busy while it runs (a shell
// request while busy is refused with SessionBusyError, prompts sent meanwhile queue behind it) and
// POST /session/{id}/abort kills its process group. It returns the assistant message.
func (s *Service) Shell(ctx context.Context, sessionID string, in ShellInput) (WithParts, error) {
	if err := in.Validate(); err != nil {
		return WithParts{}, err
	}
	if s.agent == nil {
		return WithParts{}, errs.E(errs.Unavailable, "no agent is configured")
	}
	sess, err := s.Get(ctx, sessionID)
	if err != nil {
		return WithParts{}, err
	}
	agentName, model, err := resolveAgent(*s.agent, sess, in.Agent, in.Model)
	if err != nil {
		return WithParts{}, err
	}
	in.Agent, in.Model = agentName, model
	t := &turn{ctx: context.WithoutCancel(ctx), input: PromptInput{Agent: agentName, Model: model}, shell: &in,
		result: make(chan turnResult, 1)}
	if err := s.runs.scheduleIdle(sessionID, t); err != nil {
		return WithParts{}, err
	}
	select {
	case r := <-t.result:
		return r.reply, r.err
	case <-ctx.Done():
		// The client went away; the command goes on (abort stops it) and is visible on the stream.
		return WithParts{}, ctx.Err()
	}
}

// runShell is the turn of a shell request: it stores both messages in one write, runs the bash
// tool through the same path as the model's calls (runToolAs), and completes the assistant message.
func (s *Service) runShell(ctx context.Context, ag Agent, sessionID string, t *turn) (WithParts, error) {
	keep := context.WithoutCancel(ctx)
	in := t.shell
	sess, err := s.Get(keep, sessionID)
	if err != nil {
		return WithParts{}, err
	}
	dir, sid := sess.Directory, sess.ID
	s.setStatus(dir, sid, Status{Type: "busy"})
	now := s.nowMS()
	user := Message{ID: in.MessageID, SessionID: sid, Role: RoleUser, Agent: in.Agent, Model: in.Model, Time: MessageTime{Created: now}}
	if user.ID == "" {
		user.ID = s.ids.New(id.Message)
	}
	note := shellNote
	notePart := Part{ID: s.ids.New(id.Part), SessionID: sid, MessageID: user.ID, Type: "text", Text: &note, Synthetic: true}
	zero := 0.0
	msg := &Message{
		ID: s.ids.New(id.Message), SessionID: sid, Role: RoleAssistant, ParentID: user.ID,
		Agent: in.Agent, Mode: in.Agent, ModelID: in.Model.ModelID, ProviderID: in.Model.ProviderID,
		Path: &MessagePath{Cwd: dir, Root: Worktree(dir)}, Cost: &zero, Tokens: &Tokens{},
		Time: MessageTime{Created: s.nowMS()},
	}
	var touched Session
	var dropped removed
	err = s.db.Tx(keep, func(q store.Tx) error {
		// A command after a revert makes it permanent, as a prompt does.
		var err error
		if dropped, err = commitRevert(keep, q, sid); err != nil {
			return err
		}
		if err := putMessage(keep, q, user); err != nil {
			return err
		}
		if err := putPart(keep, q, notePart); err != nil {
			return err
		}
		if err := putMessage(keep, q, *msg); err != nil {
			return err
		}
		touched, err = s.change(keep, q, sid, func(x *Session) { x.Revert = nil })
		return err
	})
	if err != nil {
		return s.failTurn(ctx, dir, nil, nil, saveFailed(err), user)
	}
	if len(dropped.messages)+len(dropped.parts) > 0 {
		s.histories.drop(sid)
		s.announceRemoved(dir, sid, dropped)
	}
	s.publishMessage(dir, user)
	s.publishPart(dir, notePart)
	s.announce(touched)
	s.publishMessage(dir, *msg)

	var bash tool.Tool
	if ag.Tools != nil {
		for _, tl := range ag.Tools() {
			if tl.Name() == "bash" {
				bash = tl
			}
		}
	}
	byName := map[string]tool.Tool{}
	if bash != nil {
		byName["bash"] = bash
	}
	input, err := json.Marshal(map[string]string{"command": in.Command})
	if err != nil {
		return s.failTurn(ctx, dir, msg, nil, err, user)
	}
	// The user typed the command: no permission is asked, so the call runs without a gate.
	asUser := ag
	asUser.Permissions = nil
	call := provider.ToolCall{ID: s.ids.New(id.Call), Name: "bash", Input: input}
	p, _, err := s.runToolAs(ctx, asUser, sess, msg, byName, call, in.Agent, nil)
	parts := []Part{p}
	if err != nil {
		return s.failTurn(ctx, dir, msg, parts, err, user)
	}
	if ctx.Err() != nil {
		return s.failTurn(ctx, dir, msg, parts, ctx.Err(), user)
	}
	msg.Time.Completed = s.nowMS()
	if err := putMessage(keep, s.db, *msg); err != nil {
		msg.Time.Completed = 0
		return s.failTurn(ctx, dir, msg, parts, saveFailed(err), user)
	}
	s.publishMessage(dir, *msg)
	s.finishTurn(keep, dir, sid, user, map[string]fileChange{}, 0, Tokens{})
	return WithParts{Info: *msg, Parts: parts}, nil
}
