package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// ToolRef names the tool call during which a server asked, so clients can show the elicitation
// inside that tool part.
type ToolRef struct {
	MessageID string `json:"messageID" required:"true"`
	CallID    string `json:"callID" required:"true"`
}

// Elicitation is one pending request from an MCP server for input from the person, as GET
// /mcp/elicitation lists it and mcp.elicitation.asked carries it.
type Elicitation struct {
	ID        string   `json:"id" required:"true" pattern:"^eli"`
	Server    string   `json:"server" required:"true"`
	SessionID string   `json:"sessionID,omitempty"`
	Tool      *ToolRef `json:"tool,omitempty"`
	// ParentSessionID and RootSessionID name the sessions a subagent's session descends from
	// (tandem extension).
	ParentSessionID string `json:"parentSessionID,omitempty"`
	RootSessionID   string `json:"rootSessionID,omitempty"`
	Mode            string `json:"mode" required:"true" enum:"form,url"`
	Message         string `json:"message" required:"true"`
	// RequestedSchema is the form to fill in (form mode).
	RequestedSchema *FormSchema `json:"requestedSchema,omitempty"`
	// URL is the page the person is asked to open themselves (url mode), and Domain its host, shown
	// apart so a look-alike link is easier to spot. tandem never opens or fetches it.
	URL    string `json:"url,omitempty"`
	Domain string `json:"domain,omitempty"`
	// ElicitationID is the server's own ID of a URL elicitation (what its completion notice names).
	ElicitationID string `json:"elicitationId,omitempty"`
	// Required is true when the server refused a tool call until this URL is visited (error -32042):
	// accepting means "I have done it, retry the call".
	Required bool `json:"required,omitempty"`
	Time     struct {
		Created int64 `json:"created" required:"true"`
	} `json:"time" required:"true"`
	directory string
}

// ElicitationReply is a person's answer: POST /mcp/elicitation/{id}/reply.
type ElicitationReply struct {
	Action  string         `json:"action"` // accept, decline or cancel
	Content map[string]any `json:"content,omitempty"`
}

// Elicitations lists the waiting elicitations, oldest first; a non-empty sessionID keeps only those
// raised during that session's tool calls.
func (m *Manager) Elicitations(sessionID string) []Elicitation {
	items := m.elicit.List(sessionID)
	out := make([]Elicitation, len(items))
	for i, it := range items {
		out[i] = it.Request
	}
	return out
}

// Elicitation returns one waiting elicitation.
func (m *Manager) Elicitation(elicitationID string) (Elicitation, bool) {
	it, ok := m.elicit.Get(elicitationID)
	return it.Request, ok
}

// ReplyElicitation answers a waiting elicitation. Accepted form content is checked against the
// requested schema first: a problem is an Invalid error naming the field and the elicitation stays
// pending. Late replies are Conflict, unknown IDs NotFound.
func (m *Manager) ReplyElicitation(elicitationID string, r ElicitationReply, by pending.Who) error {
	it, ok := m.elicit.Get(elicitationID)
	if !ok {
		return m.elicit.Reply(elicitationID, r, by)
	}
	e := it.Request
	switch r.Action {
	case "accept":
		if e.Mode == "form" {
			content, err := e.RequestedSchema.Check(r.Content)
			if err != nil {
				return err
			}
			r.Content = content
		} else if len(r.Content) > 0 {
			return errs.E(errs.Invalid, "content: a URL elicitation is accepted without content")
		}
	case "decline", "cancel":
		r.Content = nil
	case "":
		return errs.E(errs.Invalid, "action: required (accept, decline or cancel)")
	default:
		return errs.E(errs.Invalid, "action: must be accept, decline or cancel, got %q", r.Action)
	}
	return m.elicit.Reply(elicitationID, r, by)
}

// ShareElicitations settles elicitations across the nodes that share the store (pending.Shared);
// claimed tells the node that asked one that an answer given here won, and that node calls
// ApplyElicitation.
func (m *Manager) ShareElicitations(ctx context.Context, claimed func(kind, itemID, sessionID string)) {
	if m.journal.DB == nil {
		return
	}
	m.journal.Shared = true
	m.elicit.Share(pending.Shared[Elicitation]{Ctx: ctx, DB: m.journal.DB, Kind: m.journal.Kind, Log: m.log, Claimed: claimed,
		Decode: func(row store.PendingRequest) (Elicitation, error) {
			e, err := decodeStored(row)
			return e.Elicitation, err
		}})
}

// ApplyElicitation gives an elicitation waiting here the answer another node claimed for it.
func (m *Manager) ApplyElicitation(elicitationID string) { m.elicit.Apply(elicitationID) }

func (m *Manager) elicitationAsked(it pending.Item[Elicitation]) {
	m.publish(it.Request.directory, api.EventElicitationAsked, it.Request)
}

func (m *Manager) elicitationResolved(it pending.Item[Elicitation], r pending.Resolution[ElicitationReply]) {
	e := it.Request
	m.publish(e.directory, api.EventElicitationReplied, api.ElicitationReplied{
		ID: e.ID, Server: e.Server, SessionID: e.SessionID, Action: r.Reply.Action, Cause: string(r.Cause), Reason: r.Reason,
		Client: r.By.Client,
	})
}

// attribute finds the tool call an elicitation belongs to: the one in ctx (multi-round-trip
// requests run inside the call), else the only call running on that server. With several calls
// running on one server nothing says which one asked, so none is named.
func (m *Manager) attribute(ctx context.Context, c *conn) (CallInfo, bool) {
	if info, ok := callFrom(ctx); ok {
		return info, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(c.inflight) != 1 {
		return CallInfo{}, false
	}
	for _, info := range c.inflight {
		return info, true
	}
	return CallInfo{}, false
}

func (m *Manager) newElicitation(ctx context.Context, c *conn, message string) (Elicitation, CallInfo) {
	e := Elicitation{ID: m.elicit.NewID(), Server: c.name, Message: message, directory: m.opts.Directory}
	e.Time.Created = time.Now().UnixMilli()
	info, ok := m.attribute(ctx, c)
	if ok {
		e.SessionID = info.SessionID
		e.ParentSessionID, e.RootSessionID = info.ParentSessionID, info.RootSessionID
		if info.CallID != "" {
			e.Tool = &ToolRef{MessageID: info.MessageID, CallID: info.CallID}
			if r, ok := m.claim(*e.Tool); ok {
				// The call of a turn resumed after a graceful stop asks again: it is the elicitation
				// listed since the start, under the same ID, and an answer given meanwhile is its answer.
				e.ID, e.Time.Created = r.ID, r.Time.Created
			}
		}
		if info.Directory != "" {
			e.directory = info.Directory
		}
	}
	return e, info
}

// ask waits for a person's answer to e, for as long as ctx and the connection last.
func (m *Manager) ask(ctx context.Context, c *conn, e Elicitation, info CallInfo) pending.Resolution[ElicitationReply] {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(c.ctx, func() { cancel(nil) })()
	if info.turn != nil && e.Tool != nil {
		// The server stopping the turn lets the elicitation go, still stored, before the tool call's
		// own cancellation reaches the MCP server and comes back as a cancel.
		defer context.AfterFunc(info.turn, func() {
			if pending.ServerStopping(info.turn) {
				m.markStopped(*e.Tool)
				cancel(pending.ErrServerStopping)
			}
		})()
	}
	if err := m.journal.Put(ctx, e.ID, e.SessionID, e.Time.Created, storedElicitation{Elicitation: e, Dir: e.directory}); err != nil {
		m.log.Error("store an elicitation", "id", e.ID, "err", err)
	}
	res := m.elicit.Ask(ctx, e.ID, e.SessionID, e, m.opts.ElicitationTimeout)
	if res.Cause != pending.Stopped {
		m.journal.Delete(context.WithoutCancel(ctx), e.ID)
	}
	return res
}

// storedElicitation is a waiting elicitation as the store keeps it.
type storedElicitation struct {
	Elicitation
	Dir string `json:"directory"`
}

// EndInterrupted resolves the elicitations that were waiting when the server last stopped as
// cancelled: the MCP server process that asked died with it, so no answer can reach it. Each gets
// its mcp.elicitation.replied event and is forgotten. Call it at start; only selects the sessions
// whose elicitations this node ends (on several nodes, its own).
func (m *Manager) EndInterrupted(ctx context.Context, only store.SessionFilter) error {
	m.mu.Lock()
	kept := map[string]bool{}
	for _, e := range m.resumed {
		kept[e.ID] = true
	}
	m.mu.Unlock()
	n, err := m.journal.DrainExcept(ctx, kept, only, func(data []byte) error {
		var e storedElicitation
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("mcp: stored elicitation: %w", err)
		}
		m.publish(e.Dir, api.EventElicitationReplied, api.ElicitationReplied{
			ID: e.ID, Server: e.Server, SessionID: e.SessionID, Action: "cancel", Cause: string(pending.Cancelled),
			Reason: "the server stopped while this elicitation was waiting",
		})
		return nil
	})
	if n > 0 {
		m.log.Warn("cancelled elicitations interrupted by a restart", "count", n)
	}
	return err
}

// handleElicitation turns an elicitation/create request into a pending elicitation and blocks until
// it is answered. The SDK runs it concurrently with everything else on the connection, and cancels
// ctx when the server gives up or the connection drops.
func (m *Manager) handleElicitation(ctx context.Context, c *conn, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p := req.Params
	e, info := m.newElicitation(ctx, c, p.Message)
	switch p.Mode {
	case "", "form": // a request without a mode is a form (MCP 2025-11-25)
		var sent json.RawMessage
		if c.schemas != nil {
			sent = c.schemas.take(p.RequestedSchema)
		}
		schema, err := parseFormSchema(p.RequestedSchema, sent)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		e.Mode, e.RequestedSchema = "form", schema
	case "url":
		u, err := elicitationURL(p.URL)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "url: " + err.Error()}
		}
		e.Mode, e.URL, e.Domain, e.ElicitationID = "url", p.URL, u.Hostname(), p.ElicitationID
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unsupported elicitation mode %q (tandem declares form and url)", p.Mode)}
	}
	res := m.ask(ctx, c, e, info)
	switch res.Cause {
	case pending.Replied, pending.TimedOut:
		return &sdk.ElicitResult{Action: res.Reply.Action, Content: res.Reply.Content}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("elicitation cancelled: " + res.Reason)
}

// elicitationComplete relays notifications/elicitation/complete. A URL elicitation still waiting for
// the person is resolved as accepted: the server says the out-of-band step is done.
func (m *Manager) elicitationComplete(server, elicitationID string) {
	props := api.ElicitationCompleted{Server: server, ElicitationID: elicitationID}
	for _, it := range m.elicit.Local("") {
		if e := it.Request; e.Server == server && e.Mode == "url" && e.ElicitationID == elicitationID && elicitationID != "" {
			props.ID, props.SessionID = e.ID, e.SessionID
			m.publish(e.directory, api.EventElicitationCompleted, props)
			_ = m.elicit.Reply(e.ID, ElicitationReply{Action: "accept"}, pending.Who{Client: "mcp:" + server})
			return
		}
	}
	m.publish("", api.EventElicitationCompleted, props)
}

// urlElicitationsRequired recognises a -32042 error and returns the URL elicitations it lists.
func urlElicitationsRequired(err error) ([]*sdk.ElicitParams, bool) {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != sdk.CodeURLElicitationRequired {
		return nil, false
	}
	var data struct {
		Elicitations []*sdk.ElicitParams `json:"elicitations"`
	}
	if json.Unmarshal(rpcErr.Data, &data) != nil || len(data.Elicitations) == 0 {
		return nil, false
	}
	for _, p := range data.Elicitations {
		if p == nil || p.URL == "" {
			return nil, false
		}
	}
	return data.Elicitations, true
}

// awaitRequiredURL shows one URL a server requires before it will run a tool, and waits until the
// person says they have completed it (or the server says so).
func (m *Manager) awaitRequiredURL(ctx context.Context, c *conn, info CallInfo, p *sdk.ElicitParams) error {
	u, err := elicitationURL(p.URL)
	if err != nil {
		return fmt.Errorf("MCP server %s requires a URL elicitation with an invalid URL: %w", c.name, err)
	}
	e, called := m.newElicitation(WithCall(ctx, info), c, p.Message)
	e.Mode, e.URL, e.Domain, e.ElicitationID, e.Required = "url", p.URL, u.Hostname(), p.ElicitationID, true
	res := m.ask(ctx, c, e, called)
	switch {
	case res.Cause == pending.Replied && res.Reply.Action == "accept":
		return nil
	case res.Cause == pending.Replied:
		return fmt.Errorf("MCP server %s needs %s to be completed first, and the user chose %s", c.name, p.URL, res.Reply.Action)
	case res.Cause == pending.TimedOut:
		return fmt.Errorf("MCP server %s needs %s to be completed first, and nobody did within the time allowed", c.name, p.URL)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("elicitation cancelled: " + res.Reason)
}

// elicitationURL checks a URL a server asks a person to open: an absolute http or https URL with a
// host. Anything else (javascript:, data:, file:) could run or read something where it is shown.
func elicitationURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("not an absolute http or https URL: %q", raw)
	}
	return u, nil
}
