package session

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
)

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
	if s.runner != nil {
		gate = fencedGate{Gate: gate, runner: s.runner}
	}
	// Live progress is announced at a bounded rate, the newest always; a command's output as deltas
	// (see liveOutput).
	var mu sync.Mutex
	var latest tool.Progress
	var live liveOutput
	changed := false      // the title or metadata changed since the last announcement
	var again *time.Timer // asks for the announcement that live.next held back
	var updates *coalescer
	updates = newCoalescer(s.updateEvery, func() {
		mu.Lock()
		defer mu.Unlock()
		if p.State.Status != "running" {
			return
		}
		delta, offset, whole, after := live.next(time.Now())
		if after > 0 && again == nil {
			again = time.AfterFunc(after, func() {
				updates.Add(func() { again = nil })
			})
		}
		st := *p.State
		st.Title, st.Metadata = latest.Title, latest.Metadata
		if live.on {
			st.Metadata = maps.Clone(latest.Metadata)
			st.Metadata["output"] = live.text
		}
		p.State = &st // what a failure keeps
		if delta != "" {
			s.publish(dir, api.EventPartDelta, api.PartDelta{SessionID: p.SessionID, MessageID: p.MessageID, PartID: p.ID,
				Field: api.FieldLiveOutput, Delta: delta, Offset: offset})
		}
		if whole || changed {
			changed = false
			s.publishPart(dir, p)
		}
		if live.on {
			s.live.setTool(p) // a listing shows what was announced
		}
	})
	defer s.live.removeTool(sess.ID, p.ID)
	progress := func(pr tool.Progress) {
		updates.Add(func() {
			if pr.Title != "" || pr.Metadata != nil {
				latest.Title, latest.Metadata, changed = pr.Title, pr.Metadata, true
				if _, ok := pr.Metadata["output"]; ok {
					live.on = true
				}
			}
			live.add(pr.Output, pr.Skipped)
		})
	}
	files := s.filesOf(sess.ID)
	terminals, _ := files.(tool.Terminals) // a client that serves files may run commands too
	res, err := tl.Run(ctx, &tool.Call{
		ID: call.ID, SessionID: sess.ID, MessageID: msg.ID, Agent: agent, Dir: dir, Input: input,
		Gate: gate, Progress: progress, Todos: s, Files: files, Terminals: terminals,
		ParentSessionID: parentID, RootSessionID: rootID,
	})
	updates.Close()
	updates.Do(func() {
		if again != nil {
			again.Stop()
		}
	})
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
