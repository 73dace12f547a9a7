package routes

import (
	"math"
	"net"
	"net/http"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/door/auth"
)

// SessionCookie is the browser session cookie's name.
const SessionCookie = "tandem_session"

// Login serves the browser's sign-in: a one-time link or the password, traded for an HttpOnly,
// SameSite=Strict cookie.
type Login struct {
	Auth *auth.Authority
}

// LoginTicket is GET /auth/login.
type LoginTicket struct {
	Ticket string `query:"ticket" required:"true" description:"The one-time ticket from the link tandem web opened."`
}

// LoginPassword is POST /auth/login.
type LoginPassword struct {
	Username string `json:"username,omitempty" description:"Defaults to the server's user name."`
	Password string `json:"password" required:"true"`
}

// Ops declares the login routes.
func (l *Login) Ops() []Op {
	ticket := raw(http.MethodGet, "/auth/login", "auth.login.ticket", "Sign in with a one-time link", &LoginTicket{}, nil, "text/html",
		func(w http.ResponseWriter, r *http.Request) {
			token, ok := l.Auth.RedeemTicket(r.URL.Query().Get("ticket"))
			if !ok {
				http.Redirect(w, r, "/#/login?expired=1", http.StatusSeeOther)
				return
			}
			l.setCookie(w, r, token)
			// A clean URL: the ticket never stays in the address bar or the history.
			http.Redirect(w, r, "/", http.StatusSeeOther)
		}).doc("Trades a single-use ticket (valid 2 minutes) for the session cookie and redirects to the UI. " +
		"The one GET that changes state, because a browser opens the link.")
	ticket.Status = http.StatusSeeOther
	ticket.Auth, ticket.Public = AuthPublic, true
	return append([]Op{
		ticket,
		op(http.MethodPost, "/auth/login", "auth.login.password", "Sign in with the password", func(c *Call, in *LoginPassword) (NoContent, error) {
			user := in.Username
			if user == "" {
				user = l.Auth.Username()
			}
			client := ClientAddr(c.R)
			ok := l.Auth.Check(user, in.Password)
			// The server's own user is neither throttled nor counted (FromOwnUser), so its successes
			// never clear another user's failures; the socket table is read only when it matters.
			if (!ok || l.Auth.Failing(client)) && !FromOwnUser(c.R) {
				if wait := l.Auth.LoginWait(client); wait > 0 {
					return NoContent{}, TooManyLogins(client, wait) // right or wrong alike: a guess learns nothing
				}
				l.Auth.LoginResult(client, ok)
			}
			if !ok {
				return NoContent{}, errs.E(errs.Unauthorized, "wrong user name or password")
			}
			l.setCookie(c.W, c.R, l.Auth.NewSession())
			return NoContent{}, nil
		}).public().doc("Sets the session cookie.", 401, 415),
		op(http.MethodPost, "/auth/logout", "auth.logout", "Sign out", func(c *Call, _ *struct{}) (NoContent, error) {
			http.SetCookie(c.W, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if ck, err := c.R.Cookie(SessionCookie); err == nil {
				// The token is refused from now on; an error means the logout may not outlive a restart.
				return NoContent{}, l.Auth.EndSession(ck.Value)
			}
			return NoContent{}, nil
		}).public().doc("Ends the browser session."),
	}, l.pairOps()...)
}

func (l *Login) setCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(auth.SessionTTL / time.Second),
	})
}

// ClientAddr is the address failed logins are counted against: the connection's IP (tandem does not
// trust forwarding headers).
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// FromOwnUser reports whether r came over loopback from a process of the user this server runs as
// (Linux only). Such a process can read the server's environment and files, password included, so
// throttling its guesses protects nothing and would only let it lock its user out.
func FromOwnUser(r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	client, err := net.ResolveTCPAddr("tcp", r.RemoteAddr)
	return err == nil && local != nil && peerIsOwner(client, local)
}

// TooManyLogins is the 429 for an address that failed to log in too often; the client is told
// when to try again (data.retryAfter, seconds).
func TooManyLogins(client string, wait time.Duration) error {
	secs := int(math.Ceil(wait.Seconds()))
	e := errs.E(errs.TooManyRequests, "too many failed logins from %s: try again in %d s", client, secs)
	e.Data = map[string]any{"retryAfter": secs}
	return e
}
