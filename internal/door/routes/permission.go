package routes

import (
	"context"
	"net/http"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Permissions serves pending approvals, their replies, grants and the decision log.
type Permissions struct {
	Service *permission.Service
	// ProjectID names the scope the grants of a directory are stored under (session.GrantScope).
	ProjectID func(ctx context.Context, dir string) string
	// Names lists the permissions a request can carry (tool names, edit, external_directory, and
	// <server>_* for MCP servers); a rule for none of them is refused. Nil accepts any name.
	Names func() []string
}

// PermissionListQuery filters GET /permission.
type PermissionListQuery struct {
	SessionID string `query:"sessionID" description:"Only this session's requests."`
}

// PermissionReply is POST /permission/{requestID}/reply.
type PermissionReply struct {
	RequestID string   `path:"requestID" pattern:"^per" json:"-"`
	Reply     string   `json:"reply" required:"true" enum:"once,always,reject,session,reject-with-message,deny-always" description:"OpenCode's once, always or reject, or any key of the request's decisions (tandem extension): session, reject-with-message, deny-always."`
	Message   string   `json:"message,omitempty" description:"For reject: told to the model, which continues with it. Required with reject-with-message."`
	Patterns  []string `json:"patterns,omitempty" description:"With session, always or deny-always: remember only these of the patterns the decision offers (default: all of them)."`
}

// PermissionRespond is the legacy POST /session/{sessionID}/permissions/{permissionID}.
type PermissionRespond struct {
	SessionPath
	PermissionID string           `path:"permissionID" pattern:"^per" json:"-"`
	Response     permission.Reply `json:"response" required:"true" enum:"once,always,reject"`
}

// Validate checks the enum exactly.
func (in *PermissionRespond) Validate() error {
	if _, err := permission.ParseReply(string(in.Response)); err != nil {
		return errs.E(errs.Invalid, "response: expected \"once\" | \"always\" | \"reject\", got %q", in.Response)
	}
	return nil
}

// GrantQuery filters GET /permission/grant.
type GrantQuery struct {
	All bool `query:"all" description:"Grants of every project, not only the directory's."`
}

// GrantCreate is POST /permission/grant.
type GrantCreate struct {
	permission.NewGrant
}

// GrantPath names a grant.
type GrantPath struct {
	GrantID string `path:"grantID" pattern:"^grt" json:"-"`
}

// HistoryQuery filters GET /permission/history.
type HistoryQuery struct {
	SessionID string `query:"sessionID"`
	Limit     int    `query:"limit" minimum:"1" maximum:"1000" description:"Default 100."`
}

// Ops declares the permission routes.
func (p *Permissions) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/permission", "permission.list", "List pending permissions", func(c *Call, in *PermissionListQuery) ([]permission.Request, error) {
			return p.Service.List(in.SessionID, explicitDirectory(c)), nil
		}).doc("Requests waiting for a person, oldest first. Without ?directory= every directory's; answered at POST /permission/{id}/reply."),
		op(http.MethodPost, "/permission/{requestID}/reply", "permission.reply", "Respond to permission request", func(c *Call, in *PermissionReply) (bool, error) {
			return true, p.Service.Reply(in.RequestID, permission.Answer{Decision: in.Reply, Message: in.Message, Patterns: in.Patterns}, who(c))
		}).doc("The first reply wins; a later one gets 409 whose data names the reply that won. "+
			"reply is a key of the request's decisions: \"session\" allows its patterns until the session is deleted, "+
			"\"always\" and \"deny-always\" are remembered for the project across restarts (see /permission/grant). "+
			"A key the request does not offer is a 400 naming the valid ones. patterns narrows a lasting answer to some of the "+
			"patterns its decision offers; any other pattern is a 400.", 400, 404, 409, 415),
		op(http.MethodPost, "/session/{sessionID}/permissions/{permissionID}", "permission.respond", "Respond to permission (legacy)", func(c *Call, in *PermissionRespond) (bool, error) {
			if owner, ok := p.Service.Owner(in.PermissionID); ok && owner != in.SessionID {
				return false, errs.E(errs.NotFound, "Permission request %s does not belong to session %s", in.PermissionID, in.SessionID)
			}
			return true, p.Service.Reply(in.PermissionID, permission.Answer{Reply: in.Response}, who(c))
		}).doc("OpenCode's older form of the reply, with {response}.", 404, 409, 415),
		op(http.MethodGet, "/permission/grant", "permission.grant.list", "List remembered grants", func(c *Call, in *GrantQuery) ([]permission.Grant, error) {
			project := p.ProjectID(c.Ctx(), c.Dir)
			if in.All {
				project = ""
			}
			return p.Service.Grants(c.Ctx(), project)
		}).doc("tandem extension: the \"always\" (action allow) and \"deny-always\" (action deny) answers remembered for the project."),
		op(http.MethodPost, "/permission/grant", "permission.grant.create", "Add a remembered rule", func(c *Call, in *GrantCreate) (permission.Grant, error) {
			if err := p.knownPermission(in.Permission); err != nil {
				return permission.Grant{}, err
			}
			return p.Service.AddGrant(c.Ctx(), p.ProjectID(c.Ctx(), c.Dir), in.NewGrant, who(c))
		}).doc("tandem extension: a rule for the directory's project, kept across restarts like an answered \"deny-always\" "+
			"(a permission that no tool asks for, such as a typo, is refused with 400 and the names that exist; wildcards match any) "+
			"(action deny, the default) or \"always\" (action allow). A deny refuses matching calls without asking, whatever else "+
			"allows them; an allow only spares the question (a configured deny still wins). Waiting requests it decides are "+
			"answered at once. Listed at GET /permission/grant and revoked with DELETE /permission/grant/{grantID}.", 400, 413, 415),
		op(http.MethodDelete, "/permission/grant/{grantID}", "permission.grant.delete", "Revoke a remembered grant", func(c *Call, in *GrantPath) (permission.Grant, error) {
			return p.Service.Revoke(c.Ctx(), in.GrantID)
		}).doc("tandem extension: matching requests ask again.", 404),
		op(http.MethodGet, "/permission/history", "permission.history", "Permission decision log", func(c *Call, in *HistoryQuery) ([]permission.Decision, error) {
			return p.Service.History(c.Ctx(), in.SessionID, in.Limit)
		}).doc("tandem extension: who answered what and when (client, address), timeouts and cancellations included; newest first."),
	}
}

// explicitDirectory is the directory a client asked for, or "" when it named none.
func explicitDirectory(c *Call) string {
	if c.R.URL.Query().Get("directory") != "" || c.R.Header.Get("x-opencode-directory") != "" {
		return c.Dir
	}
	return ""
}

// knownPermission refuses a rule for a permission no request can carry. A name with a wildcard
// (* or ?) is a pattern over names and is taken as written.
func (p *Permissions) knownPermission(name string) error {
	name = strings.TrimSpace(name)
	if p.Names == nil || name == "" || strings.ContainsAny(name, "*?") {
		return nil
	}
	names := p.Names()
	for _, n := range names {
		if permission.Match(n, name) {
			return nil
		}
	}
	return errs.E(errs.Invalid, "permission %q: no tool asks for it; the permissions are %s", name, strings.Join(names, ", "))
}

// who identifies the answering client for the decision log.
func who(c *Call) pending.Who {
	return pending.Who{Client: clientName(c.R.Header.Get("X-Tandem-Client"), c.R.UserAgent()), Addr: c.R.RemoteAddr}
}
