// Package client is a Go client of tandem's HTTP API: the typed calls tandem's own terminal
// programs make (`tandem run`, `tandem mcp --attach`), the event stream with Last-Event-ID resume,
// and where a local client finds the server and its credentials.
//
// Its requests and answers are the wire types of package api, and it builds nothing else of tandem
// but the SSE reader: a program that drives a tandem server through it does not carry the server
// (SQLite, the MCP SDK, the shell parser) in its binary.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tandem-dev/tandem/api"
)

// Client calls one tandem server.
type Client struct {
	base string       // no trailing slash
	hc   *http.Client // adds the credentials
	dir  string       // sent as x-opencode-directory when set
	name string       // sent as X-Tandem-Client: who answered, in the decision log and the replied events
}

// InDirectory returns a client whose calls are scoped to the project directory dir (absolute): the
// sessions it creates live there and its event stream carries that directory's events.
func (c *Client) InDirectory(dir string) *Client {
	cp := *c
	cp.dir = dir
	return &cp
}

// Named returns a copy of c that names itself name to the server (X-Tandem-Client), so the decision
// log and the other clients see who answered.
func (c *Client) Named(name string) *Client {
	cp := *c
	cp.name = name
	return &cp
}

// New returns a client of the server at base (http://host:port) with Basic credentials; an empty
// password sends none.
func New(base, user, password string) *Client {
	return &Client{base: strings.TrimSuffix(base, "/"),
		hc: &http.Client{Transport: credentials{user: user, password: password, next: http.DefaultTransport}}}
}

// credentials adds the Basic credentials to every request.
type credentials struct {
	user, password string
	next           http.RoundTripper
}

func (b credentials) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.password == "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return b.next.RoundTrip(r)
}

// HTTPClient sends this client's credentials, and its directory when it has one, with every
// request, for what the server speaks besides its REST API (MCP over Streamable HTTP at /mcp-server).
func (c *Client) HTTPClient() *http.Client {
	if c.dir == "" {
		return c.hc
	}
	return &http.Client{Transport: scoped{dir: c.dir, next: c.hc.Transport}}
}

// scoped adds a client's directory to every request.
type scoped struct {
	dir  string
	next http.RoundTripper
}

func (s scoped) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-opencode-directory", url.PathEscape(s.dir))
	return s.next.RoundTrip(r)
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base }

// Error is a non-2xx answer, in tandem's one error shape.
type Error struct {
	Status  int
	Name    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%d %s", e.Status, e.Name)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Message)
}

func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.dir != "" {
		req.Header.Set("x-opencode-directory", url.PathEscape(c.dir))
	}
	if c.name != "" {
		req.Header.Set("X-Tandem-Client", c.name)
	}
	return req, nil
}

// do sends in as JSON (nil: no body) and decodes the answer into out (nil: discarded).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		var e struct {
			Name string `json:"name"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Name == "" {
			e.Name = http.StatusText(res.StatusCode)
		}
		return &Error{Status: res.StatusCode, Name: e.Name, Message: e.Data.Message}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}

// Health checks that the server answers (GET /global/health, which needs no credentials).
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/global/health", nil, nil)
}

// CreateSession starts a session in the server's project directory.
func (c *Client) CreateSession(ctx context.Context, in api.SessionCreateInput) (api.Session, error) {
	var s api.Session
	return s, c.do(ctx, http.MethodPost, "/session", in, &s)
}

// Sessions lists the sessions of the client's directory, most recently updated first.
func (c *Client) Sessions(ctx context.Context) ([]api.Session, error) {
	var s []api.Session
	return s, c.do(ctx, http.MethodGet, "/session", nil, &s)
}

// Session reads one session.
func (c *Client) Session(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	return s, c.do(ctx, http.MethodGet, "/session/"+url.PathEscape(id), nil, &s)
}

// PromptAsync queues a prompt; the turn's progress arrives as events.
func (c *Client) PromptAsync(ctx context.Context, sessionID string, in api.PromptInput) error {
	return c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/prompt_async", in, nil)
}

// Messages reads a session's messages, oldest first.
func (c *Client) Messages(ctx context.Context, sessionID string) ([]api.MessageWithParts, error) {
	var m []api.MessageWithParts
	return m, c.do(ctx, http.MethodGet, "/session/"+url.PathEscape(sessionID)+"/message", nil, &m)
}

// Abort stops a session's running turn.
func (c *Client) Abort(ctx context.Context, sessionID string) error {
	return c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/abort", nil, nil)
}

// Agents lists the agents a session can run (GET /agent).
func (c *Client) Agents(ctx context.Context) ([]api.AgentInfo, error) {
	var a []api.AgentInfo
	return a, c.do(ctx, http.MethodGet, "/agent", nil, &a)
}

// Providers lists the configured providers with their models and the default model of each
// (GET /config/providers).
func (c *Client) Providers(ctx context.Context) (api.ConfigProviderList, error) {
	var p api.ConfigProviderList
	return p, c.do(ctx, http.MethodGet, "/config/providers", nil, &p)
}

// AddMCP connects an MCP server to the server's tools (POST /mcp); config is OpenCode's
// McpLocalConfig or McpRemoteConfig.
func (c *Client) AddMCP(ctx context.Context, name string, config any) error {
	return c.do(ctx, http.MethodPost, "/mcp", map[string]any{"name": name, "config": config}, nil)
}

// AddSessionMCP connects an MCP server for one session only (POST /mcp with sessionID): its tools
// are offered to that session alone, and it goes when the session is deleted. It returns the name
// the server is listed and removed under (mcp.SessionKey). A project server of the same name is an
// *Error with status 409.
func (c *Client) AddSessionMCP(ctx context.Context, sessionID, name string, config any) (string, error) {
	err := c.do(ctx, http.MethodPost, "/mcp", map[string]any{"name": name, "config": config, "sessionID": sessionID}, nil)
	if err != nil {
		return "", err
	}
	return api.MCPSessionKey(name, sessionID), nil
}

// MCPStatus lists every MCP server's status by the name it is listed under (GET /mcp).
func (c *Client) MCPStatus(ctx context.Context) (map[string]api.MCPStatus, error) {
	var out map[string]api.MCPStatus
	return out, c.do(ctx, http.MethodGet, "/mcp", nil, &out)
}

// RemoveMCP stops and forgets an MCP server added over the API (DELETE /mcp/{name}); a session's
// server is named as AddSessionMCP returned.
func (c *Client) RemoveMCP(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/mcp/"+url.PathEscape(name), nil, nil)
}

// Permissions lists the approvals waiting for a person.
func (c *Client) Permissions(ctx context.Context) ([]api.PermissionRequest, error) {
	var p []api.PermissionRequest
	return p, c.do(ctx, http.MethodGet, "/permission", nil, &p)
}

// ReplyPermission answers an approval: once, always or reject, with an optional message for the
// model. Another client may have answered first: that is an *Error with status 404 or 409.
func (c *Client) ReplyPermission(ctx context.Context, requestID string, reply api.PermissionReply, message string) error {
	body := map[string]any{"reply": reply}
	if message != "" {
		body["message"] = message
	}
	return c.do(ctx, http.MethodPost, "/permission/"+url.PathEscape(requestID)+"/reply", body, nil)
}

// RejectQuestion dismisses a question the agent asked.
func (c *Client) RejectQuestion(ctx context.Context, requestID string) error {
	return c.do(ctx, http.MethodPost, "/question/"+url.PathEscape(requestID)+"/reject", nil, nil)
}

// ReplyQuestion answers a question: one list of chosen labels (or typed text) per question asked.
func (c *Client) ReplyQuestion(ctx context.Context, requestID string, answers [][]string) error {
	return c.do(ctx, http.MethodPost, "/question/"+url.PathEscape(requestID)+"/reply", map[string]any{"answers": answers}, nil)
}
