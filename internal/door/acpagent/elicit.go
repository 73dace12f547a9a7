package acpagent

import (
	"context"
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tandem-dev/tandem/client"
)

// elicitChoice is one answer to an MCP server's request that an ACP permission option can carry.
type elicitChoice struct {
	option  acp.PermissionOption
	action  string         // accept, decline
	content map[string]any // the form's content for accept
}

// elicitationChoices are the answers an MCP server's request (elicitation) can be given as ACP
// permission options, ACP v1 having no form of its own: a link to open or decline; a form with
// nothing to fill in, accepted or declined; a form of one yes/no or one pick from a list, each
// value an option. A form with text to type gets none and stays in the pending list, where the web
// UI, tandem attach and REST fill it in.
func elicitationChoices(e client.Elicitation) []elicitChoice {
	decline := elicitChoice{option: acp.PermissionOption{OptionId: "tandem-decline", Name: "Decline", Kind: acp.PermissionOptionKindRejectOnce}, action: "decline"}
	accept := func(id, name string, content map[string]any) elicitChoice {
		return elicitChoice{option: acp.PermissionOption{OptionId: acp.PermissionOptionId(id), Name: name, Kind: acp.PermissionOptionKindAllowOnce},
			action: "accept", content: content}
	}
	if e.Mode == "url" {
		return []elicitChoice{accept("tandem-open", "Open "+e.Domain+" (the link is shown above)", nil), decline}
	}
	var schema struct {
		Properties map[string]struct {
			Type  string `json:"type"`
			Title string `json:"title"`
			Enum  []any  `json:"enum"`
			OneOf []struct {
				Const any    `json:"const"`
				Title string `json:"title"`
			} `json:"oneOf"`
			EnumNames []string `json:"enumNames"`
		} `json:"properties"`
	}
	if len(e.RequestedSchema) > 0 && json.Unmarshal(e.RequestedSchema, &schema) != nil {
		return nil
	}
	switch len(schema.Properties) {
	case 0:
		return []elicitChoice{accept("tandem-accept", "Accept", map[string]any{}), decline}
	case 1:
	default:
		return nil
	}
	var out []elicitChoice
	for name, p := range schema.Properties {
		label := p.Title
		if label == "" {
			label = name
		}
		switch {
		case p.Type == "boolean":
			out = append(out, accept("tandem-yes", label+": yes", map[string]any{name: true}), accept("tandem-no", label+": no", map[string]any{name: false}))
		case len(p.OneOf) > 0:
			for i, o := range p.OneOf {
				title := o.Title
				if title == "" {
					title = fmt.Sprint(o.Const)
				}
				out = append(out, accept(fmt.Sprintf("tandem-pick-%d", i), label+": "+title, map[string]any{name: o.Const}))
			}
		case len(p.Enum) > 0:
			for i, v := range p.Enum {
				title := fmt.Sprint(v)
				if i < len(p.EnumNames) && p.EnumNames[i] != "" {
					title = p.EnumNames[i]
				}
				out = append(out, accept(fmt.Sprintf("tandem-pick-%d", i), label+": "+title, map[string]any{name: v}))
			}
		default:
			return nil // text or a number to type
		}
	}
	return append(out, decline)
}

// askElicitation puts an MCP server's request to the editor as a permission request when a choice
// can answer it (see elicitationChoices), while it waits in GET /mcp/elicitation; the first answer
// wins, and when another client answers first the editor's prompt is withdrawn.
func (t *translator) askElicitation(ctx context.Context, e client.Elicitation) {
	choices := elicitationChoices(e)
	if len(choices) == 0 {
		return
	}
	opts := make([]acp.PermissionOption, len(choices))
	for i, c := range choices {
		opts[i] = c.option
	}
	id := e.ID
	if e.Tool != nil && e.Tool.CallID != "" {
		id = e.Tool.CallID
	}
	kind := acp.ToolKindOther
	title := fmt.Sprintf("MCP server %s asks: %s", e.Server, e.Message)
	text := e.Message
	if e.Mode == "url" {
		title = fmt.Sprintf("MCP server %s asks you to open a link on %s", e.Server, e.Domain)
		text = fmt.Sprintf("%s\n\n%s\n\nDomain: %s", e.Message, e.URL, e.Domain)
	}
	call := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(id), Title: &title, Kind: &kind,
		Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))}}
	req := acp.RequestPermissionRequest{SessionId: acp.SessionId(t.as.id), ToolCall: call, Options: opts,
		Meta: map[string]any{"tandem": map[string]any{"elicitationID": e.ID, "server": e.Server}}}
	t.putToEditor(ctx, e.ID, req, func(ctx context.Context, res acp.RequestPermissionResponse, err error) {
		if err != nil {
			return // the editor could not ask: it waits in the list
		}
		action, content := "cancel", map[string]any(nil)
		if sel := res.Outcome.Selected; sel != nil {
			for _, c := range choices {
				if c.option.OptionId == sel.OptionId {
					action, content = c.action, c.content
				}
			}
		}
		if err := t.as.c.ReplyElicitation(ctx, e.ID, action, content); err != nil {
			t.a.log.Debug("acp: elicitation answer refused (answered elsewhere first?)", "id", e.ID, "err", err)
		}
	})
}
