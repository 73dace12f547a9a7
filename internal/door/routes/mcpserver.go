package routes

import (
	"net/http"
)

// MCPServerPath is where tandem serves MCP over Streamable HTTP. OpenCode's own /mcp/{name} routes
// manage MCP client connections, so the server side lives on a path no server name can collide with.
const MCPServerPath = "/mcp-server"

// MCPServer serves tandem itself as an MCP server (Streamable HTTP) behind the same auth and Origin
// rules as every other route.
type MCPServer struct {
	Handler http.Handler // the go-sdk Streamable HTTP handler; nil only when building the document
}

// Ops declares the Streamable HTTP endpoint: POST for messages, GET for the server's stream, DELETE
// to end an MCP session.
func (m *MCPServer) Ops() []Op {
	serve := func(w http.ResponseWriter, r *http.Request) {
		if m.Handler == nil {
			writeError(w, r, notFound("MCP server not running"))
			return
		}
		m.Handler.ServeHTTP(w, r)
	}
	const about = "tandem as an MCP server over Streamable HTTP (protocols 2026-07-28 down to 2025-03-26): the tools tandem, tandem-reply, " +
		"tandem-query and tandem-sessions; approvals arrive as elicitation/create requests on the session's stream, or on " +
		"2026-07-28 (stateless, no Mcp-Session-Id) as input-required results of the tools/call."
	return []Op{
		raw(http.MethodPost, MCPServerPath, "mcpServer.post", "Send MCP messages", nil, nil, "application/json", serve).doc(about),
		raw(http.MethodGet, MCPServerPath, "mcpServer.stream", "Open the MCP server's stream", nil, nil, "text/event-stream", serve).doc(about),
		raw(http.MethodDelete, MCPServerPath, "mcpServer.end", "End an MCP session", nil, nil, "application/json", serve).doc(about),
	}
}
