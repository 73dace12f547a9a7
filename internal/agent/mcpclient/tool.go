package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// Tools returns the tools of every connected server of the project as agent tools named
// "<server>_<tool>". Each asks permission under its own name (patterns ["*"]) before it runs, since
// an MCP tool can do anything. The list is a snapshot: call it per turn to pick up servers and tools
// that changed.
func (m *Manager) Tools() []tool.Tool {
	return agentTools(m, m.ToolInfos())
}

// SessionTools returns, as Tools does, the tools of the servers added for one session only
// (AddForSession): what that session's turns are offered besides Tools.
func (m *Manager) SessionTools(sessionID string) []tool.Tool {
	return agentTools(m, m.SessionToolInfos(sessionID))
}

func agentTools(m *Manager, infos []ToolInfo) []tool.Tool {
	out := make([]tool.Tool, len(infos))
	for i, info := range infos {
		out[i] = mcpTool{m: m, info: info}
	}
	return out
}

type mcpTool struct {
	m    *Manager
	info ToolInfo
}

func (t mcpTool) Name() string { return t.info.Name }

func (t mcpTool) Description() string {
	if t.info.Description != "" {
		return t.info.Description
	}
	return fmt.Sprintf("Tool %s of the MCP server %s.", t.info.Tool, t.info.Server)
}

func (t mcpTool) Parameters() json.RawMessage { return t.info.InputSchema }

func (t mcpTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var input map[string]any
	_ = json.Unmarshal(call.Input, &input)
	if err := call.Gate.Check(ctx, tool.Ask{
		Permission: t.info.Name,
		Patterns:   []string{"*"},
		Always:     []string{"*"},
		Metadata:   map[string]any{"server": t.info.Server, "tool": t.info.Tool, "input": input},
	}); err != nil {
		return tool.Result{}, err
	}
	res, err := t.m.CallTool(ctx, t.info.Name, call.Input, CallInfo{
		SessionID: call.SessionID, MessageID: call.MessageID, CallID: call.ID, Directory: call.Dir,
		ParentSessionID: call.ParentSessionID, RootSessionID: call.RootSessionID,
	})
	if err != nil {
		if pending.ServerStopping(ctx) && t.m.StoppedWaiting(call.MessageID, call.ID) {
			// It waited for a person: the elicitation stays stored and the next start resumes the call.
			return tool.Result{}, fmt.Errorf("%v: %w", err, pending.ErrServerStopping)
		}
		return tool.Result{}, err
	}
	out := ResultText(res)
	if res.IsError {
		if out == "" {
			out = "the tool reported an error"
		}
		return tool.Result{}, errors.New(out)
	}
	return tool.Result{
		Title:    t.info.Name,
		Output:   out,
		Metadata: map[string]any{"server": t.info.Server, "tool": t.info.Tool},
	}, nil
}

// ResultText renders a tool result for the model: text as is, other content as a short note, and
// structured content as JSON when there is nothing else.
func ResultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			if c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else {
				parts = append(parts, fmt.Sprintf("[resource %s, %d bytes]", c.Resource.URI, len(c.Resource.Blob)))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}
