package main

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
	"github.com/tandem-dev/tandem/internal/door/routes"
)

// mcpFlags are the flags of `tandem mcp`.
type mcpFlags struct {
	serve  serveFlags
	attach string
}

// newMCPCommand is `tandem mcp`: tandem as an MCP server over stdio. The HTTP listener runs as in
// `serve`, so the web UI, the TUI and curl see the same sessions and pending approvals.
func newMCPCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve tandem as an MCP server over stdio",
		Long: "Serve MCP over stdin/stdout with the tools tandem, tandem-reply, tandem-query and tandem-sessions.\n" +
			"The HTTP server runs as well (same sessions, same pending list). Approvals go to the MCP client as\n" +
			"form elicitations; clients without elicitation get --approvals (deny, allow-within-rules, wait).\n" +
			"With --attach URL it starts no server: it relays MCP to that running server's /mcp-server endpoint.\n" +
			"Without it, when another tandem owns the data directory (tandem serve), it relays to that one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			strategy, err := mcpserver.ParseStrategy(f.serve.mcpApprovals)
			if err != nil {
				return err
			}
			level, err := parseLevel(f.serve.logLevel)
			if err != nil {
				return err
			}
			paths, err := resolvePaths(f.serve.dataDir)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("attach") {
				server, err := client.Locate(f.attach, os.Getenv, paths.State)
				if err != nil {
					return fmt.Errorf("--attach: %w", err)
				}
				remote := &mcp.StreamableClientTransport{Endpoint: server.URL() + "/mcp-server", MaxRetries: -1, HTTPClient: server.HTTPClient()}
				return relayMCP(cmd.Context(), &mcp.StdioTransport{}, remote)
			}
			// stdout carries the protocol: logs go to the log file, or stderr with --print-logs.
			logger, closeLog, err := openLogger(paths, f.serve.printLogs, cmd.ErrOrStderr(), level)
			if err != nil {
				return err
			}
			defer closeLog()
			ctx := cmd.Context()
			o := f.serve.startOptions(paths, logger)
			o.MCPApprovals, o.MCPTimeout = strategy, f.serve.mcpTimeout
			m, owner, err := startOrUse(ctx, o, "tandem mcp", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if owner != nil {
				// The owner runs on this machine: the tasks start in this door's directory, as they
				// would in a server of its own.
				dir, err := projectDir(f.serve.dir)
				if err != nil {
					return err
				}
				owner = owner.InDirectory(dir)
				remote := &mcp.StreamableClientTransport{Endpoint: owner.URL() + "/mcp-server", MaxRetries: -1, HTTPClient: owner.HTTPClient()}
				return relayMCP(ctx, &mcp.StdioTransport{}, remote)
			}
			defer m.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "tandem mcp: HTTP server on %s\n", m.URL())
			return m.mcpServer(strategy, f.serve.mcpTimeout).MCP().Run(ctx, &mcp.StdioTransport{})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.serve.mcpApprovals, "approvals", string(mcpserver.Deny), "for clients without elicitation: deny, allow-within-rules or wait")
	fl.DurationVar(&f.serve.mcpTimeout, "approval-timeout", mcpserver.DefaultTimeout, "how long an approval waits before it is rejected")
	fl.StringVar(&f.attach, "attach", "", "relay to the running tandem server at this URL instead of starting one (\"local\": the one `tandem serve` started here)")
	f.serve.addServerFlags(fl)
	return cmd
}

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

// mcpServer builds the MCP server over this process's services.
func (m *Main) mcpServer(strategy mcpserver.Strategy, timeout time.Duration) *mcpserver.Server {
	return m.mcpServerIn(m.dir, strategy, timeout)
}

// mcpServerIn builds an MCP server whose new sessions start in dir.
func (m *Main) mcpServerIn(dir string, strategy mcpserver.Strategy, timeout time.Duration) *mcpserver.Server {
	return mcpserver.New(mcpserver.Options{Sessions: m.sessions, Permissions: m.perms, Questions: m.questions, Elicitations: m.mcp, Bus: m.bus,
		Directory: dir, Version: version, Timeout: timeout, Strategy: strategy, Logger: m.log})
}
