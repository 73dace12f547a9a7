package appserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
)

// outstanding is a tandem pending request put to the Codex client.
type outstanding struct {
	req    *request
	kind   string // permission, question, elicitation
	callID string // the tool call it is about, when one
	cancel context.CancelFunc
}

// put asks the client about the pending request id (kind: permission, question, elicitation) and
// hands its answer to answered. The request waits in tandem's lists meanwhile: when another client
// answers first, the event that says so resolves it here (serverRequest/resolved) and answered
// never runs. Called with t.mu held.
func (t *thread) put(ctx context.Context, id, kind, callID, method string, params map[string]any, answered func(ctx context.Context, m message)) {
	if _, ok := t.reqs[id]; ok {
		return
	}
	params["threadId"] = t.tid
	req, err := t.s.p.ask(ctx, method, params)
	if err != nil {
		t.s.log.Debug("app-server: could not ask the client", "method", method, "err", err)
		return
	}
	actx, cancel := context.WithCancel(ctx)
	t.reqs[id] = &outstanding{req: req, kind: kind, callID: callID, cancel: cancel}
	t.notify(ctx, "thread/status/changed", map[string]any{"status": t.statusLocked()})
	t.s.wg.Add(1)
	go func() {
		defer t.s.wg.Done()
		select {
		case m := <-req.resp:
			// The answer is passed on even if the request is resolved meanwhile (its own reply
			// resolves it): only the connection's end stops the calls it makes.
			answered(t.s.ctx, m)
		case <-actx.Done():
		}
	}()
}

// resolveLocked closes a request on the client's side: answered here or elsewhere, or its turn
// ended.
func (t *thread) resolveLocked(ctx context.Context, id string, o *outstanding) {
	delete(t.reqs, id)
	o.cancel()
	t.s.p.forget(o.req.id)
	t.notify(ctx, "serverRequest/resolved", map[string]any{"requestId": o.req.id})
}

// decisionKeys maps Codex's approval decisions onto tandem's decision keys.
var commandDecisions = []struct {
	key      string
	decision func(permission.Choice) any
}{
	{permission.KeyOnce, func(permission.Choice) any { return "accept" }},
	{permission.KeySession, func(permission.Choice) any { return "acceptForSession" }},
	{permission.KeyAlways, func(c permission.Choice) any {
		return map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": prefixOf(c.Patterns)}}
	}},
	{permission.KeyReject, func(permission.Choice) any { return "decline" }},
}

// prefixOf is an "always" decision's first pattern ("git push *") as the command prefix Codex shows
// (["git", "push"]); only the words are shown, the decision itself is tandem's pattern.
func prefixOf(patterns []string) []string {
	if len(patterns) == 0 {
		return []string{}
	}
	return nonNil(strings.Fields(strings.TrimSuffix(patterns[0], " *")))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// availableDecisions are a request's decisions as Codex's, in Codex's order, ending with cancel
// (refuse and stop the turn), which Codex always offers.
func availableDecisions(r permission.Request) []any {
	out := []any{}
	for _, d := range commandDecisions {
		if i := slices.IndexFunc(r.Decisions, func(c permission.Choice) bool { return c.Key == d.key }); i >= 0 {
			out = append(out, d.decision(r.Decisions[i]))
		}
	}
	return append(out, "cancel")
}

// replyOf is the tandem reply a Codex decision means; cancel refuses and interrupts the turn, as in
// Codex.
func replyOf(r permission.Request, decision json.RawMessage) (reply permission.Reply, interrupt bool, err error) {
	var s string
	if json.Unmarshal(decision, &s) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(decision, &obj) != nil || len(obj) != 1 {
			return "", false, fmt.Errorf("decision %s is not one of Codex's", decision)
		}
		for k := range obj {
			s = k
		}
	}
	key := ""
	switch s {
	case "accept":
		key = permission.KeyOnce
	case "acceptForSession":
		key = permission.KeySession
		if !offered(r, key) {
			key = permission.KeyAlways
		}
	case "acceptWithExecpolicyAmendment":
		key = permission.KeyAlways
	case "decline":
		key = permission.KeyReject
	case "cancel":
		return permission.Reject, true, nil
	default:
		return "", false, fmt.Errorf("decision %q is not one tandem offers", s)
	}
	if !offered(r, key) {
		return "", false, fmt.Errorf("decision %q (tandem's %s) was not offered", s, key)
	}
	return permission.Reply(key), false, nil
}

func offered(r permission.Request, key string) bool {
	return slices.ContainsFunc(r.Decisions, func(c permission.Choice) bool { return c.Key == key })
}

// askPermission puts a tandem approval to the client: a command as a command approval, a file
// change as a file-change approval (after its diff is shown as the item), a path outside the
// project as a permissions request, anything else (an MCP tool, a fetch) as an approval form, the
// way Codex asks about MCP tools.
func (t *thread) askPermission(ctx context.Context, r permission.Request) {
	if t.cur == nil {
		return // no turn on this connection to show it in: it waits in GET /permission
	}
	callID := r.ID
	if r.Tool != nil && r.Tool.CallID != "" {
		callID = r.Tool.CallID
	}
	now := time.Now().UnixMilli()
	base := map[string]any{"turnId": t.cur.id, "itemId": callID, "startedAtMs": now}
	var method string
	switch r.Permission {
	case "bash":
		command, _ := r.Metadata["command"].(string)
		if command == "" {
			command = strings.Join(r.Patterns, " ")
		}
		t.showItem(ctx, callID, kindCommand, map[string]any{"type": kindCommand, "id": callID, "command": command, "cwd": t.dir,
			"processId": nil, "source": "agent", "status": "inProgress", "commandActions": []any{map[string]any{"type": "unknown", "command": command}},
			"aggregatedOutput": nil, "exitCode": nil, "durationMs": nil})
		method = "item/commandExecution/requestApproval"
		base["kind"] = "command"
		base["environmentId"] = "local"
		base["command"] = command
		base["cwd"] = t.dir
		base["reason"] = reasonOf(r)
		base["commandActions"] = []any{map[string]any{"type": "unknown", "command": command}}
		base["availableDecisions"] = availableDecisions(r)
		if i := slices.IndexFunc(r.Decisions, func(c permission.Choice) bool { return c.Key == permission.KeyAlways }); i >= 0 {
			base["proposedExecpolicyAmendment"] = prefixOf(r.Decisions[i].Patterns)
		}
	case "edit":
		path, _ := r.Metadata["filepath"].(string)
		diff, _ := r.Metadata["diff"].(string)
		t.showItem(ctx, callID, kindFile, map[string]any{"type": kindFile, "id": callID, "status": "inProgress",
			"changes": []any{map[string]any{"path": path, "kind": map[string]any{"type": "update", "move_path": nil}, "diff": diff}}})
		method = "item/fileChange/requestApproval"
		base["reason"] = reasonOf(r)
		base["grantRoot"] = nil
	case "external_directory":
		dir, _ := r.Metadata["parentDir"].(string)
		if dir == "" {
			dir = strings.TrimSuffix(strings.Join(r.Patterns, " "), "/*")
		}
		access := "read"
		if kindOfTool(t.tools[callID]) == kindFile || t.tools[callID] == "bash" {
			access = "write"
		}
		method = "item/permissions/requestApproval"
		base["cwd"] = t.dir
		base["environmentId"] = "local"
		base["reason"] = fmt.Sprintf("%s is outside the project %s", dir, t.dir)
		base["permissions"] = map[string]any{"network": nil, "fileSystem": map[string]any{access: []string{dir}}}
	default:
		method = "mcpServer/elicitation/request"
		base = map[string]any{"turnId": t.cur.id, "serverName": serverOf(r.Permission, t.mcp), "mode": "form",
			"message":         fmt.Sprintf("Allow tandem to use %s (%s)?", r.Permission, strings.Join(r.Patterns, ", ")),
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
			"_meta": map[string]any{"codex_approval_kind": "mcp_tool_call", "persist": persistOf(r), "tool_name": r.Permission,
				"tandem_permission_id": r.ID}}
	}
	t.put(ctx, r.ID, "permission", callID, method, base, func(ctx context.Context, m message) {
		reply, interrupt, err := t.permissionAnswer(r, method, m)
		msg := ""
		if err != nil {
			reply, msg = permission.Reject, "the Codex client's answer: "+err.Error()
		}
		if err := t.c.ReplyPermission(ctx, r.ID, reply, msg); err != nil {
			t.s.log.Debug("app-server: permission reply refused (answered elsewhere first?)", "id", r.ID, "err", err)
		}
		if interrupt {
			t.interrupt(ctx)
		}
	})
}

// showItem starts the item an approval is about, when its part has not yet started it: Codex
// shows the command, or the diff, from the item.
func (t *thread) showItem(ctx context.Context, callID, kind string, item map[string]any) {
	it := t.items[callID]
	if it == nil {
		it = &itemState{kind: kind}
		t.items[callID] = it
	}
	if it.started {
		return
	}
	it.item = item
	t.startItemLocked(ctx, callID, it)
}

func reasonOf(r permission.Request) any {
	if u, ok := r.Metadata["unjudged"].([]any); ok && len(u) > 0 {
		var parts []string
		for _, x := range u {
			parts = append(parts, fmt.Sprint(x))
		}
		return strings.Join(parts, "; ")
	}
	return nil
}

func serverOf(perm string, mcp []string) string {
	for _, m := range mcp {
		if strings.HasPrefix(perm, m+"_") {
			return m
		}
	}
	return "tandem"
}

// persistOf are the "don't ask again" scopes a form approval offers.
func persistOf(r permission.Request) []string {
	out := []string{}
	if offered(r, permission.KeySession) {
		out = append(out, "session")
	}
	if offered(r, permission.KeyAlways) {
		out = append(out, "always")
	}
	return out
}

// permissionAnswer reads the client's answer to an approval.
func (t *thread) permissionAnswer(r permission.Request, method string, m message) (permission.Reply, bool, error) {
	if m.Error != nil {
		return "", false, fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
	}
	switch method {
	case "item/permissions/requestApproval":
		var res struct {
			Permissions struct {
				FileSystem *struct {
					Read  []string `json:"read"`
					Write []string `json:"write"`
				} `json:"fileSystem"`
			} `json:"permissions"`
			Scope string `json:"scope"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			return "", false, err
		}
		fs := res.Permissions.FileSystem
		if fs == nil || len(fs.Read)+len(fs.Write) == 0 {
			return permission.Reject, false, nil
		}
		if res.Scope == "session" && offered(r, permission.KeySession) {
			return permission.Reply(permission.KeySession), false, nil
		}
		return permission.Reply(permission.KeyOnce), false, nil
	case "mcpServer/elicitation/request":
		var res struct {
			Action string `json:"action"`
			Meta   *struct {
				Persist string `json:"persist"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			return "", false, err
		}
		switch res.Action {
		case "accept":
			if res.Meta != nil && offered(r, res.Meta.Persist) {
				return permission.Reply(res.Meta.Persist), false, nil
			}
			return permission.Reply(permission.KeyOnce), false, nil
		case "cancel":
			return permission.Reject, true, nil
		}
		return permission.Reject, false, nil
	}
	var res struct {
		Decision json.RawMessage `json:"decision"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return "", false, err
	}
	return replyOf(r, res.Decision)
}

// askQuestion puts the agent's question tool to the client as Codex's request for user input;
// a question with several answers takes them as the client sends them.
func (t *thread) askQuestion(ctx context.Context, q question.Request) {
	if t.cur == nil {
		return
	}
	callID := q.ID
	if q.Tool != nil && q.Tool.CallID != "" {
		callID = q.Tool.CallID
	}
	qs := []any{}
	for i, info := range q.Questions {
		opts := []any{}
		for _, o := range info.Options {
			opts = append(opts, map[string]any{"label": o.Label, "description": o.Description})
		}
		qs = append(qs, map[string]any{"id": fmt.Sprintf("q%d", i), "header": info.Header, "question": info.Question,
			"isOther": info.AllowsCustom(), "isSecret": false, "options": opts})
	}
	params := map[string]any{"turnId": t.cur.id, "itemId": callID, "questions": qs, "isBlocking": true, "autoResolutionMs": nil}
	t.put(ctx, q.ID, "question", callID, "item/tool/requestUserInput", params, func(ctx context.Context, m message) {
		var res struct {
			Answers map[string]struct {
				Answers []string `json:"answers"`
			} `json:"answers"`
		}
		var err error
		if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || len(res.Answers) == 0 {
			err = t.c.RejectQuestion(ctx, q.ID)
		} else {
			answers := make([][]string, len(q.Questions))
			for i := range q.Questions {
				answers[i] = nonNil(res.Answers[fmt.Sprintf("q%d", i)].Answers)
			}
			err = t.c.ReplyQuestion(ctx, q.ID, answers)
		}
		if err != nil {
			t.s.log.Debug("app-server: question answer refused (answered elsewhere first?)", "id", q.ID, "err", err)
		}
	})
}

// askElicitation forwards an MCP server's request (a form, or a link to open) as Codex's
// mcpServer/elicitation/request; the answer goes back to the server as given.
func (t *thread) askElicitation(ctx context.Context, e client.Elicitation) {
	var turnID any
	if t.cur != nil {
		turnID = t.cur.id
	}
	params := map[string]any{"turnId": turnID, "serverName": e.Server, "mode": e.Mode, "_meta": nil, "message": e.Message}
	if e.Mode == "url" {
		params["url"] = e.URL
		params["elicitationId"] = e.ID
	} else {
		params["mode"] = "form"
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(e.RequestedSchema) > 0 {
			schema = e.RequestedSchema
		}
		params["requestedSchema"] = schema
	}
	callID := ""
	if e.Tool != nil {
		callID = e.Tool.CallID
	}
	t.put(ctx, e.ID, "elicitation", callID, "mcpServer/elicitation/request", params, func(ctx context.Context, m message) {
		var res struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
			res.Action = "cancel"
		}
		if res.Action != "accept" {
			res.Content = nil
		}
		if err := t.c.ReplyElicitation(ctx, e.ID, res.Action, res.Content); err != nil {
			// An accept without the form's content (Codex's TUI sends none for a form it cannot
			// draw) is refused: the request stays pending for a client that can fill it in.
			t.s.log.Debug("app-server: elicitation answer refused", "id", e.ID, "err", err)
			t.s.p.notify(ctx, "warning", map[string]any{"threadId": t.tid, "message": fmt.Sprintf(
				"tandem could not pass on your answer to %s (%v); the form waits in tandem's web UI, `tandem attach` and GET /mcp/elicitation", e.Server, err)})
		}
	})
}
