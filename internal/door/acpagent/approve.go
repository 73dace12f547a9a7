package acpagent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/permission"
)

// optionKinds maps tandem's decision keys onto ACP's option kinds. reject-with-message has no ACP
// form (an option cannot carry text), so it is not offered to the editor; it stays available in
// the pending list.
var optionKinds = map[string]acp.PermissionOptionKind{
	permission.KeyOnce:       acp.PermissionOptionKindAllowOnce,
	permission.KeySession:    acp.PermissionOptionKindAllowAlways,
	permission.KeyAlways:     acp.PermissionOptionKindAllowAlways,
	permission.KeyReject:     acp.PermissionOptionKindRejectOnce,
	permission.KeyDenyAlways: acp.PermissionOptionKindRejectAlways,
}

// options are the request's decisions as ACP permission options, in the request's order; the
// option ID is the decision key, which is what the reply sends back.
func options(decisions []permission.Choice) []acp.PermissionOption {
	out := []acp.PermissionOption{}
	for _, d := range decisions {
		kind, ok := optionKinds[d.Key]
		if !ok {
			continue
		}
		name := d.Label
		if len(d.Patterns) > 0 && d.Key != permission.KeyOnce && d.Key != permission.KeyReject {
			name += ": " + strings.Join(d.Patterns, ", ")
		}
		out = append(out, acp.PermissionOption{OptionId: acp.PermissionOptionId(d.Key), Name: name, Kind: kind})
	}
	return out
}

// ask puts a permission request to the client while it waits in tandem's pending list. The first
// answer wins: when another client answers first, the client's prompt is withdrawn with
// $/cancel_request (the SDK sends it when the request's context ends; a client that does not
// implement it ignores the notification, and its late answer is then refused by tandem).
func (t *translator) ask(ctx context.Context, r api.PermissionRequest) {
	opts := options(r.Decisions)
	if len(opts) == 0 {
		return // nothing the editor can choose: it stays in the pending list
	}
	req := acp.RequestPermissionRequest{
		SessionId: acp.SessionId(t.as.id), ToolCall: t.askedCall(r), Options: opts,
		Meta: map[string]any{"tandem": map[string]any{"permissionID": r.ID, "permission": r.Permission, "patterns": r.Patterns}},
	}
	t.putToEditor(ctx, r.ID, req, func(ctx context.Context, res acp.RequestPermissionResponse, err error) {
		answer := permission.Reject
		message := ""
		switch {
		case err != nil:
			message = "the editor could not ask: " + errText(err)
		case res.Outcome.Selected != nil:
			key := string(res.Outcome.Selected.OptionId)
			if !slices.ContainsFunc(opts, func(o acp.PermissionOption) bool { return string(o.OptionId) == key }) {
				message = fmt.Sprintf("%v: %q", errNotOffered, key)
				break
			}
			answer = permission.Reply(key)
		default:
			message = "the editor cancelled the approval"
		}
		if err := t.as.c.ReplyPermission(ctx, r.ID, answer, message); err != nil {
			t.a.log.Debug("acp: permission reply refused (answered elsewhere first?)", "id", r.ID, "err", err)
		}
	})
}

// putToEditor asks the editor req about the pending request id, which meanwhile waits in tandem's
// list for every other client. When another client answers first, or the turn ends, the editor's
// prompt is withdrawn and answered never runs; otherwise answered gets the editor's response, or
// the error it failed with.
func (t *translator) putToEditor(ctx context.Context, id string, req acp.RequestPermissionRequest, answered func(ctx context.Context, res acp.RequestPermissionResponse, err error)) {
	actx, cancel := context.WithCancel(ctx)
	t.mu.Lock()
	t.waiting[id] = cancel
	t.mu.Unlock()
	t.approval.Add(1)
	go func() {
		defer t.approval.Done()
		defer t.withdraw(id)
		res, err := t.a.conn.RequestPermission(actx, req)
		if actx.Err() != nil {
			return // answered elsewhere, or the turn ended
		}
		answered(actx, res, err)
	}()
}

// withdraw ends the client's prompt for a request answered elsewhere (or by the client itself).
func (t *translator) withdraw(id string) {
	t.mu.Lock()
	cancel := t.waiting[id]
	delete(t.waiting, id)
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// askedCall is the tool call a permission request is about, with what it would do.
func (t *translator) askedCall(r api.PermissionRequest) acp.ToolCallUpdate {
	id := r.ID
	if r.Tool != nil && r.Tool.CallID != "" {
		id = r.Tool.CallID
	}
	title := r.Permission + " " + strings.Join(r.Patterns, " ")
	kind := kindOf(r.Permission)
	tc := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(id), Title: &title, Kind: &kind, RawInput: r.Metadata}
	if c, ok := r.Metadata["command"].(string); ok && c != "" {
		title = c
	}
	if f, ok := r.Metadata["filepath"].(string); ok && f != "" {
		tc.Locations = []acp.ToolCallLocation{{Path: f}}
		if title == r.Permission+" "+strings.Join(r.Patterns, " ") {
			title = r.Permission + " " + f
		}
	}
	if d, ok := r.Metadata["diff"].(string); ok && d != "" {
		tc.Content = []acp.ToolCallContent{acp.ToolContent(acp.TextBlock("```diff\n" + strings.TrimRight(d, "\n") + "\n```"))}
	}
	return tc
}

// questionReject is the option that dismisses a question put as a permission request.
const questionReject = "tandem-dismiss"

// askQuestion puts a question of the agent's question tool to the client in the closest form ACP
// v1 offers: a session/request_permission whose options are the answers (kind allow_once) and a
// dismissal (reject_once). Only a single question with a single choice fits that form; anything
// else, and typed answers, stay in GET /question for the other clients. The first answer wins, as
// for approvals.
func (t *translator) askQuestion(ctx context.Context, q api.QuestionRequest) {
	if len(q.Questions) != 1 || q.Questions[0].Multiple || len(q.Questions[0].Options) == 0 {
		return
	}
	info := q.Questions[0]
	opts := []acp.PermissionOption{}
	for i, o := range info.Options {
		name := o.Label
		if o.Description != "" {
			name += " — " + o.Description
		}
		opts = append(opts, acp.PermissionOption{OptionId: acp.PermissionOptionId(fmt.Sprintf("answer-%d", i)), Name: name, Kind: acp.PermissionOptionKindAllowOnce})
	}
	opts = append(opts, acp.PermissionOption{OptionId: questionReject, Name: "Dismiss the question", Kind: acp.PermissionOptionKindRejectOnce})
	id := q.ID
	if q.Tool != nil && q.Tool.CallID != "" {
		id = q.Tool.CallID
	}
	kind := acp.ToolKindOther
	title := info.Question
	call := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(id), Title: &title, Kind: &kind}
	req := acp.RequestPermissionRequest{SessionId: acp.SessionId(t.as.id), ToolCall: call, Options: opts,
		Meta: map[string]any{"tandem": map[string]any{"questionID": q.ID}}}
	t.putToEditor(ctx, q.ID, req, func(ctx context.Context, res acp.RequestPermissionResponse, err error) {
		if err != nil {
			return // the editor could not ask: it waits in the list
		}
		var answer string
		if sel := res.Outcome.Selected; sel != nil {
			var i int
			if _, err := fmt.Sscanf(string(sel.OptionId), "answer-%d", &i); err == nil && i >= 0 && i < len(info.Options) {
				answer = info.Options[i].Label
			}
		}
		if answer == "" {
			err = t.as.c.RejectQuestion(ctx, q.ID)
		} else {
			err = t.as.c.ReplyQuestion(ctx, q.ID, [][]string{{answer}})
		}
		if err != nil {
			t.a.log.Debug("acp: question answer refused (answered elsewhere first?)", "id", q.ID, "err", err)
		}
	})
}
