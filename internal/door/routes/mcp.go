package routes

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// MCP serves the MCP servers tandem is a client of, and the elicitations they are waiting on.
type MCP struct {
	Manager *mcpclient.Manager
	// Sessions checks the session a server is added for (POST /mcp with sessionID).
	Sessions *session.Service
}

// MCPPath names a configured MCP server in the URL.
type MCPPath struct {
	Name string `path:"name" json:"-"`
}

// MCPAdd is the body of POST /mcp.
type MCPAdd struct {
	Name   string          `json:"name" required:"true" minLength:"1"`
	Config json.RawMessage `json:"config" required:"true" description:"OpenCode's McpLocalConfig {type:\"local\", command:[...], cwd?, environment?, enabled?, timeout?} or McpRemoteConfig {type:\"remote\", url, headers?, enabled?, timeout?}."`
	// SessionID is tandem's extension: the server is the session's alone.
	SessionID string `json:"sessionID,omitempty" pattern:"^ses" description:"tandem: add the server for this session only. Its tools are offered to that session's turns alone; it is listed as <name>@<sessionID> with sessionID set, is not kept across restarts, and goes when the session is deleted. A project server of the same name is never replaced: 409."`
}

// Validate refuses a missing name or config before the manager parses the config.
func (a *MCPAdd) Validate() error {
	if strings.TrimSpace(a.Name) == "" {
		return errs.E(errs.Invalid, "name: required")
	}
	if len(a.Config) == 0 || string(a.Config) == "null" {
		return errs.E(errs.Invalid, "config: required")
	}
	return nil
}

// ElicitationListQuery filters GET /mcp/elicitation.
type ElicitationListQuery struct {
	SessionID string `query:"sessionID" description:"Only the elicitations raised during this session's tool calls."`
}

// ElicitationPath names a pending elicitation in the URL.
type ElicitationPath struct {
	ElicitationID string `path:"elicitationID" pattern:"^eli" json:"-"`
}

// ElicitationReply is POST /mcp/elicitation/{elicitationID}/reply.
type ElicitationReply struct {
	ElicitationPath
	Action  string         `json:"action" required:"true" enum:"accept,decline,cancel"`
	Content map[string]any `json:"content,omitempty" description:"The filled-in form, for accept in form mode; checked against the requested schema, and fields left out take the schema's defaults."`
}

// Ops declares the MCP routes.
func (m *MCP) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/mcp", "mcp.status", "Get MCP status", func(c *Call, _ *struct{}) (map[string]mcpclient.Status, error) {
			return m.Manager.Status(), nil
		}).doc("Every configured server by name: connected, disabled, failed (with error), needs_auth or needs_client_registration. " +
			"A server added for one session is listed as `<name>@<sessionID>` with `sessionID` (tandem)."),
		op(http.MethodPost, "/mcp", "mcp.add", "Add MCP server", func(c *Call, in *MCPAdd) (map[string]mcpclient.Status, error) {
			if in.SessionID == "" {
				return m.Manager.Add(c.Ctx(), in.Name, in.Config)
			}
			if m.Sessions == nil {
				return nil, errs.E(errs.Unavailable, "sessions are not served here")
			}
			if _, err := m.Sessions.Get(c.Ctx(), in.SessionID); err != nil {
				return nil, err
			}
			st, err := m.Manager.AddForSession(c.Ctx(), in.SessionID, in.Name, in.Config)
			if err != nil {
				return nil, err
			}
			// A session deleted while its server connected may have been ended before the server
			// was listed: look again, so that no server outlives its session.
			if _, err := m.Sessions.Get(c.Ctx(), in.SessionID); errs.Is(err, errs.NotFound) {
				m.Manager.EndSession(in.SessionID)
				return nil, err
			}
			return st, nil
		}).doc("Adds (or replaces) a server and connects it before answering; one that cannot be reached is listed as failed "+
			"with the reason. A bad config gets 400 naming the field and changes nothing. The server is kept for this "+
			"project directory and is back after a restart, until DELETE /mcp/{name} removes it. "+
			"With `sessionID` (tandem) the server is that session's alone: its tools are offered to that session only, it is "+
			"listed as `<name>@<sessionID>` with `sessionID`, it is not kept across restarts, and it is removed with the session. "+
			"A name that a project server and a session's server would share gets 409 (neither replaces the other); "+
			"an unknown session gets 404.", 404, 409, 413, 415),
		op(http.MethodDelete, "/mcp/{name}", "mcp.remove", "Remove MCP server", func(c *Call, in *MCPPath) (map[string]mcpclient.Status, error) {
			return m.Manager.Remove(c.Ctx(), in.Name)
		}).doc("Stops a server added with POST /mcp and forgets it, also for later starts (emits mcp.server.removed {server}); "+
			"a configured server it replaced comes back, disconnected. A server defined only in a config file gets 409: "+
			"remove it there. Answers with every remaining server's status.", 404, 409),
		op(http.MethodPost, "/mcp/{name}/connect", "mcp.connect", "Connect MCP server", func(c *Call, in *MCPPath) (bool, error) {
			_, err := m.Manager.Connect(c.Ctx(), in.Name)
			return true, err
		}).doc("(Re)connects a server, e.g. one that failed or crashed; GET /mcp shows the outcome.", 404),
		op(http.MethodPost, "/mcp/{name}/disconnect", "mcp.disconnect", "Disconnect MCP server", func(c *Call, in *MCPPath) (bool, error) {
			return true, m.Manager.Disconnect(c.Ctx(), in.Name)
		}).doc("Closes the connection and stops a local server's process; the status becomes disabled.", 404),
		op(http.MethodGet, "/mcp/elicitation", "mcp.elicitation.list", "List pending elicitations", func(c *Call, in *ElicitationListQuery) ([]mcpclient.Elicitation, error) {
			return m.Manager.Elicitations(in.SessionID), nil
		}).doc("Requests from MCP servers for input from the user, oldest first: a form (`requestedSchema`) or a URL to open " +
			"(`url`, with its `domain` shown apart). tandem never opens a URL itself."),
		op(http.MethodPost, "/mcp/elicitation/{elicitationID}/reply", "mcp.elicitation.reply", "Reply to elicitation", func(c *Call, in *ElicitationReply) (bool, error) {
			return true, m.Manager.ReplyElicitation(in.ElicitationID, mcpclient.ElicitationReply{Action: in.Action, Content: in.Content}, who(c))
		}).doc("accept (with `content` for a form), decline or cancel. Content that does not fit the requested schema gets 400 "+
			"naming the field and the elicitation stays pending; the first reply wins and a later one gets 409.", 404, 409, 413, 415),
	}
}
