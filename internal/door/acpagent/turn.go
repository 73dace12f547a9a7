package acpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// drainLimit bounds how long a cancelled turn's last events are awaited after the abort.
const drainLimit = 30 * time.Second

// translator turns one session's events into session/update notifications for one turn (or one
// replay), and routes the session's approvals to the client while the turn runs.
type translator struct {
	a  *Agent
	as *acpSession

	roles    map[string]session.Role // messageID -> role
	parts    map[string]string       // partID -> part type
	sent     map[string]int          // partID -> bytes of text already sent
	tools    map[string]bool         // callID -> tool_call sent
	lastErr  *session.MessageError
	aborted  bool
	mu       sync.Mutex
	waiting  map[string]context.CancelFunc // permission ID -> withdraws the client's prompt
	approval sync.WaitGroup
}

func newTranslator(a *Agent, as *acpSession) *translator {
	return &translator{a: a, as: as, roles: map[string]session.Role{}, parts: map[string]string{}, sent: map[string]int{},
		tools: map[string]bool{}, waiting: map[string]context.CancelFunc{}}
}

type envelope struct {
	SessionID string `json:"sessionID"`
}

// turn sends the prompt and streams the turn until the session is idle again. When ctx is
// cancelled (session/cancel) it aborts the turn, streams what is left and answers "cancelled".
func (t *translator) turn(ctx context.Context, in api.PromptInput) (acp.StopReason, error) {
	sctx, stopStream := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStream()
	actx, stopApprovals := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		stopApprovals()
		t.approval.Wait()
	}()
	stream := t.as.c.Events(sctx)
	first, err := stream.Next(ctx)
	if err != nil {
		return "", fmt.Errorf("event stream: %w", err)
	}
	if first.Type != api.EventServerConnected {
		return "", fmt.Errorf("event stream: expected server.connected first, got %s", first.Type)
	}
	if err := t.as.c.PromptAsync(ctx, t.as.id, in); err != nil {
		return "", err
	}
	wait := ctx
	cancelled := false
	for {
		ev, err := stream.Next(wait)
		if err != nil {
			if !cancelled && ctx.Err() != nil {
				cancelled = true
				if err := t.as.c.Abort(sctx, t.as.id); err != nil {
					t.a.log.Error("acp: abort", "session", t.as.id, "err", err)
				}
				var cancelDrain context.CancelFunc
				wait, cancelDrain = context.WithTimeout(sctx, drainLimit)
				defer cancelDrain()
				continue
			}
			if cancelled {
				return acp.StopReasonCancelled, nil
			}
			return "", err
		}
		if t.handle(ctx, actx, ev) {
			break
		}
	}
	switch {
	case cancelled || t.aborted:
		return acp.StopReasonCancelled, nil
	case t.lastErr != nil:
		msg := t.lastErr.Name
		if m, ok := t.lastErr.Data["message"].(string); ok && m != "" {
			msg += ": " + m
		}
		if strings.Contains(strings.ToLower(msg), "length") || strings.Contains(msg, "MaxTokens") {
			return acp.StopReasonMaxTokens, nil
		}
		t.update(ctx, acp.UpdateAgentMessageText("\n\n"+msg))
	}
	return acp.StopReasonEndTurn, nil
}

// handle translates one event; it reports whether the turn is over.
func (t *translator) handle(ctx, actx context.Context, ev client.Event) bool {
	var env envelope
	if json.Unmarshal(ev.Properties, &env) != nil {
		return false
	}
	switch ev.Type {
	case api.EventMessageUpdated:
		var p api.MessageUpdated
		if json.Unmarshal(ev.Properties, &p) == nil && p.Info.SessionID == t.as.id {
			t.roles[p.Info.ID] = p.Info.Role
			if p.Info.Role == "assistant" && p.Info.Error != nil {
				if p.Info.Error.Name == "MessageAbortedError" {
					t.aborted = true
				} else {
					t.lastErr = p.Info.Error
				}
			}
		}
	case api.EventPartUpdated:
		var p api.PartUpdated
		if json.Unmarshal(ev.Properties, &p) == nil && p.Part.SessionID == t.as.id {
			t.part(ctx, p.Part)
		}
	case api.EventPartDelta:
		var d api.PartDelta
		if json.Unmarshal(ev.Properties, &d) != nil || d.SessionID != t.as.id || d.Field != "text" || t.roles[d.MessageID] == "user" {
			return false
		}
		t.chunk(ctx, d.PartID, t.parts[d.PartID], d.Delta)
		t.sent[d.PartID] += len(d.Delta)
	case api.EventTodoUpdated:
		var p api.TodoUpdated
		if json.Unmarshal(ev.Properties, &p) == nil && p.SessionID == t.as.id {
			t.update(ctx, acp.SessionUpdate{Plan: &acp.SessionUpdatePlan{SessionUpdate: "plan", Entries: planOf(p.Todos)}})
		}
	case api.EventPermissionAsked:
		var r api.PermissionRequest
		// A subagent's request (its parent or root is this session) is asked here too.
		if json.Unmarshal(ev.Properties, &r) == nil && (r.SessionID == t.as.id || r.ParentSessionID == t.as.id || r.RootSessionID == t.as.id) {
			t.ask(actx, r)
		}
	case api.EventQuestionAsked:
		var q api.QuestionRequest
		if json.Unmarshal(ev.Properties, &q) == nil && (q.SessionID == t.as.id || q.ParentSessionID == t.as.id || q.RootSessionID == t.as.id) {
			t.askQuestion(actx, q)
		}
	case api.EventElicitationAsked:
		var e api.Elicitation
		if json.Unmarshal(ev.Properties, &e) == nil && (e.SessionID == t.as.id || e.ParentSessionID == t.as.id || e.RootSessionID == t.as.id) {
			t.askElicitation(actx, e)
		}
	case api.EventPermissionReplied, api.EventQuestionReplied, api.EventQuestionRejected, api.EventElicitationReplied:
		var r struct {
			RequestID string `json:"requestID"`
			ID        string `json:"id"` // mcp.elicitation.replied
		}
		if json.Unmarshal(ev.Properties, &r) == nil {
			if r.RequestID == "" {
				r.RequestID = r.ID
			}
			t.withdraw(r.RequestID)
		}
	case api.EventSessionError:
		var p api.SessionError
		if json.Unmarshal(ev.Properties, &p) == nil && p.SessionID == t.as.id && p.Error != nil && p.Error.Name != "MessageAbortedError" {
			t.lastErr = p.Error
		}
	case api.EventSessionIdle:
		return env.SessionID == t.as.id
	}
	return false
}

// chunk sends streamed text as a message or a thought.
func (t *translator) chunk(ctx context.Context, partID, typ, text string) {
	if text == "" {
		return
	}
	if typ == "reasoning" {
		t.update(ctx, acp.UpdateAgentThoughtText(text))
		return
	}
	t.update(ctx, acp.UpdateAgentMessageText(text))
}

// part handles a part's new state: the text not streamed yet, or a tool call's progress.
func (t *translator) part(ctx context.Context, p session.Part) {
	t.parts[p.ID] = p.Type
	switch p.Type {
	case "text", "reasoning":
		if t.roles[p.MessageID] == "user" || p.Text == nil || p.Synthetic {
			return
		}
		if n := t.sent[p.ID]; len(*p.Text) > n && strings.HasPrefix(*p.Text, (*p.Text)[:n]) {
			t.chunk(ctx, p.ID, p.Type, (*p.Text)[n:])
			t.sent[p.ID] = len(*p.Text)
		}
	case "tool":
		if p.State == nil {
			return
		}
		v := toolView(p, t.as.dir)
		if !t.tools[p.CallID] {
			t.tools[p.CallID] = true
			t.update(ctx, acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: acp.ToolCallId(p.CallID),
				Title: v.title, Kind: v.kind, Status: v.status, Locations: v.locations, Content: v.content, RawInput: v.input, RawOutput: v.output}})
			return
		}
		t.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: acp.ToolCallId(p.CallID),
			Title: &v.title, Kind: &v.kind, Status: &v.status, Locations: v.locations, Content: v.content, RawOutput: v.output}})
	}
}

// update sends one session/update; a client that went away ends the turn's stream on its own.
func (t *translator) update(ctx context.Context, u acp.SessionUpdate) {
	if err := t.a.conn.SessionUpdate(context.WithoutCancel(ctx), acp.SessionNotification{SessionId: acp.SessionId(t.as.id), Update: u}); err != nil {
		t.a.log.Debug("acp: session/update", "session", t.as.id, "err", err)
	}
}

// replay sends a stored history as the updates a live turn would have sent.
func (t *translator) replay(ctx context.Context, msgs []session.WithParts) error {
	for _, m := range msgs {
		t.roles[m.Info.ID] = m.Info.Role
		for _, p := range m.Parts {
			if m.Info.Role == "user" {
				if p.Type == "text" && p.Text != nil && !p.Synthetic {
					t.update(ctx, acp.UpdateUserMessageText(*p.Text))
				}
				continue
			}
			t.part(ctx, p)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// view is a tool part as ACP shows it.
type view struct {
	title     string
	kind      acp.ToolKind
	status    acp.ToolCallStatus
	locations []acp.ToolCallLocation
	content   []acp.ToolCallContent
	input     any
	output    any
}

// kindOf is the ACP kind of a tandem tool.
func kindOf(name string) acp.ToolKind {
	switch name {
	case "bash":
		return acp.ToolKindExecute
	case "read":
		return acp.ToolKindRead
	case "write", "edit", "patch", "apply_patch", "multiedit":
		return acp.ToolKindEdit
	case "glob", "grep", "list", "codesearch":
		return acp.ToolKindSearch
	case "webfetch", "websearch":
		return acp.ToolKindFetch
	case "todowrite", "todoread":
		return acp.ToolKindThink
	}
	return acp.ToolKindOther
}

// pathIn is an input's file path made absolute in dir.
func pathIn(dir string, input map[string]any) string {
	for _, k := range []string{"filePath", "path"} {
		if s, ok := input[k].(string); ok && s != "" {
			if !filepath.IsAbs(s) {
				s = filepath.Join(dir, s)
			}
			return filepath.Clean(s)
		}
	}
	return ""
}

func toolView(p session.Part, dir string) view {
	st := p.State
	var input map[string]any
	_ = json.Unmarshal(st.Input, &input) // a tool still streaming its input has none yet
	v := view{kind: kindOf(p.Tool), title: st.Title}
	if input != nil {
		v.input = input
	}
	switch st.Status {
	case "pending":
		v.status = acp.ToolCallStatusPending
	case "running":
		v.status = acp.ToolCallStatusInProgress
	case "completed":
		v.status = acp.ToolCallStatusCompleted
	default:
		v.status = acp.ToolCallStatusFailed
	}
	cmd, _ := input["command"].(string)
	path := pathIn(dir, input)
	if v.title == "" {
		switch {
		case cmd != "":
			v.title = cmd
		case path != "":
			v.title = p.Tool + " " + path
		default:
			v.title = p.Tool
		}
	}
	if path != "" {
		v.locations = []acp.ToolCallLocation{{Path: path}}
	}
	if fd, ok := st.Metadata["filediff"].(map[string]any); ok {
		file, _ := fd["file"].(string)
		before, _ := fd["before"].(string)
		after, _ := fd["after"].(string)
		if file != "" {
			v.content = append(v.content, acp.ToolDiffContent(file, after, before))
			v.locations = []acp.ToolCallLocation{{Path: file}}
		}
	}
	if id, ok := st.Metadata["terminalId"].(string); ok && id != "" {
		// The editor runs the command and shows it live: its terminal is the content.
		v.content = []acp.ToolCallContent{acp.ToolTerminalRef(id)}
		if st.Status == "completed" && st.Output != nil {
			v.output = map[string]any{"output": *st.Output, "metadata": st.Metadata}
		}
		return v
	}
	switch {
	case st.Status == "completed" && st.Output != nil:
		v.output = map[string]any{"output": *st.Output, "metadata": st.Metadata}
		if v.kind != acp.ToolKindEdit || len(v.content) == 0 {
			text := *st.Output
			if cmd != "" {
				text = "```\n" + strings.TrimRight(text, "\n") + "\n```"
			}
			v.content = append(v.content, acp.ToolContent(acp.TextBlock(text)))
		}
	case st.Status == "error":
		v.output = map[string]any{"error": st.Error}
		v.content = append(v.content, acp.ToolContent(acp.TextBlock(st.Error)))
	}
	return v
}

// planOf is a todo list as an ACP plan; cancelled items are left out (ACP has no such status).
func planOf(todos []tool.Todo) []acp.PlanEntry {
	out := []acp.PlanEntry{}
	for _, td := range todos {
		e := acp.PlanEntry{Content: td.Content, Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusPending}
		switch td.Priority {
		case "high":
			e.Priority = acp.PlanEntryPriorityHigh
		case "low":
			e.Priority = acp.PlanEntryPriorityLow
		}
		switch td.Status {
		case "in_progress":
			e.Status = acp.PlanEntryStatusInProgress
		case "completed":
			e.Status = acp.PlanEntryStatusCompleted
		case "cancelled":
			continue
		}
		out = append(out, e)
	}
	return out
}

// errNotOffered is a selected option that is not one of the request's decisions.
var errNotOffered = errors.New("the client chose an option that was not offered")
