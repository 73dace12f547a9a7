package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// parentAgentKey is the child session's metadata entry naming the agent its parent ran when it
// started the child: the rules the child inherits are that agent's.
const parentAgentKey = "parentAgent"

// maxLineage bounds how far up a session's parents are read.
const maxLineage = 16

// task is OpenCode's task tool: it runs a subagent in a child session of the caller's (parentID
// set, so GET /session/{id}/children and OpenCode's clients show it) and returns the subagent's
// final answer. The child may do only what its parent may (see lineage); its requests wait in the
// same lists as every other, naming the parent; aborting the parent aborts it.
type task struct {
	s    *Service
	ag   Agent
	subs []agent
}

// taskTool returns the task tool for a turn of def, or nil when def may not start subagents (a
// subagent itself, an agent without the tool, a prompt that switched it off).
func (s *Service) taskTool(ag Agent, def agent, switched map[string]bool) tool.Tool {
	if enabled, listed := switched["task"]; (listed && !enabled) || !def.offers("task") {
		return nil
	}
	subs := subagents(ag)
	if len(subs) == 0 {
		return nil
	}
	return &task{s: s, ag: ag, subs: subs}
}

type taskInput struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type"`
}

func (*task) Name() string { return "task" }

func (t *task) Description() string {
	var b strings.Builder
	b.WriteString(`Starts a subagent to do one task on its own, in a session of its own, and returns its final answer.

Use it for searches and research that would take many steps, or for work that can be described completely in one prompt. The subagent sees none of this conversation: the prompt must say everything it needs, and what it should report back. Its answer is not shown to the user; summarise it.

The subagents:
`)
	for _, a := range t.subs {
		fmt.Fprintf(&b, "- %s: %s\n", a.info.Name, a.info.Description)
	}
	return b.String()
}

func (*task) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "description": {"type": "string", "description": "A short (3-5 words) description of the task"},
    "prompt": {"type": "string", "description": "The task for the agent to perform"},
    "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"}
  },
  "required": ["description", "prompt", "subagent_type"],
  "additionalProperties": false
}`)
}

func (t *task) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in taskInput
	if err := json.Unmarshal(inputOrEmpty(call.Input), &in); err != nil {
		return tool.Result{}, errs.E(errs.Invalid, "The task tool was called with invalid arguments: %v.", err)
	}
	in.Description, in.Prompt, in.SubagentType = strings.TrimSpace(in.Description), strings.TrimSpace(in.Prompt), strings.TrimSpace(in.SubagentType)
	switch {
	case in.Prompt == "":
		return tool.Result{}, errs.E(errs.Invalid, "The task tool needs a prompt: the whole task, for an agent that has not seen this conversation.")
	case in.SubagentType == "":
		return tool.Result{}, errs.E(errs.Invalid, "The task tool needs a subagent_type: one of %s.", t.names())
	}
	if in.Description == "" {
		in.Description = in.SubagentType + " task"
	}
	var def *agent
	for i := range t.subs {
		if t.subs[i].info.Name == in.SubagentType {
			def = &t.subs[i]
		}
	}
	if def == nil {
		return tool.Result{}, errs.E(errs.Invalid, "Unknown agent type: %s is not a valid agent type; use one of %s.", in.SubagentType, t.names())
	}
	if err := call.Gate.Check(ctx, tool.Ask{Permission: "task", Patterns: []string{in.SubagentType}, Always: []string{in.SubagentType},
		Metadata: map[string]any{"description": in.Description, "subagent_type": in.SubagentType}}); err != nil {
		return tool.Result{}, err
	}
	s := t.s
	keep := context.WithoutCancel(ctx) // what the child's session and turn store must land even after an abort
	parent, err := s.Get(keep, call.SessionID)
	if err != nil {
		return tool.Result{}, err
	}
	model := def.model
	if model == nil {
		// The parent's step names the model the parent runs on; the child runs on it too.
		msg, err := s.Message(keep, call.SessionID, call.MessageID)
		if err != nil {
			return tool.Result{}, err
		}
		model = &MessageModel{ProviderID: msg.Info.ProviderID, ModelID: msg.Info.ModelID}
	}
	child, err := s.Create(keep, parent.Directory, CreateInput{ParentID: parent.ID,
		Title: fmt.Sprintf("%s (@%s subagent)", in.Description, in.SubagentType), Agent: in.SubagentType,
		Metadata: map[string]any{parentAgentKey: call.Agent}})
	if err != nil {
		return tool.Result{}, err
	}
	meta := map[string]any{"sessionId": child.ID, "model": map[string]any{"providerID": model.ProviderID, "modelID": model.ModelID}}
	if call.Progress != nil {
		call.Progress(tool.Progress{Title: in.Description, Metadata: meta})
	}
	turn, err := s.enqueue(keep, child.ID, PromptInput{Agent: in.SubagentType, Model: model, Parts: []PartInput{{Type: "text", Text: in.Prompt}}})
	if err != nil {
		return tool.Result{}, err
	}
	// The parent's turn waits in this call for the child's, holding nothing but this wait: no
	// transaction, no goroutine of its own. An abort of the parent aborts the child.
	var r turnResult
	select {
	case r = <-turn.result:
	case <-ctx.Done():
		var cause error
		if pending.ServerStopping(ctx) {
			cause = pending.ErrServerStopping // the child is left as a crash leaves a turn, to resume
		}
		s.abortAndWait(child.ID, cause)
		<-turn.result
		return tool.Result{}, ctx.Err()
	}
	if r.err != nil {
		return tool.Result{}, fmt.Errorf("the %s subagent failed: %w", in.SubagentType, r.err)
	}
	if e := r.reply.Info.Error; e != nil {
		return tool.Result{}, fmt.Errorf("the %s subagent failed: %s", in.SubagentType, messageErrorText(e))
	}
	answer := finalText(r.reply)
	return tool.Result{
		Title:    in.Description,
		Output:   fmt.Sprintf("task_id: %s (the subagent's session)\n\n<task_result>\n%s\n</task_result>", child.ID, answer),
		Metadata: meta,
	}, nil
}

func (t *task) names() string {
	names := make([]string, 0, len(t.subs))
	for _, a := range t.subs {
		names = append(names, a.info.Name)
	}
	return strings.Join(names, ", ")
}

// finalText is the text a turn ended with: the text parts of its last message.
func finalText(reply WithParts) string {
	var texts []string
	for _, p := range reply.Parts {
		if p.Type == "text" && p.Text != nil && !p.Synthetic {
			texts = append(texts, *p.Text)
		}
	}
	if len(texts) == 0 {
		return "(the subagent ended without an answer)"
	}
	return strings.TrimSpace(strings.Join(texts, "\n"))
}

func messageErrorText(e *MessageError) string {
	if m, ok := e.Data["message"].(string); ok && m != "" {
		return m
	}
	return e.Name
}

// lineage reads what a subagent's session inherits: for each session above it, its parent's
// first, the rules that session's calls are judged by (the agent it ran when it started the one
// below, and its client's session rules); and the parent's and the root's IDs, which its requests
// carry. A parent that cannot be read is an error: without its rules, nothing may run.
func (s *Service) lineage(ctx context.Context, ag Agent, sess Session) (within []permission.Layer, parentID, rootID string, err error) {
	cur := sess
	for cur.ParentID != "" {
		if len(within) == maxLineage {
			return nil, "", "", errors.New("the session's parents go deeper than tandem follows")
		}
		parent, err := s.Get(ctx, cur.ParentID)
		if err != nil {
			return nil, "", "", err
		}
		name, _ := cur.Metadata[parentAgentKey].(string)
		if name == "" {
			name = parent.Agent
		}
		layer := permission.Layer{Session: parent.Permission}
		if def, ok := findAgent(ag, name); ok {
			layer.Rules = def.info.Permission
		}
		within = append(within, layer)
		if parentID == "" {
			parentID = parent.ID
		}
		rootID = parent.ID
		cur = parent
	}
	return within, parentID, rootID, nil
}
