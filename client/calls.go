package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/agent/slash"
)

// SearchSessions lists the directory's sessions, most recently updated first; search keeps those
// whose title contains it (case-insensitive), limit bounds the page (0: the server's default).
func (c *Client) SearchSessions(ctx context.Context, search string, limit int) ([]session.Session, error) {
	q := url.Values{}
	if search != "" {
		q.Set("search", search)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/session"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []session.Session
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// RenameSession changes a session's title.
func (c *Client) RenameSession(ctx context.Context, sessionID, title string) (session.Session, error) {
	var s session.Session
	return s, c.do(ctx, http.MethodPatch, "/session/"+url.PathEscape(sessionID), session.UpdateInput{Title: &title}, &s)
}

// ForkSession copies a session (up to, not including, in.MessageID when given) into a new one.
func (c *Client) ForkSession(ctx context.Context, sessionID string, in session.ForkInput) (session.Session, error) {
	var s session.Session
	return s, c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/fork", in, &s)
}

// DeleteSession deletes a session and its messages.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	return c.do(ctx, http.MethodDelete, "/session/"+url.PathEscape(sessionID), nil, nil)
}

// Statuses reads every busy session's status (idle ones are absent).
func (c *Client) Statuses(ctx context.Context) (map[string]session.Status, error) {
	var out map[string]session.Status
	return out, c.do(ctx, http.MethodGet, "/session/status", nil, &out)
}

// Shell runs a command the user typed in a session (no approval: the user typed it); its output
// streams as a bash tool part.
func (c *Client) Shell(ctx context.Context, sessionID string, in session.ShellInput) error {
	return c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/shell", in, nil)
}

// FindFiles fuzzy-finds up to limit project paths matching query (directories end with "/").
func (c *Client) FindFiles(ctx context.Context, query string, limit int) ([]string, error) {
	q := url.Values{"query": {query}, "limit": {strconv.Itoa(limit)}}
	var out []string
	return out, c.do(ctx, http.MethodGet, "/find/file?"+q.Encode(), nil, &out)
}

// Questions lists the questions waiting for an answer.
func (c *Client) Questions(ctx context.Context) ([]question.Request, error) {
	var out []question.Request
	return out, c.do(ctx, http.MethodGet, "/question", nil, &out)
}

// Elicitation is a pending MCP elicitation as GET /mcp/elicitation lists it. The form's schema is
// kept as the server sent it: its properties' order is the form's layout.
type Elicitation struct {
	ID        string `json:"id"`
	Server    string `json:"server"`
	SessionID string `json:"sessionID,omitempty"`
	Tool      *struct {
		MessageID string `json:"messageID"`
		CallID    string `json:"callID"`
	} `json:"tool,omitempty"`
	// ParentSessionID and RootSessionID name the sessions a subagent's session descends from.
	ParentSessionID string          `json:"parentSessionID,omitempty"`
	RootSessionID   string          `json:"rootSessionID,omitempty"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	Domain          string          `json:"domain,omitempty"`
	Required        bool            `json:"required,omitempty"`
}

// Elicitations lists the MCP elicitations waiting for a person.
func (c *Client) Elicitations(ctx context.Context) ([]Elicitation, error) {
	var out []Elicitation
	return out, c.do(ctx, http.MethodGet, "/mcp/elicitation", nil, &out)
}

// ReplyElicitation answers an elicitation: accept (with the form's content), decline or cancel.
// Content that does not fit the form is an *Error with status 400 whose message names the field
// ("content.<name>: …"), and the elicitation stays pending.
func (c *Client) ReplyElicitation(ctx context.Context, elicitationID, action string, content map[string]any) error {
	body := map[string]any{"action": action}
	if content != nil {
		body["content"] = content
	}
	return c.do(ctx, http.MethodPost, "/mcp/elicitation/"+url.PathEscape(elicitationID)+"/reply", body, nil)
}

// Decide answers an approval with one key of its decision list (once, session, always, reject,
// reject-with-message, deny-always) and an optional message for the model.
func (c *Client) Decide(ctx context.Context, requestID, key, message string) error {
	return c.ReplyPermission(ctx, requestID, permission.Reply(key), message)
}

// Revert undoes a session from a message on (its files put back); the messages stay until the next
// prompt, and Unrevert brings everything back.
func (c *Client) Revert(ctx context.Context, sessionID, messageID string) (session.Session, error) {
	var s session.Session
	return s, c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/revert", session.RevertInput{MessageID: messageID}, &s)
}

// Unrevert cancels a session's revert.
func (c *Client) Unrevert(ctx context.Context, sessionID string) (session.Session, error) {
	var s session.Session
	return s, c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/unrevert", nil, &s)
}

// Summarize compacts a session: the model summarises the conversation so far.
func (c *Client) Summarize(ctx context.Context, sessionID string, in session.SummarizeInput) error {
	return c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/summarize", in, nil)
}

// Commands lists the slash commands the server offers in the client's directory: its built-ins
// (init, review), the configuration's and the command files'.
func (c *Client) Commands(ctx context.Context) ([]slash.Command, error) {
	var out []slash.Command
	return out, c.do(ctx, http.MethodGet, "/command", nil, &out)
}

// RunCommand runs a slash command in a session: the server expands its template and sends it as a
// prompt. It returns when the turn ends, with its last assistant message.
func (c *Client) RunCommand(ctx context.Context, sessionID string, in slash.RunInput) (session.WithParts, error) {
	var out session.WithParts
	return out, c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/command", in, &out)
}

// Share gives a session a read-only link (session.Share.URL); a shared session keeps its link.
func (c *Client) Share(ctx context.Context, sessionID string) (session.Session, error) {
	var s session.Session
	return s, c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/share", nil, &s)
}

// Unshare withdraws a session's link.
func (c *Client) Unshare(ctx context.Context, sessionID string) (session.Session, error) {
	var s session.Session
	return s, c.do(ctx, http.MethodDelete, "/session/"+url.PathEscape(sessionID)+"/share", nil, &s)
}
