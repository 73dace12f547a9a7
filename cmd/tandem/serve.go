package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
	"github.com/tandem-dev/tandem/internal/infra/discovery"
	"github.com/tandem-dev/tandem/internal/infra/reaper"
)

// serveFlags are the flags of `tandem serve` and `tandem web`.
type serveFlags struct {
	start     app.Options // the flags that are Start's own options
	printLogs bool
	logLevel  string
	dataDir   string
	noOpen    bool
	// What the MCP server (/mcp-server, `tandem mcp`) does with approvals a client cannot answer.
	mcpApprovals string
	mcpTimeout   time.Duration
}

func newServeCommand(web bool) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Start the headless server",
		Long: "Start the server on 127.0.0.1 (port 4096, or a free one). Authentication is always on: with no\n" +
			"TANDEM_SERVER_PASSWORD a password is generated, printed, and saved for local clients.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.start.MDNS && !cmd.Flags().Changed("hostname") {
				f.start.Hostname = "0.0.0.0" // advertising a loopback server would reach no one
			}
			paths, level, err := f.resolve()
			if err != nil {
				return err
			}
			strategy, err := mcpserver.ParseStrategy(f.mcpApprovals)
			if err != nil {
				return fmt.Errorf("--mcp-approvals: %w", err)
			}
			logger, closeLog, err := app.OpenLogger(paths, f.printLogs, cmd.ErrOrStderr(), level)
			if err != nil {
				return err
			}
			defer closeLog()
			o := f.options(paths, logger)
			o.Web, o.MCPApprovals, o.MCPTimeout = web, strategy, f.mcpTimeout
			return app.Serve(cmd.Context(), cmd.OutOrStdout(), o, f.noOpen)
		},
	}
	if web {
		cmd.Use, cmd.Short = "web", "Start the server with the browser UI and open it"
		cmd.Long = "Like serve, plus the browser UI. The browser is opened with a one-time login link; the password never\nappears in a URL."
		cmd.Flags().BoolVar(&f.noOpen, "no-open", false, "print the login link instead of opening a browser")
	}
	fl := cmd.Flags()
	f.addServerFlags(fl)
	fl.BoolVar(&f.start.MDNS, "mdns", false, "advertise the server on the LAN over mDNS as tandem-<port> (makes the default hostname 0.0.0.0)")
	fl.StringVar(&f.start.MDNSDomain, "mdns-domain", discovery.DefaultDomain, "host name announced over mDNS")
	fl.StringVar(&f.mcpApprovals, "mcp-approvals", string(mcpserver.Deny), "for MCP clients (/mcp-server) without elicitation: deny, allow-within-rules or wait")
	fl.DurationVar(&f.mcpTimeout, "mcp-approval-timeout", mcpserver.DefaultTimeout, "how long an approval asked of an MCP client waits before it is rejected")
	fl.StringVar(&f.start.Database, "database", "", "a postgres:// URL several nodes share (default $TANDEM_DATABASE_URL, else SQLite in the data directory)")
	fl.StringVar(&f.start.NodeID, "node-id", "", "this node's name among those sharing --database (default $TANDEM_NODE_ID, else host name and a random suffix)")
	fl.StringVar(&f.start.Advertise, "advertise", "", "the URL other nodes forward this node's requests to (default $TANDEM_ADVERTISE_URL, else the URL it listens on)")
	return cmd
}

// addServerFlags registers the flags of the HTTP server, for `serve` and `web` and for the stdio
// doors (`mcp`, `acp`) that run one in-process.
func (f *serveFlags) addServerFlags(fl *pflag.FlagSet) {
	fl.IntVar(&f.start.Port, "port", 0, "port to listen on (default 4096, or a free port when 4096 is taken)")
	fl.StringVar(&f.start.Hostname, "hostname", "127.0.0.1", "address to listen on; anything but loopback requires TANDEM_SERVER_PASSWORD")
	fl.StringArrayVar(&f.start.CORS, "cors", nil, "an extra origin allowed to call the API (repeatable)")
	fl.BoolVar(&f.printLogs, "print-logs", false, "print logs to stderr instead of the log file")
	fl.StringVar(&f.logLevel, "log-level", "INFO", "DEBUG, INFO, WARN or ERROR")
	fl.StringVar(&f.start.Directory, "dir", "", "project directory (default: the current directory)")
	fl.StringVar(&f.dataDir, "data-dir", "", "where the database lives (default $TANDEM_DATA_DIR, else $XDG_DATA_HOME/tandem)")
	fl.BoolVar(&f.start.NoAuth, "no-auth", false, "turn authentication off (loopback only)")
}

// resolve checks --log-level and finds (and makes) the data directories these flags name.
func (f *serveFlags) resolve() (app.Paths, slog.Level, error) {
	level, err := app.ParseLevel(f.logLevel)
	if err != nil {
		return app.Paths{}, 0, err
	}
	paths, err := app.ResolvePaths(f.dataDir)
	return paths, level, err
}

// options are the Start options of these flags, for paths and logger resolved.
func (f *serveFlags) options(paths app.Paths, logger *slog.Logger) app.Options {
	o := f.start
	o.Paths, o.Logger, o.Env = paths, logger, os.Getenv
	return o
}

// stdioDoor is how the stdio door name (mcp, acp, app-server) with these flags reaches its server.
func (f *serveFlags) stdioDoor(cmd *cobra.Command, name, attach string) (app.StdioDoor, error) {
	paths, level, err := f.resolve()
	if err != nil {
		return app.StdioDoor{}, err
	}
	return app.StdioDoor{Name: name, Options: f.options(paths, nil), PrintLogs: f.printLogs, Level: level,
		Attach: attach, AttachSet: cmd.Flags().Changed("attach"), Stderr: cmd.ErrOrStderr()}, nil
}

func newOpenAPICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "openapi",
		Short: "Print the OpenAPI 3.1 document",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := app.API().Document()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(doc, '\n'))
			return err
		},
	}
}

func newWatchdogCommand() *cobra.Command {
	return &cobra.Command{
		Use:    reaper.WatchdogCommand + " TAG",
		Short:  "Kill the processes of a server run once the server is gone (started by serve)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reaper.Guard(cmd.InOrStdin(), args[0])
			return nil
		},
	}
}
