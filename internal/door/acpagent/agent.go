// Package acpagent is the agent side of the Agent Client Protocol (`tandem acp`): an editor (Zed,
// a JetBrains IDE, a Neovim plugin, acpx) drives tandem sessions over JSON-RPC. It speaks to a
// tandem server through its HTTP API (package client), so the sessions, tools and pending approvals
// an editor sees are the ones the web UI, the TUI and curl see: an approval shown in the editor is
// also in GET /permission, and the first answer wins.
package acpagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// Options wire an agent to a tandem server.
type Options struct {
	Client  *client.Client // the tandem server (in-process or attached)
	Version string
	Logger  *slog.Logger
	// Files, when tandem runs in this process, routes a session's read, write and edit calls
	// through the editor (for clients that declare fs/read_text_file or fs/write_text_file) and
	// returns the function that stops it. nil (--attach, HTTP): tandem's tools use the disk.
	Files func(sessionID string, f tool.Files) (remove func())
}

// Serve speaks ACP on r/w until the client disconnects or ctx ends.
func Serve(ctx context.Context, o Options, w io.Writer, r io.Reader) error {
	a := New(o)
	conn := acp.NewAgentSideConnection(a, w, r)
	conn.SetLogger(a.log)
	a.conn = conn
	defer a.stopEditorFiles()
	defer a.removeMCP(ctx)
	select {
	case <-conn.Done():
		return nil
	case <-ctx.Done():
		return nil
	}
}

// Agent implements acp.Agent over a tandem server. One Agent serves one connection.
type Agent struct {
	c    *client.Client
	ver  string
	log  *slog.Logger
	conn *acp.AgentSideConnection

	mu       sync.Mutex
	caps     acp.ClientCapabilities
	name     string // the client's name, for the decision log and session metadata
	sessions map[string]*acpSession
	files    func(sessionID string, f tool.Files) (remove func())
	unroute  map[string]func() // sessions whose files go through the editor -> stops that
	// mcp holds the names (mcp.SessionKey) of the MCP servers this connection added for its
	// sessions; they are removed when the connection ends.
	mcp map[string]bool
}

// acpSession is a tandem session opened over this connection.
type acpSession struct {
	id    string
	dir   string
	c     *client.Client // scoped to dir
	agent string         // the mode: a primary agent's name
	model *session.MessageModel

	mu     sync.Mutex
	cancel context.CancelFunc // the running turn's
}

// New returns an agent; Serve wires it to a connection.
func New(o Options) *Agent {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Agent{c: o.Client, ver: o.Version, log: o.Logger, sessions: map[string]*acpSession{}, files: o.Files, unroute: map[string]func(){}, mcp: map[string]bool{}}
}

var (
	_ acp.Agent       = (*Agent)(nil)
	_ acp.AgentLoader = (*Agent)(nil)
)

// Initialize declares what tandem supports: loading sessions, image and embedded-context prompts,
// MCP servers over stdio, HTTP and SSE.
func (a *Agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.caps = p.ClientCapabilities
	if p.ClientInfo != nil && p.ClientInfo.Name != "" {
		a.name = p.ClientInfo.Name
	}
	a.mu.Unlock()
	title := "tandem"
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "tandem", Title: &title, Version: a.ver},
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:    acp.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: acp.SessionCapabilities{
				List: &acp.SessionListCapabilities{},
			},
		},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

// Logout has nothing to forget: tandem keeps no login of the editor's.
func (a *Agent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

// Authenticate is not needed: the editor starts tandem, which has its own credentials.
func (a *Agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *Agent) clientName() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.name == "" {
		return "acp"
	}
	return a.name
}

// NewSession creates a tandem session in the client's cwd and connects the client's MCP servers as
// servers of that session alone. A server that cannot be added (its name is a project server's, its
// config is bad) fails the request, and the new session is deleted again.
func (a *Agent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if !filepath.IsAbs(p.Cwd) {
		return acp.NewSessionResponse{}, acp.NewInvalidParams(map[string]any{"cwd": "must be an absolute path"})
	}
	c := a.c.InDirectory(filepath.Clean(p.Cwd))
	s, err := c.CreateSession(ctx, api.SessionCreateInput{Metadata: map[string]any{"acpClient": a.clientName()}})
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	if err := a.connectMCP(ctx, c, s, p.McpServers); err != nil {
		if derr := c.DeleteSession(context.WithoutCancel(ctx), s.ID); derr != nil {
			a.log.Warn("acp: deleting the session whose MCP servers could not be added", "session", s.ID, "err", derr)
		}
		return acp.NewSessionResponse{}, err
	}
	as := a.open(s, c)
	modes, options, err := a.state(ctx, as)
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	return acp.NewSessionResponse{SessionId: acp.SessionId(s.ID), Modes: modes, ConfigOptions: options}, nil
}

// LoadSession replays a stored session's history as session/update notifications, then answers.
func (a *Agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	s, err := a.c.Session(ctx, string(p.SessionId))
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	c := a.c.InDirectory(s.Directory)
	if err := a.connectMCP(ctx, c, s, p.McpServers); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	msgs, err := c.Messages(ctx, s.ID)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	as := a.open(s, c)
	for _, m := range msgs {
		if m.Info.Agent != "" {
			as.agent = m.Info.Agent
		}
		if m.Info.Role == "user" && m.Info.Model != nil {
			as.model = m.Info.Model
		}
	}
	r := newTranslator(a, as)
	if err := r.replay(ctx, msgs); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	modes, options, err := a.state(ctx, as)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	return acp.LoadSessionResponse{Modes: modes, ConfigOptions: options}, nil
}

// ListSessions lists the sessions of a directory, newest first.
func (a *Agent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	c := a.c
	if p.Cwd != nil && *p.Cwd != "" {
		c = c.InDirectory(*p.Cwd)
	}
	list, err := c.Sessions(ctx)
	if err != nil {
		return acp.ListSessionsResponse{}, err
	}
	out := acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}
	for _, s := range list {
		if s.ParentID != "" {
			continue
		}
		title := s.Title
		updated := time.UnixMilli(s.Time.Updated).UTC().Format(time.RFC3339)
		out.Sessions = append(out.Sessions, acp.SessionInfo{SessionId: acp.SessionId(s.ID), Cwd: s.Directory, Title: &title, UpdatedAt: &updated})
	}
	return out, nil
}

// CloseSession, ResumeSession: not offered (no capability declared).
func (a *Agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

// ResumeSession is not offered: session/load replays instead.
func (a *Agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

// open registers a session for this connection.
func (a *Agent) open(s session.Session, c *client.Client) *acpSession {
	as := &acpSession{id: s.ID, dir: s.Directory, c: c, agent: "build"}
	if s.Model != nil {
		as.model = &session.MessageModel{ProviderID: s.Model.ProviderID, ModelID: s.Model.ID}
	}
	a.mu.Lock()
	a.sessions[s.ID] = as
	a.mu.Unlock()
	a.useEditorFiles(s.ID)
	return as
}

func (a *Agent) session(id acp.SessionId) (*acpSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sessions[string(id)]; ok {
		return s, nil
	}
	return nil, acp.NewInvalidParams(map[string]any{"sessionId": fmt.Sprintf("no session %q on this connection (session/new or session/load it first)", id)})
}

// connectMCP adds the client's MCP servers as servers of one session (POST /mcp with sessionID):
// only that session's turns are offered their tools, named after the name the client gave each;
// local ones run in the session's directory. They are removed when this connection ends, or with
// the session.
func (a *Agent) connectMCP(ctx context.Context, c *client.Client, sess session.Session, servers []acp.McpServer) error {
	for _, s := range servers {
		var name string
		var cfg map[string]any
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			name = s.Stdio.Name
			cfg = map[string]any{"type": "local", "command": append([]string{s.Stdio.Command}, s.Stdio.Args...), "environment": env, "cwd": sess.Directory}
		case s.Http != nil:
			name = s.Http.Name
			cfg = map[string]any{"type": "remote", "url": s.Http.Url, "headers": headers(s.Http.Headers)}
		case s.Sse != nil:
			name = s.Sse.Name
			cfg = map[string]any{"type": "remote", "url": s.Sse.Url, "headers": headers(s.Sse.Headers)}
		default:
			return acp.NewInvalidParams(map[string]any{"mcpServers": "only stdio, http and sse servers are supported"})
		}
		key, err := c.AddSessionMCP(ctx, sess.ID, name, cfg)
		if err != nil {
			var ce *client.Error
			if errors.As(err, &ce) && (ce.Status == 400 || ce.Status == 409) {
				return acp.NewInvalidParams(map[string]any{"mcpServers": fmt.Sprintf("MCP server %s: %s", name, ce.Message)})
			}
			return fmt.Errorf("MCP server %s: %w", name, err)
		}
		a.mu.Lock()
		a.mcp[key] = true
		a.mu.Unlock()
	}
	return nil
}

// removeMCP removes the MCP servers this connection added, when it ends; the sessions stay. One
// already gone (its session was deleted) is no error.
func (a *Agent) removeMCP(ctx context.Context) {
	a.mu.Lock()
	keys := slices.Sorted(maps.Keys(a.mcp))
	clear(a.mcp)
	a.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, key := range keys {
		var ce *client.Error
		if err := a.c.RemoveMCP(ctx, key); err != nil && !(errors.As(err, &ce) && ce.Status == 404) {
			a.log.Warn("acp: removing the editor's MCP server", "server", key, "err", err)
		}
	}
}

func headers(hs []acp.HttpHeader) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		out[h.Name] = h.Value
	}
	return out
}

// modelChoice is one model the session can switch to, as "provider/model" and a name to show.
type modelChoice struct{ id, name string }

// state is the session's modes (tandem's primary agents), and the modes and models as config
// options: protocol version 1 chooses the model through its config option (session/set_model and
// the models field were dropped from the schema).
func (a *Agent) state(ctx context.Context, as *acpSession) (*acp.SessionModeState, []acp.SessionConfigOption, error) {
	agents, err := as.c.Agents(ctx)
	if err != nil {
		return nil, nil, err
	}
	modes := &acp.SessionModeState{CurrentModeId: acp.SessionModeId(as.agent), AvailableModes: []acp.SessionMode{}}
	for _, ag := range agents {
		if ag.Mode == "subagent" {
			continue
		}
		m := acp.SessionMode{Id: acp.SessionModeId(ag.Name), Name: ag.Name}
		if ag.Description != "" {
			m.Description = acp.Ptr(ag.Description)
		}
		modes.AvailableModes = append(modes.AvailableModes, m)
	}
	providers, err := as.c.Providers(ctx)
	if err != nil {
		return nil, nil, err
	}
	var models []modelChoice
	for _, p := range providers.Providers {
		ids := make([]string, 0, len(p.Models))
		for id := range p.Models {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			name := p.Models[id].Name
			if name == "" {
				name = id
			}
			models = append(models, modelChoice{id: p.ID + "/" + id, name: p.Name + ": " + name})
		}
	}
	if as.model == nil {
		for _, p := range providers.Providers {
			if def, ok := providers.Default[p.ID]; ok {
				as.model = &session.MessageModel{ProviderID: p.ID, ModelID: def}
				break
			}
		}
	}
	current := ""
	if as.model != nil {
		current = as.model.ProviderID + "/" + as.model.ModelID
	}
	return modes, configOptions(modes, models, current), nil
}

// configOptions are the mode and model selectors as session config options (the stable form of
// model selection in protocol version 1).
func configOptions(modes *acp.SessionModeState, models []modelChoice, currentModel string) []acp.SessionConfigOption {
	modeOpts := acp.SessionConfigSelectOptionsUngrouped{}
	for _, m := range modes.AvailableModes {
		modeOpts = append(modeOpts, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description})
	}
	modelOpts := acp.SessionConfigSelectOptionsUngrouped{}
	for _, m := range models {
		modelOpts = append(modelOpts, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m.id), Name: m.name})
	}
	modeCat, modelCat := acp.SessionConfigOptionCategoryMode, acp.SessionConfigOptionCategoryModel
	out := []acp.SessionConfigOption{{Select: &acp.SessionConfigOptionSelect{Type: "select", Id: "mode", Name: "Agent", Category: &modeCat,
		CurrentValue: acp.SessionConfigValueId(modes.CurrentModeId), Options: acp.SessionConfigSelectOptions{Ungrouped: &modeOpts}}}}
	if len(modelOpts) > 0 {
		out = append(out, acp.SessionConfigOption{Select: &acp.SessionConfigOptionSelect{Type: "select", Id: "model", Name: "Model", Category: &modelCat,
			CurrentValue: acp.SessionConfigValueId(currentModel), Options: acp.SessionConfigSelectOptions{Ungrouped: &modelOpts}}})
	}
	return out
}

// SetSessionMode switches the agent the next prompts run with.
func (a *Agent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	as, err := a.session(p.SessionId)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	if err := a.setMode(ctx, as, string(p.ModeId)); err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	return acp.SetSessionModeResponse{}, nil
}

func (a *Agent) setMode(ctx context.Context, as *acpSession, mode string) error {
	modes, _, err := a.state(ctx, as)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(modes.AvailableModes, func(m acp.SessionMode) bool { return string(m.Id) == mode }) {
		return acp.NewInvalidParams(map[string]any{"modeId": fmt.Sprintf("no agent %q", mode)})
	}
	as.mu.Lock()
	as.agent = mode
	as.mu.Unlock()
	return nil
}

func (as *acpSession) setModel(id string) error {
	m, err := session.ParseModel(id)
	if err != nil || m == nil {
		return acp.NewInvalidParams(map[string]any{"modelId": fmt.Sprintf("expected provider/model, got %q", id)})
	}
	as.mu.Lock()
	as.model = m
	as.mu.Unlock()
	return nil
}

// SetSessionConfigOption sets the mode or the model.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"value": "expected a value id"})
	}
	as, err := a.session(v.SessionId)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	switch v.ConfigId {
	case "mode":
		err = a.setMode(ctx, as, string(v.Value))
	case "model":
		err = as.setModel(string(v.Value))
	default:
		err = acp.NewInvalidParams(map[string]any{"configId": fmt.Sprintf("no option %q", v.ConfigId)})
	}
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	_, options, err := a.state(ctx, as)
	return acp.SetSessionConfigOptionResponse{ConfigOptions: options}, err
}

// Cancel stops the session's running turn; Prompt then answers "cancelled".
func (a *Agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	as, err := a.session(p.SessionId)
	if err != nil {
		return err
	}
	as.mu.Lock()
	cancel := as.cancel
	as.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// Prompt runs one turn and streams its progress as session/update notifications.
func (a *Agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	as, err := a.session(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	parts, err := promptParts(p.Prompt)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	as.mu.Lock()
	if as.cancel != nil {
		as.mu.Unlock()
		return acp.PromptResponse{}, acp.NewInvalidRequest(map[string]any{"sessionId": "a prompt is already running in this session"})
	}
	as.cancel = cancel
	in := api.PromptInput{Agent: as.agent, Model: as.model, Parts: parts}
	as.mu.Unlock()
	defer func() {
		as.mu.Lock()
		as.cancel = nil
		as.mu.Unlock()
	}()
	stop, err := newTranslator(a, as).turn(tctx, in)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: stop}, nil
}

// promptParts turns ACP content blocks into tandem prompt parts: text as text, links and images as
// file parts, embedded text resources as text with their URI.
func promptParts(blocks []acp.ContentBlock) ([]api.PartInput, error) {
	var out []api.PartInput
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			out = append(out, api.PartInput{Type: "text", Text: b.Text.Text})
		case b.ResourceLink != nil:
			mime := "text/plain"
			if b.ResourceLink.MimeType != nil {
				mime = *b.ResourceLink.MimeType
			}
			out = append(out, api.PartInput{Type: "file", URL: b.ResourceLink.Uri, Filename: b.ResourceLink.Name, Mime: mime})
		case b.Image != nil:
			out = append(out, api.PartInput{Type: "file", Mime: b.Image.MimeType, URL: "data:" + b.Image.MimeType + ";base64," + b.Image.Data, Filename: "image"})
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			out = append(out, api.PartInput{Type: "text", Text: fmt.Sprintf("<context uri=%q>\n%s\n</context>", r.Uri, r.Text)})
		case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
			r := b.Resource.Resource.BlobResourceContents
			mime := "application/octet-stream"
			if r.MimeType != nil {
				mime = *r.MimeType
			}
			out = append(out, api.PartInput{Type: "file", Mime: mime, URL: "data:" + mime + ";base64," + r.Blob, Filename: filepath.Base(r.Uri)})
		default:
			return nil, acp.NewInvalidParams(map[string]any{"prompt": "unsupported content block (audio is not supported)"})
		}
	}
	if len(out) == 0 {
		return nil, acp.NewInvalidParams(map[string]any{"prompt": "empty"})
	}
	return out, nil
}

// errText is an error as one line for a tool call's or a log's text.
func errText(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		return strings.TrimSpace(fmt.Sprintf("%s %v", re.Message, re.Data))
	}
	return err.Error()
}
