package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tandem-dev/tandem/internal/door/mcpserver"
	"github.com/tandem-dev/tandem/internal/infra/discovery"
	"github.com/tandem-dev/tandem/internal/infra/lease"
	"github.com/tandem-dev/tandem/internal/infra/reaper"
)

// serveFlags are the flags of `tandem serve` and `tandem web`.
type serveFlags struct {
	port      int
	hostname  string
	cors      []string
	printLogs bool
	logLevel  string
	dir       string
	dataDir   string
	noAuth    bool
	noOpen    bool
	mdns      bool
	mdnsDom   string
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
			if f.mdns && !cmd.Flags().Changed("hostname") {
				f.hostname = "0.0.0.0" // advertising a loopback server would reach no one
			}
			return runServe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, web)
		},
	}
	if web {
		cmd.Use, cmd.Short = "web", "Start the server with the browser UI and open it"
		cmd.Long = "Like serve, plus the browser UI. The browser is opened with a one-time login link; the password never\nappears in a URL."
		cmd.Flags().BoolVar(&f.noOpen, "no-open", false, "print the login link instead of opening a browser")
	}
	fl := cmd.Flags()
	f.addServerFlags(fl)
	fl.BoolVar(&f.mdns, "mdns", false, "advertise the server on the LAN over mDNS as tandem-<port> (makes the default hostname 0.0.0.0)")
	fl.StringVar(&f.mdnsDom, "mdns-domain", discovery.DefaultDomain, "host name announced over mDNS")
	fl.StringVar(&f.mcpApprovals, "mcp-approvals", string(mcpserver.Deny), "for MCP clients (/mcp-server) without elicitation: deny, allow-within-rules or wait")
	fl.DurationVar(&f.mcpTimeout, "mcp-approval-timeout", mcpserver.DefaultTimeout, "how long an approval asked of an MCP client waits before it is rejected")
	return cmd
}

// addServerFlags registers the flags of the HTTP server, for `serve` and `web` and for the stdio
// doors (`mcp`, `acp`) that run one in-process.
func (f *serveFlags) addServerFlags(fl *pflag.FlagSet) {
	fl.IntVar(&f.port, "port", 0, "port to listen on (default 4096, or a free port when 4096 is taken)")
	fl.StringVar(&f.hostname, "hostname", "127.0.0.1", "address to listen on; anything but loopback requires TANDEM_SERVER_PASSWORD")
	fl.StringArrayVar(&f.cors, "cors", nil, "an extra origin allowed to call the API (repeatable)")
	fl.BoolVar(&f.printLogs, "print-logs", false, "print logs to stderr instead of the log file")
	fl.StringVar(&f.logLevel, "log-level", "INFO", "DEBUG, INFO, WARN or ERROR")
	fl.StringVar(&f.dir, "dir", "", "project directory (default: the current directory)")
	fl.StringVar(&f.dataDir, "data-dir", "", "where the database lives (default $TANDEM_DATA_DIR, else $XDG_DATA_HOME/tandem)")
	fl.BoolVar(&f.noAuth, "no-auth", false, "turn authentication off (loopback only)")
}

// startOptions are the Start options these flags give, for paths and logger already resolved.
func (f *serveFlags) startOptions(paths Paths, logger *slog.Logger) Options {
	return Options{Hostname: f.hostname, Port: f.port, Directory: f.dir, CORS: f.cors, NoAuth: f.noAuth,
		Paths: paths, Logger: logger, Env: os.Getenv}
}

func runServe(ctx context.Context, stdout, stderr io.Writer, f serveFlags, web bool) error {
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return err
	}
	strategy, err := mcpserver.ParseStrategy(f.mcpApprovals)
	if err != nil {
		return fmt.Errorf("--mcp-approvals: %w", err)
	}
	paths, err := resolvePaths(f.dataDir)
	if err != nil {
		return err
	}
	logger, closeLog, err := openLogger(paths, f.printLogs, stderr, level)
	if err != nil {
		return err
	}
	defer closeLog()
	// A second server on the data directory stops here, before it starts or sweeps anything.
	held, err := lease.Acquire(paths.Data, os.Getpid())
	if err != nil {
		return err
	}
	stopReaper := guardChildren(logger)
	defer stopReaper()

	o := f.startOptions(paths, logger)
	o.Lease = held
	o.Web, o.MDNS, o.MDNSDomain, o.MCPApprovals, o.MCPTimeout = web, f.mdns, f.mdnsDom, strategy, f.mcpTimeout
	m, err := Start(ctx, o)
	if err != nil {
		return err
	}
	m.Announce(stdout)
	if web {
		m.OpenBrowser(stdout, f.noOpen)
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "shutting down…")
	case err := <-m.Done():
		if err != nil {
			m.Close()
			return err
		}
	}
	return m.Close()
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("--log-level: expected DEBUG, INFO, WARN or ERROR, got %q", s)
	}
	return l, nil
}

// Paths are where tandem keeps its files.
type Paths struct {
	Data   string // the database
	State  string // the state file with the URL and password, and the log
	Config string // the user config directory
}

func resolvePaths(dataDir string) (Paths, error) {
	home, _ := os.UserHomeDir()
	xdg := func(env, fallback string) string {
		if v := os.Getenv(env); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "tandem")
		}
		return filepath.Join(home, fallback, "tandem")
	}
	p := Paths{Data: dataDir, State: xdg("XDG_STATE_HOME", ".local/state"), Config: xdg("XDG_CONFIG_HOME", ".config")}
	if p.Data == "" {
		p.Data = os.Getenv("TANDEM_DATA_DIR")
	}
	if p.Data == "" {
		p.Data = xdg("XDG_DATA_HOME", ".local/share")
	}
	for _, d := range []string{p.Data, p.State} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return Paths{}, fmt.Errorf("cannot create the directory %s: %w; make its parent writable by this user, or choose another data directory with --data-dir or TANDEM_DATA_DIR", d, err)
		}
	}
	return p, nil
}

func openLogger(p Paths, printLogs bool, stderr io.Writer, level slog.Level) (*slog.Logger, func(), error) {
	opts := &slog.HandlerOptions{Level: level}
	if printLogs {
		return slog.New(slog.NewTextHandler(stderr, opts)), func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(p.State, "tandem.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open log file: %w", err)
	}
	return slog.New(slog.NewTextHandler(f, opts)), func() { f.Close() }, nil
}

func newOpenAPICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "openapi",
		Short: "Print the OpenAPI 3.1 document",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := documentOnly()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(doc, '\n'))
			return err
		},
	}
}

// guardChildren tags this run's environment, so that every process the server starts carries the
// tag, sweeps what dead runs left behind and starts the watchdog that kills this run's processes
// when the server dies (package reaper). The returned function releases the watchdog, which then
// kills whatever is still running.
func guardChildren(logger *slog.Logger) func() {
	tag := reaper.Tag()
	if err := reaper.Tagged(tag); err != nil {
		logger.Warn("processes are not tagged; a crash may leave commands running", "err", err)
		return func() {}
	}
	if !reaper.Supported {
		return func() {}
	}
	if n := reaper.Sweep(tag); n > 0 {
		logger.Warn("killed processes left running by a server that died", "count", n)
	}
	exe, err := os.Executable()
	if err == nil {
		var pipe *os.File
		if pipe, err = reaper.Watchdog(exe, tag); err == nil {
			return func() { pipe.Close() }
		}
	}
	logger.Warn("no watchdog; a crash may leave commands running", "err", err)
	return func() {}
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
