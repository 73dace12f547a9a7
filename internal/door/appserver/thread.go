package appserver

import (
	"github.com/tandem-dev/tandem/api"

	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// thread is a tandem session loaded on this connection: its events become the Codex item stream,
// whoever prompted (this client, the web UI, curl), and its pending requests the client's approvals.
type thread struct {
	s      *server
	id     string // the session's
	tid    string // the Codex thread ID
	dir    string
	c      *client.Client // scoped to dir
	mcp    []string       // the MCP servers' names, longest first (guarded by mu once reading)
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	model     *session.MessageModel
	cur       *turnState
	roles     map[string]session.Role
	userTexts map[string][]string
	items     map[string]*itemState // part ID (texts) or call ID (tools)
	tools     map[string]string     // call ID -> tool name
	calls     map[string]string     // a tool's part ID -> its call ID
	declined  map[string]bool       // call IDs a person refused
	reqs      map[string]*outstanding
	counted   map[string]bool // assistant messages whose tokens are in total
	total     usage
	window    any // the model's context window (tokens), nil when unknown
}

// turnState is the turn running now.
type turnState struct {
	id          string // the prompt's message ID
	started     time.Time
	interrupted bool
	err         map[string]any
}

// itemState is one item of the running turn.
type itemState struct {
	kind    string
	started bool
	done    bool
	text    string // what was streamed of a text or reasoning part
	output  string // what was sent of a command's output
	item    map[string]any
}

type usage struct{ input, cached, output, reasoning int64 }

// open loads a session on this connection and starts reading its events; a session already open
// is returned as it is.
func (s *server) open(ctx context.Context, sess session.Session, c *client.Client) (*thread, error) {
	tid := s.threadID(sess.ID)
	s.mu.Lock()
	if t, ok := s.threads[tid]; ok {
		s.mu.Unlock()
		return t, nil
	}
	s.mu.Unlock()
	t := &thread{s: s, id: sess.ID, tid: tid, dir: sess.Directory, c: c, mcp: s.mcpNames(ctx), done: make(chan struct{}),
		roles: map[string]session.Role{}, userTexts: map[string][]string{}, items: map[string]*itemState{},
		tools: map[string]string{}, calls: map[string]string{}, declined: map[string]bool{}, reqs: map[string]*outstanding{}, counted: map[string]bool{}}
	if sess.Model != nil {
		t.model = &session.MessageModel{ProviderID: sess.Model.ProviderID, ModelID: sess.Model.ID}
	}
	sctx, cancel := context.WithCancel(s.ctx)
	t.cancel = cancel
	stream := c.Events(sctx)
	first, err := stream.Next(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("event stream: %w", err)
	}
	if first.Type != "server.connected" {
		cancel()
		return nil, fmt.Errorf("event stream: expected server.connected first, got %s", first.Type)
	}
	s.mu.Lock()
	if old, ok := s.threads[tid]; ok { // opened meanwhile
		s.mu.Unlock()
		cancel()
		return old, nil
	}
	s.threads[tid] = t
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(t.done)
		for {
			ev, err := stream.Next(sctx)
			if err != nil {
				return
			}
			t.handle(sctx, ev)
		}
	}()
	return t, nil
}

// stop ends the thread's event reader.
func (t *thread) stop() {
	t.cancel()
	<-t.done
}

// status is the thread's Codex status: active while a turn runs (waiting on a person while one of
// its requests is pending), else idle.
func (t *thread) status() any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.statusLocked()
}

func (t *thread) statusLocked() any {
	if t.cur == nil {
		return map[string]any{"type": "idle"}
	}
	flags := []string{}
	approval, input := false, false
	for _, r := range t.reqs {
		if r.kind == "question" {
			input = true
		} else {
			approval = true
		}
	}
	if approval {
		flags = append(flags, "waitingOnApproval")
	}
	if input {
		flags = append(flags, "waitingOnUserInput")
	}
	return map[string]any{"type": "active", "activeFlags": flags}
}

func (t *thread) currentModel() *session.MessageModel {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.model
}

// learnModel takes the model of the last prompt of a stored history.
func (t *thread) learnModel(msgs []session.WithParts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		if m.Info.Role == session.RoleUser && m.Info.Model != nil {
			t.model = m.Info.Model
		}
	}
}

func (t *thread) notify(ctx context.Context, method string, params map[string]any) {
	params["threadId"] = t.tid
	t.s.p.notify(ctx, method, params)
}

func (t *thread) turnID() string {
	if t.cur == nil {
		return ""
	}
	return t.cur.id
}

// beginLocked opens a turn for the prompt msgID and tells the client, with the prompt as its first
// item.
func (t *thread) beginLocked(ctx context.Context, msgID string, texts []string) {
	t.cur = &turnState{id: msgID, started: time.Now()}
	clear(t.items)
	t.notify(ctx, "thread/status/changed", map[string]any{"status": t.statusLocked()})
	t.notify(ctx, "turn/started", map[string]any{"turn": turnObject(t.cur, "inProgress")})
	now := time.Now().UnixMilli()
	item := userItem(msgID, texts)
	t.notify(ctx, "item/started", map[string]any{"item": item, "turnId": msgID, "startedAtMs": now})
	t.notify(ctx, "item/completed", map[string]any{"item": item, "turnId": msgID, "completedAtMs": now})
}

func turnObject(ts *turnState, status string) map[string]any {
	out := map[string]any{"id": ts.id, "items": []any{}, "itemsView": "notLoaded", "status": status, "error": nil,
		"startedAt": ts.started.Unix(), "completedAt": nil, "durationMs": nil}
	if status != "inProgress" {
		out["completedAt"] = time.Now().Unix()
		out["durationMs"] = time.Since(ts.started).Milliseconds()
		if ts.err != nil {
			out["error"] = ts.err
		}
	}
	return out
}

// finishLocked ends the running turn: its open items complete, its requests nobody answered are
// resolved (an interrupted turn's approvals are withdrawn), then turn/completed.
func (t *thread) finishLocked(ctx context.Context) {
	ts := t.cur
	if ts == nil {
		return
	}
	for key, it := range t.items {
		if it.started && !it.done {
			t.completeLocked(ctx, key, it)
		}
	}
	for id, r := range t.reqs {
		t.resolveLocked(ctx, id, r)
	}
	status := "completed"
	switch {
	case ts.interrupted:
		status = "interrupted"
	case ts.err != nil:
		status = "failed"
		t.notify(ctx, "error", map[string]any{"error": ts.err, "willRetry": false, "turnId": ts.id})
	}
	t.cur = nil
	t.notify(ctx, "thread/status/changed", map[string]any{"status": t.statusLocked()})
	t.notify(ctx, "turn/completed", map[string]any{"turn": turnObject(ts, status)})
}

func (t *thread) startItemLocked(ctx context.Context, key string, it *itemState) {
	if it.started || t.cur == nil {
		return
	}
	it.started = true
	t.notify(ctx, "item/started", map[string]any{"item": it.item, "turnId": t.cur.id, "startedAtMs": time.Now().UnixMilli()})
}

func (t *thread) completeLocked(ctx context.Context, key string, it *itemState) {
	if it.done || t.cur == nil {
		return
	}
	t.startItemLocked(ctx, key, it)
	it.done = true
	if it.kind == kindAgent {
		it.item["text"] = it.text
	}
	if it.kind == kindReason {
		it.item["content"] = []any{it.text}
	}
	if s, _ := it.item["status"].(string); s == "inProgress" {
		it.item["status"] = "failed"
		if t.cur.interrupted {
			it.item["status"] = "declined"
			if it.kind == kindTool {
				it.item["status"] = "failed"
			}
		}
	}
	t.notify(ctx, "item/completed", map[string]any{"item": it.item, "turnId": t.cur.id, "completedAtMs": time.Now().UnixMilli()})
}

// handle translates one event of the session.
func (t *thread) handle(ctx context.Context, ev client.Event) {
	var env struct {
		SessionID string `json:"sessionID"`
	}
	_ = json.Unmarshal(ev.Properties, &env)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Type {
	case "message.updated":
		var p struct {
			Info session.Message `json:"info"`
		}
		if json.Unmarshal(ev.Properties, &p) != nil || p.Info.SessionID != t.id {
			return
		}
		t.message(ctx, p.Info)
	case "message.part.updated":
		var p struct {
			Part session.Part `json:"part"`
		}
		if json.Unmarshal(ev.Properties, &p) != nil || p.Part.SessionID != t.id {
			return
		}
		t.part(ctx, p.Part)
	case "message.part.delta":
		var d struct {
			SessionID string `json:"sessionID"`
			MessageID string `json:"messageID"`
			PartID    string `json:"partID"`
			Field     string `json:"field"`
			Delta     string `json:"delta"`
			Offset    int    `json:"offset"`
		}
		if json.Unmarshal(ev.Properties, &d) != nil || d.SessionID != t.id || t.roles[d.MessageID] != session.RoleAssistant {
			return
		}
		switch d.Field {
		case "text":
			if it := t.items[d.PartID]; it != nil && !it.done {
				t.textDelta(ctx, d.PartID, it, d.Delta)
			}
		case api.FieldLiveOutput:
			call := t.calls[d.PartID]
			if it := t.items[call]; it != nil && it.started && !it.done && it.kind == kindCommand && d.Offset == utf16Units(it.output) {
				t.outputDelta(ctx, call, it, d.Delta)
			}
		}
	case "todo.updated":
		var p struct {
			SessionID string `json:"sessionID"`
			Todos     []struct {
				Content string `json:"content"`
				Status  string `json:"status"`
			} `json:"todos"`
		}
		if json.Unmarshal(ev.Properties, &p) == nil && p.SessionID == t.id && t.cur != nil {
			t.notify(ctx, "turn/plan/updated", map[string]any{"turnId": t.cur.id, "explanation": nil, "plan": planOf(p.Todos)})
		}
	case "permission.asked":
		var r api.PermissionRequest
		// A subagent's request (its parent or root is this thread's session) is asked here too.
		if json.Unmarshal(ev.Properties, &r) == nil && (r.SessionID == t.id || r.ParentSessionID == t.id || r.RootSessionID == t.id) {
			t.askPermission(ctx, r)
		}
	case "question.asked":
		var q question.Request
		if json.Unmarshal(ev.Properties, &q) == nil && (q.SessionID == t.id || q.ParentSessionID == t.id || q.RootSessionID == t.id) {
			t.askQuestion(ctx, q)
		}
	case "mcp.elicitation.asked":
		var e client.Elicitation
		if json.Unmarshal(ev.Properties, &e) == nil && (e.SessionID == t.id || e.ParentSessionID == t.id || e.RootSessionID == t.id) {
			t.askElicitation(ctx, e)
		}
	case "permission.replied", "question.replied", "question.rejected", "mcp.elicitation.replied":
		var r struct {
			RequestID string `json:"requestID"`
			ID        string `json:"id"`
			Reply     string `json:"reply"`
		}
		if json.Unmarshal(ev.Properties, &r) != nil {
			return
		}
		if r.RequestID == "" {
			r.RequestID = r.ID
		}
		if o := t.reqs[r.RequestID]; o != nil {
			if ev.Type == "permission.replied" && r.Reply == string(permission.Reject) && o.callID != "" {
				t.declined[o.callID] = true
			}
			t.resolveLocked(ctx, r.RequestID, o)
			t.notify(ctx, "thread/status/changed", map[string]any{"status": t.statusLocked()})
		}
	case "session.error":
		var p struct {
			SessionID string                `json:"sessionID"`
			Error     *session.MessageError `json:"error"`
		}
		if json.Unmarshal(ev.Properties, &p) == nil && p.SessionID == t.id && p.Error != nil && t.cur != nil {
			if p.Error.Name == "MessageAbortedError" {
				t.cur.interrupted = true
			} else {
				t.cur.err = turnError(p.Error)
			}
		}
	case "mcp.status.changed", "mcp.tools.changed", "mcp.server.removed":
		// The MCP servers' names tell a server's tool from tandem's own.
		t.mcp = t.s.mcpNames(ctx)
	case "session.idle":
		if env.SessionID == t.id {
			t.finishLocked(ctx)
		}
	}
}

// message follows a message's life: a prompt's text is kept for the turn it opens; an assistant
// message opens its prompt's turn when this client did not start it (another client prompted, or
// the prompt was queued), and reports its tokens when complete.
func (t *thread) message(ctx context.Context, m session.Message) {
	t.roles[m.ID] = m.Role
	if m.Role != session.RoleAssistant {
		return
	}
	if m.ParentID == "" {
		return
	}
	if t.cur == nil || t.cur.id != m.ParentID {
		t.finishLocked(ctx)
		t.beginLocked(ctx, m.ParentID, t.userTexts[m.ParentID])
	}
	if m.Error != nil {
		if m.Error.Name == "MessageAbortedError" {
			t.cur.interrupted = true
		} else {
			t.cur.err = turnError(m.Error)
		}
	}
	if m.Time.Completed > 0 && m.Tokens != nil && !t.counted[m.ID] {
		t.counted[m.ID] = true
		last := usage{input: m.Tokens.Input, cached: m.Tokens.Cache.Read, output: m.Tokens.Output, reasoning: m.Tokens.Reasoning}
		t.total.input += last.input
		t.total.cached += last.cached
		t.total.output += last.output
		t.total.reasoning += last.reasoning
		t.notify(ctx, "thread/tokenUsage/updated", map[string]any{"turnId": t.cur.id,
			"tokenUsage": map[string]any{"total": t.total.breakdown(), "last": last.breakdown(), "modelContextWindow": t.window}})
	}
}

func (u usage) breakdown() map[string]any {
	return map[string]any{"totalTokens": u.input + u.output, "inputTokens": u.input, "cachedInputTokens": u.cached,
		"outputTokens": u.output, "reasoningOutputTokens": u.reasoning}
}

// part follows a part's life.
func (t *thread) part(ctx context.Context, p session.Part) {
	if t.roles[p.MessageID] == session.RoleUser {
		if p.Type == "text" && p.Text != nil && !p.Synthetic {
			t.userTexts[p.MessageID] = append(t.userTexts[p.MessageID], *p.Text)
		}
		return
	}
	if t.cur == nil || t.roles[p.MessageID] != session.RoleAssistant {
		return
	}
	switch p.Type {
	case "text", "reasoning":
		if p.Synthetic {
			return
		}
		it := t.items[p.ID]
		if it == nil {
			kind := kindAgent
			if p.Type == "reasoning" {
				kind = kindReason
			}
			it = &itemState{kind: kind, item: textItem(p, "")}
			t.items[p.ID] = it
		}
		if it.done {
			return
		}
		t.startItemLocked(ctx, p.ID, it)
		if p.Text != nil && len(*p.Text) > len(it.text) && strings.HasPrefix(*p.Text, it.text) {
			t.textDelta(ctx, p.ID, it, (*p.Text)[len(it.text):])
		}
		if p.Time != nil && p.Time.End > 0 {
			t.completeLocked(ctx, p.ID, it)
		}
	case "tool":
		t.toolPart(ctx, p)
	}
}

func (t *thread) outputDelta(ctx context.Context, callID string, it *itemState, delta string) {
	t.notify(ctx, "item/commandExecution/outputDelta", map[string]any{"turnId": t.cur.id, "itemId": callID, "delta": delta})
	it.output += delta
}

// utf16Units is s's length as JavaScript counts it, the unit of a delta's offset.
func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func (t *thread) textDelta(ctx context.Context, key string, it *itemState, delta string) {
	if delta == "" {
		return
	}
	t.startItemLocked(ctx, key, it)
	it.text += delta
	if it.kind == kindReason {
		t.notify(ctx, "item/reasoning/textDelta", map[string]any{"turnId": t.cur.id, "itemId": key, "delta": delta, "contentIndex": 0})
		return
	}
	t.notify(ctx, "item/agentMessage/delta", map[string]any{"turnId": t.cur.id, "itemId": key, "delta": delta})
}

// toolPart follows a tool call: a command starts as soon as its command is known and streams its
// output; a file change starts when its diff is known (its approval, or its result); every call
// completes with its result.
func (t *thread) toolPart(ctx context.Context, p session.Part) {
	if p.CallID == "" || p.State == nil {
		return
	}
	t.tools[p.CallID] = p.Tool
	t.calls[p.ID] = p.CallID
	kind := kindOfTool(p.Tool)
	if kind == kindPlan {
		return
	}
	it := t.items[p.CallID]
	item := toolItem(p, t.dir, t.mcp, t.declined[p.CallID])
	if it == nil {
		it = &itemState{kind: kind}
		t.items[p.CallID] = it
	}
	if it.done {
		return
	}
	finished := p.State.Status == "completed" || p.State.Status == "error"
	switch kind {
	case kindCommand:
		if item["command"] == "" && !finished {
			return
		}
		if !it.started {
			start := cloneItem(item)
			start["status"], start["aggregatedOutput"], start["exitCode"] = "inProgress", nil, nil
			it.item = start
			t.startItemLocked(ctx, p.CallID, it)
		}
		// The output grows by deltas (above); a whole part sends what continues it. When the live
		// output restarted at its newest lines (behind a "..." marker) the client is sent that
		// restart; the final output cut in the middle is not sent again: item/completed carries it.
		if out, ok := item["aggregatedOutput"].(string); ok {
			switch {
			case strings.HasPrefix(out, it.output):
				if len(out) > len(it.output) {
					t.outputDelta(ctx, p.CallID, it, out[len(it.output):])
				}
			case !finished:
				t.outputDelta(ctx, p.CallID, it, "\n"+out)
				it.output = out
			}
		}
	case kindFile:
		if !finished {
			return
		}
		if !it.started {
			start := cloneItem(item)
			start["status"] = "inProgress"
			it.item = start
			t.startItemLocked(ctx, p.CallID, it)
		}
	default:
		if !it.started {
			start := cloneItem(item)
			start["status"], start["result"], start["error"] = "inProgress", nil, nil
			it.item = start
			t.startItemLocked(ctx, p.CallID, it)
		}
	}
	it.item = item
	if finished {
		t.completeLocked(ctx, p.CallID, it)
	}
}

func cloneItem(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
