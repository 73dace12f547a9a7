package routes

import (
	"encoding/json"
	"net/http"

	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// Tools lists the tools the agent can call: the built-ins, the question tool and every connected
// MCP server's tools.
type Tools struct {
	All func() []tool.Tool
}

// ToolInfo is OpenCode's ToolListItem.
type ToolInfo struct {
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolListQuery is accepted for OpenCode compatibility: tandem offers every model the same tools.
type ToolListQuery struct {
	Provider string `query:"provider"`
	Model    string `query:"model"`
}

// Ops declares the tool listings.
func (t *Tools) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/experimental/tool/ids", "tool.ids", "List tool IDs", func(c *Call, _ *struct{}) ([]string, error) {
			all := t.All()
			ids := make([]string, 0, len(all))
			for _, tl := range all {
				ids = append(ids, tl.Name())
			}
			return ids, nil
		}).doc("Built-in tools, question, and each connected MCP server's tools as <server>_<tool>."),
		op(http.MethodGet, "/experimental/tool", "tool.list", "List tools", func(c *Call, _ *ToolListQuery) ([]ToolInfo, error) {
			all := t.All()
			out := make([]ToolInfo, 0, len(all))
			for _, tl := range all {
				out = append(out, ToolInfo{ID: tl.Name(), Description: tl.Description(), Parameters: tl.Parameters()})
			}
			return out, nil
		}).doc("Every tool with its JSON Schema parameters."),
	}
}
