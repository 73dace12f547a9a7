package routes

import (
	"net/http"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Shares serves read-only links to sessions: the owner creates and revokes them; anyone holding
// a link reads that one session through it, and nothing else.
type Shares struct {
	Service *session.Service
}

// SharePath is the token of a read-only link.
type SharePath struct {
	Token string `path:"token" json:"-"`
}

// Validate refuses what cannot be a link's token (43 base64url characters) before any lookup.
func (p *SharePath) Validate() error {
	if len(p.Token) != 43 || strings.IndexFunc(p.Token, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return errs.E(errs.NotFound, "this link does not exist or was revoked")
	}
	return nil
}

// Ops declares the share routes.
func (s *Shares) Ops() []Op {
	return []Op{
		op(http.MethodPost, "/session/{sessionID}/share", "session.share", "Share session", func(c *Call, in *SessionPath) (session.Session, error) {
			return s.Service.Share(c.Ctx(), in.SessionID, baseURL(c.R))
		}).doc("Gives the session a read-only link (`share.url`), served by tandem itself at /s/{token}: the browser UI "+
			"showing this session only, to anyone with the link and no credentials. Sharing again returns the same link.", 404),
		op(http.MethodDelete, "/session/{sessionID}/share", "session.unshare", "Unshare session", func(c *Call, in *SessionPath) (session.Session, error) {
			return s.Service.Unshare(c.Ctx(), in.SessionID)
		}).doc("Revokes the read-only link: it stops working at once.", 404),
		op(http.MethodGet, "/s/{token}/session", "share.session", "Get a shared session", func(c *Call, in *SharePath) (session.Session, error) {
			return s.Service.Shared(c.Ctx(), in.Token)
		}).public().doc("The session a read-only link opens. The link's token is the only credential; an unknown or "+
			"revoked token is 404.", 404),
		op(http.MethodGet, "/s/{token}/message", "share.messages", "Get a shared session's messages", func(c *Call, in *SharePath) (encodedJSON, error) {
			return s.Service.SharedMessages(c.Ctx(), in.Token)
		}).public().answers(&[]session.WithParts{}).doc("The messages of the session a read-only link opens, oldest first, "+
			"without the project's absolute paths: no path (cwd, root) on assistant messages, and paths inside the project "+
			"written relative to it.", 404),
	}
}

// baseURL is the server's address as this client reached it, for links handed back to it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
