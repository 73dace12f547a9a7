package acpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"tandem/permission"
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
func (t *translator) ask(ctx context.Context, r permission.Request) {
	opts := options(r.Decisions)
	if len(opts) == 0 {
		return // nothing the editor can choose: it stays in the pending list
	}
	actx, cancel := context.WithCancel(ctx)
	t.mu.Lock()
	t.waiting[r.ID] = cancel
	t.mu.Unlock()
	t.approval.Add(1)
	go func() {
		defer t.approval.Done()
		defer t.withdraw(r.ID)
		res, err := t.a.conn.RequestPermission(actx, acp.RequestPermissionRequest{
			SessionId: acp.SessionId(t.as.id), ToolCall: t.askedCall(r), Options: opts,
			Meta: map[string]any{"tandem": map[string]any{"permissionID": r.ID, "permission": r.Permission, "patterns": r.Patterns}},
		})
		if actx.Err() != nil {
			return // answered elsewhere, or the turn ended
		}
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
		if err := t.as.c.ReplyPermission(actx, r.ID, answer, message); err != nil {
			t.a.log.Debug("acp: permission reply refused (answered elsewhere first?)", "id", r.ID, "err", err)
		}
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
func (t *translator) askedCall(r permission.Request) acp.ToolCallUpdate {
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
