// Package app is tandem's composition root: Start opens the store, builds every service with its
// dependencies (explicit constructors, no globals), serves them through the doors, and Close tears
// them down in order. It also holds what the commands of cmd/tandem do beyond parsing flags: the
// provider runtime the session loop reads (runtime.go), the data directory's owner (owner.go), the
// sandbox policy, the notification targets, `tandem serve`, `trust` and `discover`.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/agent/slash"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/atomicfile"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/door/acpagent/acphttp"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/mcpserver"
	"github.com/tandem-dev/tandem/internal/door/openapi"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/discovery"
	"github.com/tandem-dev/tandem/internal/infra/files"
	"github.com/tandem-dev/tandem/internal/infra/keys"
	"github.com/tandem-dev/tandem/internal/infra/lease"
	"github.com/tandem-dev/tandem/internal/infra/notify"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
	"github.com/tandem-dev/tandem/internal/infra/snapshot"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/infra/terminal"
	"github.com/tandem-dev/tandem/internal/infra/webpush"
	"github.com/tandem-dev/tandem/web"
)

// Options configure one tandem server process.
type Options struct {
	Hostname  string
	Port      int
	Directory string
	CORS      []string
	NoAuth    bool
	Paths     Paths
	Web       bool
	Logger    *slog.Logger
	Env       func(string) string
	// Heartbeat overrides the SSE heartbeat interval (tests).
	Heartbeat time.Duration
	// MCPApprovals is what happens to approvals when an MCP client cannot answer them (default deny).
	MCPApprovals mcpserver.Strategy
	// MCPTimeout bounds every approval an MCP client is asked (default mcpserver.DefaultTimeout).
	MCPTimeout time.Duration
	// Private is a server for one client process (`tandem run`): an ephemeral loopback port, no
	// state file for other local clients to find.
	Private bool
	// MDNS advertises the server on the LAN (only when bound off loopback).
	MDNS       bool
	MDNSDomain string
	// Lease is the data directory's lease when the caller took it already (Start then owns it);
	// nil: Start takes it, or fails with a *lease.HeldError naming the process that holds it.
	Lease lease.Lease
	// Database is a postgres:// URL: the store is that database, which several nodes may share
	// (empty: SQLite in the data directory, one node).
	Database string
	// NodeID names this node among those sharing Database (default: the host name and a random
	// suffix); a node restarted under the same ID takes its sessions back at once.
	NodeID string
	// Advertise is the URL other nodes forward requests for this node's sessions to (default: the
	// URL it listens on).
	Advertise string
}

// Main is a running server with everything it owns; tests start it the way the CLI does. The
// services it serves are the embedded ones, so the routes and the process share one set.
type Main struct {
	services
	opts        Options
	log         *slog.Logger
	db          *store.DB
	srv         *server.Server
	password    string
	generated   bool
	statePath   string
	unadvertise func()
	stopMCP     func()
	stopACP     func()
	snaps       *snapshot.Store
	lease       lease.Lease            // held from before the store opens until after it closes
	base        context.Context        // Start's context without its cancellation, for the teardown's deadlines
	webBase     atomic.Pointer[string] // the server's URL once it listens, for links in notifications

	// sandboxStatus is what the kernel enforces of the sandbox setting, for the banner.
	sandboxStatus sandbox.Status
}

// webURL is the server's own address, for the links in notifications ("" before it listens).
func (m *Main) webURL() string {
	if u := m.webBase.Load(); u != nil {
		return *u
	}
	return ""
}

// closeNotify stops the notifications: a delivery under way gets a few seconds to finish.
func (m *Main) closeNotify() {
	ctx, cancel := context.WithTimeout(m.base, 3*time.Second)
	defer cancel()
	m.notify.Close(ctx)
}

// services are the domain objects the routes serve; documentOnly builds the API without them.
type services struct {
	version   string
	dir       string
	paths     Paths
	bus       *bus.Bus
	sessions  *session.Service
	perms     *permission.Service
	questions *question.Service
	mcp       *mcpclient.Manager
	ptys      *terminal.Manager
	notify    *notify.Dispatcher
	runtime   *agentRuntime
	auth      *auth.Authority
	events    *routes.Events
	tools     func() []tool.Tool
	mcpHTTP   http.Handler // tandem as an MCP server over Streamable HTTP
	acpHTTP   http.Handler // tandem as an ACP agent over Streamable HTTP
	fileIndex *files.Index // the file lists of the directories clients search
	push      *webpush.Service
	env       func(string) string
	log       *slog.Logger
	sandbox   *sandbox.Policy // confines the agent's commands
	member    *member         // this node's part in a shared database; nil on one node
	storeKind string          // "sqlite" or "postgresql", for the health check
}

func (s services) api() *routes.API {
	projectID := func(context.Context, string) string { return "global" }
	grantScope := projectID
	if s.sessions != nil {
		projectID, grantScope = s.sessions.ProjectID, s.sessions.GrantScope
	}
	global := &routes.Global{Version: s.version, StateDir: s.paths.State, ConfigDir: s.paths.Config, ProjectID: projectID, Started: time.Now(), Store: s.storeKind}
	var owners routes.Owners // nil on one node
	var remoteTerminals func() []terminal.Info
	if s.member != nil {
		owners, global.Node, global.Cluster = s.member, s.member.node.ID(), s.member.health
		remoteTerminals = s.member.Terminals
	}
	return &routes.API{
		Owners: owners,
		Info: openapi.Info{Title: "tandem", Version: s.version,
			Description: "A coding-agent application server, wire-compatible with OpenCode's HTTP API."},
		Modules: []routes.Module{
			global,
			s.events,
			&routes.Login{Auth: s.auth},
			&routes.Sessions{Service: s.sessions},
			&routes.Shares{Service: s.sessions},
			&routes.Permissions{Service: s.perms, ProjectID: grantScope, Names: s.permissionNames},
			&routes.Configuration{Load: s.runtime.Load, Patch: s.patchConfig, PatchUser: s.patchUserConfig, Providers: s.runtime.Registry,
				SetKey: s.setKey, RemoveKey: s.removeKey, Sandbox: s.sandbox},
			&routes.Questions{Service: s.questions},
			&routes.MCP{Manager: s.mcp, Sessions: s.sessions},
			&routes.MCPServer{Handler: s.mcpHTTP},
			&routes.ACPServer{Handler: s.acpHTTP},
			&routes.Ptys{Manager: s.ptys, Remote: remoteTerminals},
			&routes.Probes{},
			&routes.Commands{Service: &slash.Service{Config: s.runtime.Load, Env: s.env, Sessions: s.sessions, Bus: s.bus, Logger: s.log, Sandbox: s.sandbox}},
			&routes.Tools{All: s.tools},
			&routes.Files{Index: s.fileIndex, ProjectID: projectID},
			&routes.Push{Service: s.push, Permissions: s.perms},
			&routes.Notify{Dispatcher: s.notify},
			&routes.Instance{Dispose: s.dispose, Directories: s.projectDirectories},
		},
	}
}

// API is the HTTP API without services behind it: its routes and its OpenAPI document
// (`tandem openapi`), the same as a running server's.
func API() *routes.API {
	return services{version: version, runtime: &agentRuntime{}, events: &routes.Events{}, tools: func() []tool.Tool { return nil }}.api()
}

// version is stamped by the release build (-ldflags "-X github.com/tandem-dev/tandem/internal/app.version=...").
var version = "0.1.0-dev"

// Version is tandem's version, as the server reports it.
func Version() string { return version }

// Start opens the database, wires the services and starts serving.
func Start(ctx context.Context, o Options) (*Main, error) {
	if o.Env == nil {
		o.Env = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []struct {
		v   *string
		env string
	}{{&o.Database, "TANDEM_DATABASE_URL"}, {&o.NodeID, "TANDEM_NODE_ID"}, {&o.Advertise, "TANDEM_ADVERTISE_URL"}} {
		if *d.v == "" {
			*d.v = o.Env(d.env)
		}
	}
	dir, err := ProjectDir(o.Directory)
	if err != nil {
		return nil, err
	}
	m := &Main{opts: o, log: o.Logger, lease: o.Lease, base: context.WithoutCancel(ctx), services: services{version: version, dir: dir, paths: o.Paths, fileIndex: files.NewIndex(), env: o.Env, log: o.Logger}}
	// What is built below is undone in reverse order when a later step fails; a started server
	// is Close's to tear down.
	var undo teardown
	defer undo.run()
	// One process owns a data directory: everything below (recovery above all) treats what the
	// store holds as this process's own.
	if m.lease == nil {
		if m.lease, err = lease.Acquire(o.Paths.Data, os.Getpid()); err != nil {
			return nil, err
		}
	}
	undo.push(func() { _ = m.lease.Release() })
	// A database that exists already was a server's before this one: its clients may come back.
	target := filepath.Join(o.Paths.Data, "tandem.db")
	_, statErr := os.Stat(target)
	restarted := statErr == nil
	if o.Database != "" {
		target = o.Database
	}
	m.db, err = store.Open(ctx, target)
	if err != nil {
		var unwritable *store.UnwritableError
		if errors.As(err, &unwritable) {
			return nil, fmt.Errorf("%w; make that file and its directory writable by this user (and check free disk space), or choose another data directory with --data-dir or TANDEM_DATA_DIR", err)
		}
		return nil, err
	}
	undo.push(func() { _ = m.db.Close() })
	m.storeKind = "sqlite"
	if shared, ok := m.db.Cluster(); ok {
		m.storeKind = "postgresql"
		if m.member, m.bus, err = joinCluster(ctx, m, shared, o); err != nil {
			return nil, err
		}
	} else {
		m.bus = bus.New(bus.Options{})
	}
	m.events = &routes.Events{Bus: m.bus, Heartbeat: o.Heartbeat}
	m.perms = permission.New(permission.Options{DB: m.db, Bus: m.bus, Logger: o.Logger})
	keys, err := keys.Open(filepath.Join(o.Paths.Data, keys.FileName))
	if err != nil {
		return nil, err
	}
	if m.runtime, err = newAgentRuntime(dir, o.Env, m.perms, keys); err != nil {
		return nil, err
	}
	undo.push(m.runtime.close)
	cfg, err := m.runtime.Load(dir)
	if err != nil {
		return nil, err
	}
	pcfg, err := permission.ParseConfig(cfg.Permission)
	if err != nil {
		return nil, err
	}
	if u := cfg.Untrusted; u != nil {
		o.Logger.Warn("the project's own configuration may only tighten your rules until you trust it: run `tandem trust "+u.Directory+"`",
			"file", u.File, "ignored", u.Ignored)
	}
	// A browser subscribing or going away adds or removes the unconfigured webpush target.
	m.push, err = webpush.Open(ctx, webpush.Options{DB: m.db, Logger: o.Logger, Changed: func() {
		cfg, err := m.runtime.Load(dir)
		if err != nil {
			o.Logger.Warn("notify targets not updated after a push subscription changed", "err", err)
			return
		}
		m.notify.SetTargets(notifyTargets(cfg.Notify, m.notify, m.push, m.push.Subscribed()))
	}})
	if err != nil {
		return nil, err
	}
	// Notifications follow every pending request from the first one on, restored ones included.
	nopts := notify.Options{Bus: m.bus, DB: m.db, Logger: o.Logger, WebURL: m.webURL}
	if m.member != nil {
		nopts.Node = m.member.node.ID()
	}
	if m.notify, err = notify.New(ctx, nopts); err != nil {
		return nil, err
	}
	undo.push(m.closeNotify)
	m.notify.SetTargets(notifyTargets(cfg.Notify, m.notify, m.push, m.push.Subscribed()))
	m.runtime.notify = func(c config.Config) {
		m.notify.SetTargets(notifyTargets(c.Notify, m.notify, m.push, m.push.Subscribed()))
	}
	sb := sandboxPolicy(cfg.Sandbox, o)
	m.sandbox, m.sandboxStatus = &sb, logSandbox(o.Logger, sb, dir)
	var mcpSandbox *sandbox.Policy
	if cfg.Sandbox.MCP {
		mcpSandbox = m.sandbox
	}
	m.questions = question.New(question.Options{Bus: m.bus, DB: m.db, Timeout: pcfg.Timeout, Logger: o.Logger})
	m.mcp = mcpclient.New(ctx, mcpclient.Options{Bus: m.bus, DB: m.db, Added: m.db, Directory: dir, Servers: cfg.MCP, ElicitationTimeout: pcfg.Timeout, Version: version, Logger: o.Logger, Sandbox: mcpSandbox})
	builtins := tool.Builtins(tool.Options{Sandbox: m.sandbox})
	m.tools = func() []tool.Tool {
		return append(append(builtins.All(), m.questions.Tool()), m.mcp.Tools()...)
	}
	m.snaps = snapshot.New(snapshot.Options{Dir: filepath.Join(o.Paths.Data, "snapshot"), Logger: o.Logger})
	var runner session.Runner // nil on one node
	if m.member != nil {
		runner = m.member
	}
	m.sessions = session.New(session.Options{DB: m.db, Bus: m.bus, Logger: o.Logger, Version: version, Snapshots: m.snaps, Runner: runner,
		// A session's own MCP servers (an editor's, added over ACP) are offered to that session
		// alone and go with it.
		Deleted: m.mcp.EndSession,
		Agent:   &session.Agent{Providers: m.runtime, Tools: m.tools, SessionTools: m.mcp.SessionTools, Permissions: m.perms, Questions: m.questions, Elicitations: m.mcp}})
	// What a crash or a graceful stop left waiting resumes its turn: approvals, questions, and MCP
	// elicitations (their call runs again once its server is connected); what cannot be resumed is
	// ended with its events.
	var cutOff int
	if m.member == nil {
		cutOff, err = m.recover(ctx, nil)
	} else {
		// Several nodes: each recovers the sessions it takes over, once it has joined.
		m.member.share()
	}
	if err == nil {
		err = m.mcp.Restore(ctx)
	}
	if err != nil {
		return nil, err
	}
	if restarted || cutOff > 0 {
		// Clients attached before a restart (a crash or a graceful one) come back without a cursor
		// the new process can honour, holding a state that may have changed since (config,
		// providers, recovered turns); for a while, every such connection is told to reload it.
		m.events.RefreshUntil = time.Now().Add(2 * time.Minute)
	}
	// MCP servers connect in the background so that a slow one never delays readiness; their
	// status is visible at GET /mcp meanwhile.
	mcpCtx, stopMCP := context.WithCancel(context.WithoutCancel(ctx))
	mcpStarted := make(chan struct{})
	go func() { defer close(mcpStarted); m.mcp.Start(mcpCtx) }()
	m.stopMCP = func() { stopMCP(); <-mcpStarted; _ = m.mcp.Close() }
	undo.push(m.stopMCP)
	m.ptys = terminal.NewManager(terminal.Options{Bus: m.bus, Logger: o.Logger})
	undo.push(m.ptys.Close)

	user := o.Env("TANDEM_SERVER_USERNAME")
	if user == "" {
		user = "tandem"
	}
	m.password = o.Env("TANDEM_SERVER_PASSWORD")
	if m.password == "" && !o.NoAuth {
		m.password, m.generated = auth.GeneratePassword(), true
	}
	creds := auth.Credentials{Username: user, Password: m.password, Disabled: o.NoAuth}
	// Browser logins survive a restart: their signing secret is kept beside the database.
	if m.member != nil {
		// Several nodes: a browser signed in at any node is signed in at all of them.
		m.auth, err = m.member.openAuth(ctx, creds, filepath.Join(o.Paths.Data, auth.KeyFileName), !m.generated)
	} else {
		m.auth, err = auth.Open(creds, filepath.Join(o.Paths.Data, auth.KeyFileName), !m.generated)
	}
	if err != nil {
		return nil, err
	}

	m.mcpHTTP = m.mcpHTTPHandler()
	// ACP agents of remote editors drive this server through its own API, with its credentials.
	acp := acphttp.New(ctx, acphttp.Options{Version: version, Logger: o.Logger, Client: m.Client})
	m.acpHTTP, m.stopACP = acp, acp.Close
	undo.push(m.stopACP)

	// The UI's page carries the first screen's data for a signed-in browser, read through the
	// server's own routes (it exists once Listen returns, before anything is served).
	var served atomic.Pointer[server.Server]
	ui := web.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		routes.WriteError(w, r, notFoundRoute(r))
	}), func(r *http.Request) []byte {
		if s := served.Load(); s != nil {
			return s.Snapshot(r)
		}
		return nil
	})
	// A headless server still serves the pages of its read-only links: they are its own output.
	fallback := uiPages(ui, false)
	if o.Web {
		fallback = uiPages(ui, true)
	}
	m.srv, err = server.Listen(server.Config{
		Hostname: o.Hostname, Port: o.Port, AnyPort: o.Private, Directory: dir, CORS: o.CORS, Auth: m.auth,
		PasswordSet: !m.generated && m.password != "", API: m.api(), Fallback: fallback, Logger: o.Logger,
	})
	if err != nil {
		return nil, err
	}
	served.Store(m.srv)
	url := m.srv.URL()
	m.webBase.Store(&url)
	m.srv.Serve()
	if m.member != nil {
		advertise := o.Advertise
		if advertise == "" {
			advertise = url
		}
		if err := m.member.start(ctx, advertise); err != nil {
			_ = m.Close()
			return nil, err
		}
	}
	// From here on the server runs: Close tears it down, in its own order.
	undo.disarm()
	m.unadvertise = func() {}
	if o.MDNS {
		stop, err := discovery.Advertise(ctx, discovery.Options{Host: o.Hostname, Port: m.srv.Port(), Domain: o.MDNSDomain, Logger: o.Logger})
		if err != nil {
			_ = m.Close()
			return nil, err
		}
		m.unadvertise = stop
	}
	if err := m.lease.Announce(lease.Owner{PID: os.Getpid(), URL: url, Username: m.Username(), Password: m.password, Since: time.Now().UTC()}); err != nil {
		o.Logger.Warn("the data directory's lease does not say where this server listens", "err", err)
	}
	if !o.Private {
		if err := m.writeState(); err != nil {
			o.Logger.Warn("state file not written", "err", err)
		}
	}
	o.Logger.Info("listening", "url", m.srv.URL(), "dir", dir, "db", m.db.Path())
	// The project's first snapshot (every file into the shadow repository) starts now, so that the
	// first turn does not wait for it.
	m.snaps.Warm(ctx, session.Worktree(dir))
	return m, nil
}

// recover resumes or ends what a stop left waiting in the sessions only selects (nil: all): at
// start, and on several nodes when this node takes over the sessions of one that died.
func (m *Main) recover(ctx context.Context, only store.SessionFilter) (int, error) {
	cutOff, err := m.sessions.Recover(ctx, only)
	for _, end := range []func(context.Context, store.SessionFilter) error{m.questions.EndInterrupted, m.mcp.EndInterrupted} {
		if err == nil {
			err = end(ctx, only)
		}
	}
	return cutOff, err
}

// teardown is the cleanup stack of Start: what it has built so far, undone in reverse order when
// a later step fails.
type teardown []func()

func (t *teardown) push(undo func()) { *t = append(*t, undo) }

// run undoes everything pushed, the last first; nothing once disarmed.
func (t *teardown) run() {
	for i := len(*t) - 1; i >= 0; i-- {
		(*t)[i]()
	}
	*t = nil
}

// disarm hands what was built to its owner: run undoes nothing from then on.
func (t *teardown) disarm() { *t = nil }

// uiPages passes the pages of read-only links (/s/{token}) and the UI's assets to the web UI, and
// the UI itself (/) when the whole UI is served; everything else is an unknown route.
func uiPages(ui http.Handler, whole bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		if read && (strings.HasPrefix(r.URL.Path, "/assets/") || web.IsSharePage(r.URL.Path) || whole && (r.URL.Path == "/" || r.URL.Path == web.PairPage || web.IsAppFile(r.URL.Path))) {
			ui.ServeHTTP(w, r)
			return
		}
		routes.WriteError(w, r, notFoundRoute(r))
	})
}

// ProjectDir is the absolute project directory --dir names (default: the current directory), or
// an error when it is no directory.
func ProjectDir(d string) (string, error) {
	if d == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		d = wd
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--dir: %s is not a directory", abs)
	}
	return abs, nil
}

// URL is the server's address.
func (m *Main) URL() string { return m.srv.URL() }

// Username is the accepted user name.
func (m *Main) Username() string { return m.auth.Username() }

// Done reports when serving ends on its own (a listener failure).
func (m *Main) Done() <-chan error { return m.srv.Done() }

// Client is a client of this server with its credentials, for the doors that run beside it.
func (m *Main) Client() *client.Client { return client.New(m.URL(), m.Username(), m.password) }

// Generated reports whether the password was generated: only this process knows it, so no other
// client can answer what this server leaves pending.
func (m *Main) Generated() bool { return m.generated }

// Password is the password clients of this server send (empty with authentication off).
func (m *Main) Password() string { return m.password }

// SetFiles routes a session's file tools through f (an editor's files, over ACP) until remove.
func (m *Main) SetFiles(sessionID string, f tool.Files) (remove func()) {
	return m.sessions.SetFiles(sessionID, f)
}

// Config is the configuration as seen from dir, read through the server's loader.
func (m *Main) Config(dir string) (config.Config, error) { return m.runtime.Load(dir) }

// NotifyTargets are the notification targets in effect.
func (m *Main) NotifyTargets() []notify.Target { return m.notify.Targets() }

func (m *Main) writeState() error {
	m.statePath = client.StateFile(m.opts.Paths.State)
	body, err := json.MarshalIndent(client.State{URL: m.URL(), Username: m.Username(), Password: m.password, PID: os.Getpid()}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(m.statePath, body, 0o600)
}

// Announce prints where the server is and how to authenticate.
func (m *Main) Announce(w io.Writer) {
	fmt.Fprintf(w, "tandem %s listening on %s\n", version, m.URL())
	switch {
	case m.auth.Disabled():
		fmt.Fprintln(w, "  authentication: OFF (--no-auth, loopback only)")
	case m.generated:
		fmt.Fprintf(w, "  user: %s  password: %s  (generated; saved with the URL in %s)\n", m.Username(), m.password, m.statePath)
	default:
		fmt.Fprintf(w, "  user: %s  password: from TANDEM_SERVER_PASSWORD\n", m.Username())
	}
	// The hint is a command that works as printed: the generated password is on the line above
	// anyway, and a chosen one stays in the variable it came from.
	switch {
	case m.auth.Disabled():
	case m.generated:
		fmt.Fprintf(w, "  try: curl -u '%s:%s' %ssession\n", m.Username(), m.password, m.URL())
	default:
		fmt.Fprintf(w, "  try: curl -u \"%s:$TANDEM_SERVER_PASSWORD\" %ssession\n", m.Username(), m.URL())
	}
	fmt.Fprintf(w, "  sandbox: %s\n", m.sandboxStatus)
}

// OpenBrowser opens the UI with a one-time login link (or prints it).
func (m *Main) OpenBrowser(w io.Writer, noOpen bool) {
	link := m.URL() + "auth/login?ticket=" + m.auth.IssueTicket()
	fmt.Fprintf(w, "  web UI login link (one-time, 2 minutes): %s\n", link)
	if noOpen {
		return
	}
	if err := openURL(link); err != nil {
		fmt.Fprintf(w, "  (could not open a browser: %v; open the link above)\n", err)
	}
}

func openURL(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if _, err := exec.LookPath("xdg-open"); err != nil {
			return errors.New("xdg-open not found")
		}
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// Close shuts down gracefully: SSE clients get a final event, in-flight requests finish, the
// database is checkpointed and closed.
func (m *Main) Close() error {
	ctx, cancel := context.WithTimeout(m.base, 10*time.Second)
	defer cancel()
	m.unadvertise()
	m.stopACP() // its agents call this server's API: before the listener goes
	m.sessions.Shutdown(ctx)
	m.snaps.Close()
	m.ptys.Close()
	m.stopMCP()
	if m.member != nil {
		m.member.node.Close() // the other nodes take this node's sessions over at once
	}
	m.bus.Close() // every event stream writes server.shutdown and ends
	m.closeNotify()
	streamsDone := make(chan struct{})
	go func() { m.events.Wait(); close(streamsDone) }()
	select {
	case <-streamsDone:
	case <-ctx.Done():
	}
	err := m.srv.Shutdown(ctx)
	m.runtime.close()
	if cerr := m.db.Close(); err == nil {
		err = cerr
	}
	if m.statePath != "" {
		if s, rerr := client.ReadState(m.opts.Paths.State); rerr == nil && s.PID == os.Getpid() {
			_ = os.Remove(m.statePath)
		}
	}
	if lerr := m.lease.Release(); err == nil {
		err = lerr
	}
	return err
}

func notFoundRoute(r *http.Request) error {
	return errs.E(errs.NotFound, "No route for %s %s", r.Method, r.URL.Path)
}
