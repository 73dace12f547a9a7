package app

import (
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/door/mcpserver"
	"github.com/tandem-dev/tandem/internal/door/routes"
)

// mcpHTTPHandler serves the process's MCP server over Streamable HTTP, with the approval strategy
// and timeout of the process's options. An MCP session's default directory is the one its first
// request names (x-opencode-directory, as `tandem mcp --dir` beside a running server sends), else
// the server's: one MCP server per directory carries every session of it.
//
// Protocol 2026-07-28 and later is stateless (no Mcp-Session-Id; approvals come back as
// input-required results), and the go-sdk serves it only from a stateless handler, while older
// clients need sessions for their elicitations: a request that names a stateless version in its
// Mcp-Protocol-Version header goes to a stateless handler of the same server, every other to the
// stateful one. So HTTP serves every version `tandem mcp` serves over stdio.
func (m *Main) mcpHTTPHandler() http.Handler {
	var mu sync.Mutex
	servers := map[string]*mcp.Server{}
	server := func(r *http.Request) *mcp.Server {
		dir := routes.DirectoryOf(r.Context())
		if dir == "" {
			dir = m.dir
		}
		mu.Lock()
		defer mu.Unlock()
		if servers[dir] == nil {
			servers[dir] = m.mcpServerIn(dir, m.opts.MCPApprovals, m.opts.MCPTimeout).MCP()
		}
		return servers[dir]
	}
	stateful := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Logger: m.log})
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Logger: m.log, Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mcpserver.Stateless(r.Header.Get("Mcp-Protocol-Version")) && r.Header.Get("Mcp-Session-Id") == "" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// MCPServer builds the MCP server over this process's services (`tandem mcp` over stdio).
func (m *Main) MCPServer(strategy mcpserver.Strategy, timeout time.Duration) *mcpserver.Server {
	return m.mcpServerIn(m.dir, strategy, timeout)
}

// mcpServerIn builds an MCP server whose new sessions start in dir.
func (m *Main) mcpServerIn(dir string, strategy mcpserver.Strategy, timeout time.Duration) *mcpserver.Server {
	return mcpserver.New(mcpserver.Options{Sessions: m.sessions, Permissions: m.perms, Questions: m.questions, Elicitations: m.mcp, Bus: m.bus,
		Directory: dir, Version: version, Timeout: timeout, Strategy: strategy, Logger: m.log})
}
