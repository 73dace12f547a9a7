package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
)

// StdioDoor says how a door that speaks its protocol on stdin/stdout (mcp, acp, app-server) reaches
// its server.
type StdioDoor struct {
	Name      string  // "tandem acp", for the messages
	Options   Options // Start's options, for a server of its own; Logger is set by OpenStdioDoor
	PrintLogs bool    // logs to Stderr instead of the log file
	Level     slog.Level
	Attach    string // --attach; AttachSet: the flag was given
	AttachSet bool
	Stderr    io.Writer
}

// Reached is the server a stdio door drives: the one --attach names, the data directory's owner,
// or one started in this process (Main; nil otherwise).
type Reached struct {
	Client *client.Client
	Main   *Main
	Logger *slog.Logger
	close  func()
}

// Close stops what OpenStdioDoor started.
func (r *Reached) Close() { r.close() }

// OpenStdioDoor reaches the door's server. stdout carries the protocol, so logs go to the log file,
// or to Stderr with PrintLogs.
func OpenStdioDoor(ctx context.Context, d StdioDoor) (*Reached, error) {
	logger, closeLog, err := OpenLogger(d.Options.Paths, d.PrintLogs, d.Stderr, d.Level)
	if err != nil {
		return nil, err
	}
	d.Options.Logger = logger
	c, m, err := Door(ctx, d.Options, d.Attach, d.AttachSet, d.Name, d.Stderr)
	if err != nil {
		closeLog()
		return nil, err
	}
	r := &Reached{Client: c, Main: m, Logger: logger, close: closeLog}
	if m != nil {
		r.close = func() { m.Close(); closeLog() }
	}
	return r, nil
}

// ServeMCP is `tandem mcp`: MCP on stdin/stdout. With --attach, or when another tandem owns the data
// directory, it relays to that server's /mcp-server endpoint; otherwise it serves from a server
// started in this process, whose approvals an MCP client without elicitation settles by strategy.
func ServeMCP(ctx context.Context, d StdioDoor, strategy mcpserver.Strategy) error {
	relay := func(server *client.Client) error {
		remote := &mcp.StreamableClientTransport{Endpoint: server.URL() + "/mcp-server", MaxRetries: -1, HTTPClient: server.HTTPClient()}
		return mcpserver.Relay(ctx, &mcp.StdioTransport{}, remote)
	}
	if d.AttachSet {
		server, err := client.Locate(d.Attach, os.Getenv, d.Options.Paths.State)
		if err != nil {
			return fmt.Errorf("--attach: %w", err)
		}
		return relay(server)
	}
	logger, closeLog, err := OpenLogger(d.Options.Paths, d.PrintLogs, d.Stderr, d.Level)
	if err != nil {
		return err
	}
	defer closeLog()
	o := d.Options
	o.Logger, o.MCPApprovals = logger, strategy
	m, owner, err := StartOrUse(ctx, o, d.Name, d.Stderr)
	if err != nil {
		return err
	}
	if owner != nil {
		// The owner runs on this machine: the tasks start in this door's directory, as they would
		// in a server of its own.
		dir, err := ProjectDir(o.Directory)
		if err != nil {
			return err
		}
		return relay(owner.InDirectory(dir))
	}
	defer m.Close()
	fmt.Fprintf(d.Stderr, "%s: HTTP server on %s\n", d.Name, m.URL())
	return m.MCPServer(strategy, o.MCPTimeout).MCP().Run(ctx, &mcp.StdioTransport{})
}
