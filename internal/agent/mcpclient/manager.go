// Package mcpclient is tandem's MCP client: it runs the MCP servers named in the config or added over the
// API (local ones as child processes over stdio, remote ones over Streamable HTTP), reports their
// status in OpenCode's shape, offers each server's tools to the agent as "<server>_<tool>", and turns
// every elicitation a server sends into a pending request a person answers over REST.
//
// Elicitations follow the MCP 2025-11-25 specification: form and URL mode are both declared, answers
// are checked against the requested schema before anything is sent (so a typo costs the person a 400,
// not the tool call), URL mode never opens anything by itself, and a -32042 "URL elicitation
// required" tool error becomes a pending URL elicitation after which the call is retried.
package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/process"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// protocolVersion is pinned because every MCP server in the wild speaks it, and asking for the newer
// version first costs a failed server/discover round trip (and a stray session on some HTTP servers).
const protocolVersion = "2025-11-25"

// terminateGrace is how long a local server gets to exit after its stdin closes before it is
// signalled; the MCP stdio shutdown sequence is close stdin, wait, SIGTERM, SIGKILL.
const terminateGrace = 2 * time.Second

// Options configure a Manager.
type Options struct {
	Bus *bus.Bus
	// DB keeps elicitations while they wait, so that those a crash interrupts are cancelled at the
	// next start (EndInterrupted); nil keeps nothing.
	DB store.Pending
	// Directory is the project directory: the working directory of local servers without a cwd, and
	// the directory of events that belong to no session.
	Directory string
	// Servers are the configured servers by name (tandem.json's "mcp").
	Servers map[string]Config
	// Added keeps the servers added over the API (Add) so that Restore brings them back after a
	// restart, and Remove forgets them; nil keeps them for this process only.
	Added store.MCPServers
	// ElicitationTimeout bounds how long an elicitation waits for a person; zero waits until the
	// server gives up. A timed-out elicitation is answered "cancel".
	ElicitationTimeout time.Duration
	// Version is the client version announced to servers.
	Version string
	Logger  *slog.Logger
	// Sandbox, when set, confines the local servers as the agent's commands are (the user's
	// "sandbox": {"mcp": true}); each may write its working directory and the temp directory.
	Sandbox *sandbox.Policy
}

// Manager owns the MCP servers and their pending elicitations.
type Manager struct {
	opts   Options
	log    *slog.Logger
	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines: watchers, tool refreshers
	elicit *pending.Broker[Elicitation, ElicitationReply]
	// journal keeps waiting elicitations in the store, so that a restart cancels them visibly.
	journal pending.Journal
	calls   atomic.Int64

	// addMu makes an add's name check, its store write and its entry in servers one step, so two
	// adds cannot both pass the check for clashing names.
	addMu sync.Mutex

	mu sync.Mutex
	// servers holds every server by the name GET /mcp lists it under: its own name for the
	// project's servers, SessionKey(name, sessionID) for a session's.
	servers map[string]*server
	closed  bool
	// resumed holds the elicitations a graceful stop left waiting, reserved for the resumed tool
	// calls that asked them ("messageID/callID"): the call's next elicitation takes its ID.
	resumed map[string]Elicitation
	// stopped holds the tool calls whose elicitation a shutdown let go, still stored ("messageID/callID").
	stopped map[string]bool

	started   chan struct{} // closed when Start has connected or failed every server
	startOnce sync.Once
}

// server is one named server: its config and its current connection, if any.
type server struct {
	name string // the key in Manager.servers
	base string // the name it was added under, which its tools are named after
	// session, when set, is the one session this server belongs to: only that session's turns
	// are offered its tools, it is never kept in the store, and it goes when the session does.
	session string
	op      sync.Mutex // serialises connect and disconnect of this server
	cfg     Config
	cfgErr  error
	// added is set for a server added over the API (Add or Restore); configured is the config
	// file's server of the same name, which comes back when the added one is removed.
	added      bool
	configured *server

	// guarded by Manager.mu
	status Status
	conn   *conn
}

// conn is one live connection to a server. A server gets a new conn on every connect.
type conn struct {
	name    string          // the server's key
	base    string          // the server's own name: tools are <base>_<tool>
	ctx     context.Context // ends when the connection is closed or fails
	cancel  context.CancelFunc
	session *sdk.ClientSession
	cmd     *exec.Cmd       // local servers only
	http    *http.Transport // remote servers only
	stderr  *tail
	closing atomic.Bool   // set before an intentional close, so the watcher does not call it a crash
	refresh chan struct{} // tools/list_changed, coalesced
	schemas *sentSchemas  // elicitation schemas as the server wrote them

	// guarded by Manager.mu
	tools    map[string]*sdk.Tool // qualified name → tool
	inflight map[int64]CallInfo   // tool calls running on this server
}

// CallInfo says which session and tool call a tool runs for, so an elicitation the server sends while
// the call runs can name them.
type CallInfo struct {
	SessionID string
	MessageID string
	CallID    string
	Directory string
	// ParentSessionID and RootSessionID, for a subagent's call, go on its elicitations.
	ParentSessionID, RootSessionID string

	turn context.Context // the calling turn's: a shutdown's cause lets its elicitations go, still stored
}

type callKey struct{}

// WithCall returns a context carrying the tool call an MCP request is made for.
func WithCall(ctx context.Context, c CallInfo) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callFrom(ctx context.Context) (CallInfo, bool) {
	c, ok := ctx.Value(callKey{}).(CallInfo)
	return c, ok
}

// New makes a Manager for the configured servers; nothing connects until Start or Connect. A server
// whose config is invalid is listed as failed with the reason.
func New(ctx context.Context, o Options) *Manager {
	m := &Manager{opts: o, log: o.Logger, servers: make(map[string]*server),
		resumed: map[string]Elicitation{}, stopped: map[string]bool{}, started: make(chan struct{})}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.journal = pending.Journal{DB: o.DB, Kind: "elicitation", Log: m.log}
	if m.opts.Version == "" {
		m.opts.Version = "dev"
	}
	// The manager lives until Close, beyond whatever created it.
	m.ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	m.elicit = pending.New(id.Elicitation, "Elicitation",
		func(string) ElicitationReply { return ElicitationReply{Action: "cancel"} },
		pending.Hooks[Elicitation, ElicitationReply]{Asked: m.elicitationAsked, Resolved: m.elicitationResolved})
	for name, cfg := range o.Servers {
		s := &server{name: name, base: name, cfg: cfg, status: Status{Status: Disabled}}
		s.cfgErr = checkConfig("mcp."+name, cfg)
		if s.cfgErr != nil {
			s.status = Status{Status: Failed, Error: s.cfgErr.Error()}
		}
		m.servers[name] = s
	}
	return m
}

// Start connects every enabled server, in parallel, and returns when each is connected or failed.
func (m *Manager) Start(ctx context.Context) {
	defer m.markStarted()
	m.mu.Lock()
	names := slices.Collect(maps.Keys(m.servers))
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			m.mu.Lock()
			s := m.servers[name]
			m.mu.Unlock()
			if s != nil && s.session == "" && s.cfgErr == nil && enabled(s.cfg) {
				m.connect(ctx, s)
			}
		})
	}
	wg.Wait()
}

// Status returns every server's status by name.
func (m *Manager) Status() map[string]Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Status, len(m.servers))
	for name, s := range m.servers {
		out[name] = s.statusLocked()
	}
	return out
}

// statusLocked is s's status as it is reported, naming its session; m.mu is held.
func (s *server) statusLocked() Status {
	st := s.status
	st.SessionID = s.session
	return st
}

// SessionKey is the name a session's server is listed under in GET /mcp and addressed by in
// DELETE /mcp/{name} and its connect and disconnect: "<name>@<sessionID>". Several sessions may
// each have a server called name.
func SessionKey(name, sessionID string) string { return api.MCPSessionKey(name, sessionID) }

// Add registers (or replaces) a server and connects it unless it is disabled, as POST /mcp does. A
// bad config is an Invalid error and changes nothing; a server that cannot be reached is listed as
// failed. It returns every server's status.
//
// The server is kept (Options.Added), so it is back after a restart until Remove forgets it. A
// session's server of the same name (AddForSession) is a Conflict: the tools of both would share
// their names in that session.
func (m *Manager) Add(ctx context.Context, name string, raw json.RawMessage) (map[string]Status, error) {
	return m.add(ctx, "", name, raw)
}

// AddForSession registers (or replaces) a server of one session and connects it unless it is
// disabled: its tools are offered to that session's turns only, it is listed in Status under
// SessionKey(name, sessionID) with the session's ID, EndSession removes it, and it is never kept
// across restarts (an ACP editor sends its servers again when it loads the session). A project
// server of the same name is a Conflict, never replaced. The caller checks that the session exists.
func (m *Manager) AddForSession(ctx context.Context, sessionID, name string, raw json.RawMessage) (map[string]Status, error) {
	if !id.Valid(id.Session, sessionID) {
		return nil, errs.E(errs.Invalid, "sessionID: malformed session ID %q", sessionID)
	}
	return m.add(ctx, sessionID, name, raw)
}

func (m *Manager) add(ctx context.Context, sessionID, name string, raw json.RawMessage) (map[string]Status, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errs.E(errs.Invalid, "name: required")
	}
	cfg, err := ParseConfig("config", raw)
	if err != nil {
		return nil, err
	}
	key := name
	if sessionID != "" {
		key = SessionKey(name, sessionID)
	}
	m.addMu.Lock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.addMu.Unlock()
		return nil, errs.E(errs.Unavailable, "MCP manager is shut down")
	}
	err = m.clashLocked(sessionID, name, key)
	m.mu.Unlock()
	if err != nil {
		m.addMu.Unlock()
		return nil, err
	}
	if sessionID == "" && m.opts.Added != nil {
		row := store.MCPServer{Directory: m.opts.Directory, Name: name, Config: raw, Created: time.Now().UnixMilli()}
		if err := m.opts.Added.PutMCPServer(ctx, row); err != nil {
			m.addMu.Unlock()
			return nil, err
		}
	}
	m.mu.Lock()
	old := m.servers[key]
	s := &server{name: key, base: name, session: sessionID, cfg: cfg, status: Status{Status: Disabled}, added: true}
	if sessionID == "" {
		s.configured = configuredOf(old)
	}
	m.servers[key] = s
	m.mu.Unlock()
	m.addMu.Unlock()
	if old != nil {
		old.op.Lock()
		m.disconnect(old, Disabled)
		old.op.Unlock()
	}
	if enabled(cfg) {
		m.connect(ctx, s)
	} else {
		m.publishStatus(s, s.status)
	}
	return m.Status(), nil
}

// clashLocked refuses a name that would give two servers' tools the same names in one session: a
// session's server named like a project server, or a project server named like a session's. A
// session's server replaces only that session's server of the same name. m.mu is held.
func (m *Manager) clashLocked(sessionID, name, key string) error {
	clash := func(format string, args ...any) error {
		return errs.Named(errs.Conflict, "MCPServerNameClashError", format, args...).With("name", name)
	}
	if sessionID != "" {
		if o := m.servers[name]; o != nil && o.session == "" {
			return clash("MCP server %s is a server of the project, offered to every session; give the session's server another name", name)
		}
		if o := m.servers[key]; o != nil && o.session != sessionID {
			return clash("the name %s is taken by a server of the project", key)
		}
		return nil
	}
	if o := m.servers[name]; o != nil && o.session != "" {
		return clash("the name %s is taken by the server %s of session %s", name, o.base, o.session)
	}
	var sessions []string
	for _, o := range m.servers {
		if o.session != "" && o.base == name {
			sessions = append(sessions, o.session)
		}
	}
	if len(sessions) > 0 {
		sort.Strings(sessions)
		return clash("MCP server %s is connected for session %s; give the project's server another name, or remove the session's first",
			name, strings.Join(sessions, ", "))
	}
	return nil
}

// configuredOf is the config file's server behind s: s itself, or the one an added server replaced.
func configuredOf(s *server) *server {
	switch {
	case s == nil:
		return nil
	case s.added:
		return s.configured
	default:
		return s
	}
}

// Restore brings back the servers added over the API before a restart (Options.Added), replacing
// configured ones of the same name as Add did; they connect with the others at Start. A stored config
// that no longer parses is listed as failed with the reason.
func (m *Manager) Restore(ctx context.Context) error {
	if m.opts.Added == nil {
		return nil
	}
	rows, err := m.opts.Added.MCPServers(ctx, m.opts.Directory)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		s := &server{name: r.Name, base: r.Name, status: Status{Status: Disabled}, added: true, configured: configuredOf(m.servers[r.Name])}
		s.cfg, s.cfgErr = ParseConfig("config", r.Config)
		if s.cfgErr != nil {
			s.status = Status{Status: Failed, Error: s.cfgErr.Error()}
		}
		m.servers[r.Name] = s
	}
	return nil
}

// Remove stops a server added over the API and forgets it, also for later starts; a configured
// server it had replaced comes back, disconnected. A server that only the configuration defines is
// a Conflict: it is removed from the config file, not here. It returns every server's status.
func (m *Manager) Remove(ctx context.Context, name string) (map[string]Status, error) {
	s, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	if !s.added {
		return nil, errs.E(errs.Conflict, "MCP server %s is defined in the configuration file; remove it there", name)
	}
	if s.session == "" && m.opts.Added != nil {
		if _, err := m.opts.Added.DeleteMCPServer(ctx, m.opts.Directory, name); err != nil {
			return nil, err
		}
	}
	m.drop(s)
	return m.Status(), nil
}

// EndSession stops and forgets the servers added for a session (AddForSession), as when the
// session is deleted; it emits mcp.server.removed for each.
func (m *Manager) EndSession(sessionID string) {
	if sessionID == "" {
		return
	}
	m.mu.Lock()
	var gone []*server
	for _, s := range m.servers {
		if s.session == sessionID {
			gone = append(gone, s)
		}
	}
	m.mu.Unlock()
	for _, s := range gone {
		m.drop(s)
	}
}

// drop disconnects an added server and takes it out of the list; a configured server it replaced
// comes back, disconnected.
func (m *Manager) drop(s *server) {
	name := s.name
	s.op.Lock()
	m.disconnect(s, "")
	s.op.Unlock()
	m.mu.Lock()
	back := s.configured
	if m.servers[name] == s {
		if back != nil {
			back.status = Status{Status: Disabled}
			if back.cfgErr != nil {
				back.status = Status{Status: Failed, Error: back.cfgErr.Error()}
			}
			m.servers[name] = back
		} else {
			delete(m.servers, name)
		}
	}
	m.mu.Unlock()
	if back != nil {
		m.publishStatus(back, back.status)
	} else {
		m.publish("", api.EventMCPServerRemoved, api.MCPServerRemoved{Server: name, SessionID: s.session})
	}
}

func (m *Manager) lookup(name string) (*server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[name]
	if !ok {
		return nil, errs.Named(errs.NotFound, "NotFoundError", "MCP server not found: %s", name).With("name", name)
	}
	return s, nil
}

// Connect (re)connects a server, whatever its state; a server that cannot be reached ends up failed,
// which is reported by Status rather than as an error. Unknown names are NotFound.
func (m *Manager) Connect(ctx context.Context, name string) (Status, error) {
	s, err := m.lookup(name)
	if err != nil {
		return Status{}, err
	}
	if s.cfgErr != nil {
		return Status{}, s.cfgErr
	}
	return m.connect(ctx, s), nil
}

// Disconnect closes a server's connection and stops its process; its status becomes disabled.
func (m *Manager) Disconnect(_ context.Context, name string) error {
	s, err := m.lookup(name)
	if err != nil {
		return err
	}
	s.op.Lock()
	defer s.op.Unlock()
	m.disconnect(s, Disabled)
	return nil
}

// connect replaces any connection of s with a new one and returns the resulting status.
func (m *Manager) connect(ctx context.Context, s *server) Status {
	s.op.Lock()
	defer s.op.Unlock()
	m.disconnect(s, "")

	c, err := m.dial(ctx, s)
	m.mu.Lock()
	switch {
	case m.closed || m.servers[s.name] != s:
		// Shut down or replaced while connecting: this connection belongs to no one.
		m.mu.Unlock()
		if c != nil {
			c.shutdown()
		}
		return Status{Status: Disabled}
	case err != nil:
		s.status = Status{Status: Failed, Error: err.Error()}
	default:
		s.conn = c
		s.status = Status{Status: Connected}
	}
	st := s.status
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("mcp: connect failed", "server", s.name, "err", err)
	} else {
		m.wg.Go(func() { m.watch(s, c) })
		m.wg.Go(func() { m.refreshTools(c) })
	}
	m.publishStatus(s, st)
	if err == nil {
		m.publish("", api.EventMCPToolsChanged, api.MCPToolsChanged{Server: s.name})
	}
	return st
}

// disconnect closes s's connection, if any. A non-empty status replaces the server's status.
func (m *Manager) disconnect(s *server, status string) {
	m.mu.Lock()
	c := s.conn
	s.conn = nil
	changed := status != "" && s.status.Status != status
	if status != "" {
		s.status = Status{Status: status}
	}
	st := s.status
	m.mu.Unlock()
	if c != nil {
		c.shutdown()
		m.publish("", api.EventMCPToolsChanged, api.MCPToolsChanged{Server: s.name})
	}
	if changed {
		m.publishStatus(s, st)
	}
}

// dial starts and initialises one connection.
func (m *Manager) dial(ctx context.Context, s *server) (*conn, error) {
	cctx, cancel := context.WithCancel(m.ctx)
	c := &conn{
		name:     s.name,
		base:     s.base,
		ctx:      cctx,
		cancel:   cancel,
		refresh:  make(chan struct{}, 1),
		tools:    map[string]*sdk.Tool{},
		inflight: map[int64]CallInfo{},
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "tandem", Version: m.opts.Version}, &sdk.ClientOptions{
		Logger: m.log,
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
			Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{},
		}},
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return m.handleElicitation(ctx, c, req)
		},
		ElicitationCompleteHandler: func(_ context.Context, req *sdk.ElicitationCompleteNotificationRequest) {
			m.elicitationComplete(c.name, req.Params.ElicitationID)
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case c.refresh <- struct{}{}:
			default:
			}
		},
	})

	var transport sdk.Transport
	switch s.cfg.Type {
	case "local":
		dir := s.cfg.Cwd
		if dir == "" {
			dir = m.opts.Directory
		}
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		if sb := m.opts.Sandbox; sb != nil {
			var err error
			if cmd, err = sb.Command([]string{dir}, s.cfg.Command[0], s.cfg.Command[1:]...); err != nil {
				cancel()
				return nil, err
			}
		}
		cmd.Dir = dir
		cmd.Env = os.Environ()
		for k, v := range s.cfg.Environment {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		c.stderr = &tail{max: 4096}
		cmd.Stderr = c.stderr
		cmd.WaitDelay = time.Second
		process.OwnGroup(cmd)
		c.cmd = cmd
		c.schemas = newSentSchemas()
		transport = schemaTransport{Transport: &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}, schemas: c.schemas}
	case "remote":
		// A transport of its own, so that closing the server also closes its idle keep-alive connections.
		c.http = http.DefaultTransport.(*http.Transport).Clone()
		c.schemas = newSentSchemas()
		transport = &sdk.StreamableClientTransport{
			Endpoint:   s.cfg.URL,
			HTTPClient: &http.Client{Transport: headerTransport{headers: s.cfg.Headers, base: c.http, schemas: c.schemas}},
			MaxRetries: 2,
		}
	}

	dctx, dcancel := context.WithTimeout(ctx, connectTimeout(s.cfg))
	defer dcancel()
	defer context.AfterFunc(m.ctx, dcancel)() // Close interrupts a connect in progress
	session, err := client.Connect(dctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		c.shutdown()
		return nil, c.describe(err)
	}
	c.session = session
	if err := m.loadTools(dctx, c); err != nil {
		c.shutdown()
		return nil, c.describe(fmt.Errorf("listing tools: %w", err))
	}
	return c, nil
}

// describe adds what a local server printed on stderr to a connection error, since that is usually
// where the real reason is.
func (c *conn) describe(err error) error {
	if c.stderr == nil {
		return err
	}
	if t := strings.TrimSpace(c.stderr.String()); t != "" {
		return fmt.Errorf("%w; stderr: %s", err, lastLines(t, 5))
	}
	return err
}

// shutdown closes the connection and makes sure a local server and its children are gone.
func (c *conn) shutdown() {
	c.closing.Store(true)
	c.cancel()
	if c.session != nil {
		_ = c.session.Close()
	}
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
	if c.cmd != nil && c.cmd.Process != nil {
		if c.session == nil {
			// Never initialised: the SDK holds no handle that would reap it.
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
		killProcessGroup(c.cmd)
	}
}

// watch notices a connection that ends without being closed (the process died, the HTTP server went
// away) and marks its server failed, without waiting for a tool call to find out.
func (m *Manager) watch(s *server, c *conn) {
	err := c.session.Wait()
	if c.closing.Load() {
		return
	}
	c.closing.Store(true)
	c.cancel() // pending elicitations of this connection go away now
	_ = c.session.Close()
	killProcessGroup(c.cmd)
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
	reason := "connection closed"
	if c.cmd != nil && c.cmd.ProcessState != nil {
		reason = "server exited: " + c.cmd.ProcessState.String()
	} else if err != nil {
		reason = "connection lost: " + err.Error()
	}
	reason = c.describe(errors.New(reason)).Error()
	m.mu.Lock()
	if s.conn != c {
		m.mu.Unlock()
		return
	}
	s.conn = nil
	s.status = Status{Status: Failed, Error: reason}
	st := s.status
	m.mu.Unlock()
	m.log.Warn("mcp: server failed", "server", s.name, "reason", reason)
	m.publishStatus(s, st)
	m.publish("", api.EventMCPToolsChanged, api.MCPToolsChanged{Server: s.name})
}

// refreshTools reloads a connection's tools whenever the server says they changed.
func (m *Manager) refreshTools(c *conn) {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.refresh:
		}
		ctx, cancel := context.WithTimeout(c.ctx, defaultConnectTimeout)
		err := m.loadTools(ctx, c)
		cancel()
		if err != nil {
			if c.ctx.Err() == nil {
				m.log.Warn("mcp: reloading tools", "server", c.name, "err", err)
			}
			continue
		}
		m.publish("", api.EventMCPToolsChanged, api.MCPToolsChanged{Server: c.name})
	}
}

func (m *Manager) loadTools(ctx context.Context, c *conn) error {
	tools := map[string]*sdk.Tool{}
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		tools[QualifiedName(c.base, t.Name)] = t
	}
	m.mu.Lock()
	c.tools = tools
	m.mu.Unlock()
	return nil
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// QualifiedName is the name the model knows an MCP tool by, and the permission key rules match:
// "<server>_<tool>", with characters that model APIs refuse in tool names replaced by "_". That name
// is unambiguous only when the server name has no "_" and neither name had a character replaced;
// otherwise ("a_b"+"c" and "a"+"b_c" would both be "a_b_c") six hex digits of a hash of the exact
// pair are appended, so two tools never share a name, whichever server connects first, and a rule
// written for one can never match the other.
func QualifiedName(server, tool string) string {
	name := unsafeName.ReplaceAllString(server, "_") + "_" + unsafeName.ReplaceAllString(tool, "_")
	if strings.Contains(server, "_") || unsafeName.MatchString(server) || unsafeName.MatchString(tool) {
		sum := sha256.Sum256([]byte(server + "\x00" + tool))
		name += "_" + hex.EncodeToString(sum[:3])
	}
	return name
}

// ToolInfo describes one MCP tool offered to the agent.
type ToolInfo struct {
	Name        string // qualified: <server>_<tool>
	Server      string // the server's own name (a session's server is listed as SessionKey(Server, SessionID))
	SessionID   string // set for a session's server: the one session it is offered to
	Tool        string // the server's own name for it
	Description string
	InputSchema json.RawMessage
}

// ToolInfos lists the tools of every connected server of the project (offered to every session),
// sorted by name.
func (m *Manager) ToolInfos() []ToolInfo {
	return m.toolInfos("")
}

// SessionToolInfos lists the tools of the connected servers added for one session only
// (AddForSession), sorted by name; they are offered to that session besides ToolInfos.
func (m *Manager) SessionToolInfos(sessionID string) []ToolInfo {
	if sessionID == "" {
		return nil
	}
	return m.toolInfos(sessionID)
}

func (m *Manager) toolInfos(sessionID string) []ToolInfo {
	m.mu.Lock()
	var out []ToolInfo
	for _, s := range m.servers {
		if s.conn == nil || s.session != sessionID {
			continue
		}
		for q, t := range s.conn.tools {
			schema, err := json.Marshal(t.InputSchema)
			if err != nil || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			out = append(out, ToolInfo{Name: q, Server: s.base, SessionID: s.session, Tool: t.Name, Description: t.Description, InputSchema: schema})
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CallTool calls a tool by its qualified name for the tool call described by info: a tool of the
// project's servers, or of the servers added for info.SessionID only. A -32042 "URL
// elicitation required" answer becomes pending URL elicitations; once the person accepts them all the
// call is retried (at most three times). An error result from the server is returned as a result with
// IsError set; the error return is for calls that could not be made or completed.
func (m *Manager) CallTool(ctx context.Context, qualified string, args json.RawMessage, info CallInfo) (*sdk.CallToolResult, error) {
	info.turn = ctx
	m.mu.Lock()
	var c *conn
	var t *sdk.Tool
	var srv string
	for _, s := range m.servers {
		if s.conn != nil && (s.session == "" || s.session == info.SessionID) {
			if tt, ok := s.conn.tools[qualified]; ok {
				c, t, srv = s.conn, tt, s.name
				break
			}
		}
	}
	key := m.calls.Add(1)
	if c != nil {
		c.inflight[key] = info
	}
	m.mu.Unlock()
	if c == nil {
		return nil, errs.E(errs.NotFound, "MCP tool %s is not available (its server is not connected)", qualified)
	}
	defer func() {
		m.mu.Lock()
		delete(c.inflight, key)
		m.mu.Unlock()
		if info.CallID != "" {
			m.endCallElicitations(info.turn, srv, info.CallID)
		}
	}()

	arguments := map[string]any{} // never nil: TypeScript servers refuse "arguments": null
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &arguments); err != nil {
			return nil, errs.E(errs.Invalid, "arguments of %s must be a JSON object: %v", qualified, err)
		}
		if arguments == nil {
			arguments = map[string]any{}
		}
	}
	// The call ends if the connection does (crash, disconnect), even when the transport would not
	// notice on its own.
	ctx, cancel := context.WithCancel(WithCall(ctx, info))
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()

	params := &sdk.CallToolParams{Name: t.Name, Arguments: arguments}
	for attempt := 0; ; attempt++ {
		res, err := c.session.CallTool(ctx, params)
		if err == nil {
			return res, nil
		}
		required, ok := urlElicitationsRequired(err)
		if !ok || attempt >= 3 {
			if c.ctx.Err() != nil {
				m.mu.Lock()
				st := m.servers[srv]
				var why string
				if st != nil && st.status.Status == Failed {
					why = ": " + st.status.Error
				}
				m.mu.Unlock()
				return nil, fmt.Errorf("MCP server %s went away during the call%s", srv, why)
			}
			return nil, err
		}
		for _, p := range required {
			if err := m.awaitRequiredURL(ctx, c, info, p); err != nil {
				return nil, err
			}
		}
	}
}

// tail keeps the last bytes written to it (a local server's stderr).
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// headerTransport adds a remote server's configured headers to every request, and notes the
// elicitation schemas in the event streams it answers with.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
	schemas *sentSchemas
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	res, err := h.base.RoundTrip(r)
	if err == nil && h.schemas != nil && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body = &sseTap{ReadCloser: res.Body, schemas: h.schemas}
	}
	return res, err
}

func (m *Manager) publish(dir, typ string, props any) {
	if dir == "" {
		dir = m.opts.Directory
	}
	m.opts.Bus.Emit(m.log, dir, typ, props)
}

// publishStatus announces a server's new status as mcp.status.changed {server, status, error?,
// sessionID?}.
func (m *Manager) publishStatus(s *server, st Status) {
	st.SessionID = s.session
	m.publish("", api.EventMCPStatusChanged, api.MCPStatusChanged{Server: s.name, MCPStatus: st})
}

// Close disconnects every server, stops every local server process, cancels every pending
// elicitation and waits for the manager's goroutines.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	servers := slices.Collect(maps.Values(m.servers))
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			s.op.Lock()
			defer s.op.Unlock()
			m.mu.Lock()
			c := s.conn
			s.conn = nil
			m.mu.Unlock()
			if c != nil {
				c.shutdown()
			}
		})
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}
