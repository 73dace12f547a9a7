package server

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
)

// guard returns the per-operation authentication wrapper the router applies.
func guard(a *auth.Authority) routes.Guard {
	return func(op routes.Op, next http.Handler) http.Handler {
		if op.Auth == routes.AuthPublic {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if op.Auth == routes.AuthTicket && r.URL.Query().Get("ticket") != "" {
				next.ServeHTTP(w, r) // the handler redeems the ticket itself
				return
			}
			client := routes.ClientAddr(r)
			ok, presented := authenticate(a, r)
			// Only the password can be guessed: a session cookie is never throttled, and neither
			// is a process of the server's own user, which can read the server's environment and
			// files anyway; throttling it would only let it lock its user out.
			// Its results are not counted either, so its successes never clear another user's
			// failures. (The socket table is read only when the address has failed lately.)
			if guessable(presented) && (!ok || a.Failing(client)) && !routes.FromOwnUser(r) {
				if wait := a.LoginWait(client); wait > 0 {
					// Still 429 whether the password was right or not: during the wait a guess
					// learns nothing.
					routes.WriteError(w, r, routes.TooManyLogins(client, wait))
					return
				}
				a.LoginResult(client, ok)
			}
			if !ok {
				// Wrong credentials and none at all are different mistakes: say which one it is.
				msg := "authentication required: HTTP Basic, Bearer, ?auth_token= or the session cookie"
				if presented != "" {
					msg = "wrong credentials: the " + presented + " was not accepted"
				}
				routes.WriteError(w, r, errs.E(errs.Unauthorized, "%s", msg))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// guessable reports whether a credential kind carries the password, the only secret short enough
// to guess (session cookies and tickets are 256-bit random).
func guessable(presented string) bool {
	return presented != "" && !strings.HasPrefix(presented, "session cookie")
}

// authenticate reports whether r carries valid credentials and, when it does not, which kind it
// presented (empty when none).
func authenticate(a *auth.Authority, r *http.Request) (ok bool, presented string) {
	if a.Disabled() {
		return true, ""
	}
	if a.CheckBasicHeader(r.Header.Get("Authorization")) {
		return true, "user name or password"
	}
	if user, pass, hasBasic := r.BasicAuth(); hasBasic {
		return a.Check(user, pass), "user name or password"
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return a.CheckBearer(strings.TrimSpace(h[7:])), "bearer token"
	}
	if t := r.URL.Query().Get("auth_token"); t != "" {
		return a.CheckToken(t), "auth_token"
	}
	if c, err := r.Cookie(routes.SessionCookie); err == nil {
		return a.CheckSession(c.Value), "session cookie (expired or signed out)"
	}
	return false, ""
}

// hostGuard refuses requests whose Host does not name this server, so a DNS-rebinding page cannot
// reach a loopback server through a name it controls.
func (s *Server) hostGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowedHost(r.Host) {
			routes.WriteError(w, r, errs.Named(errs.Forbidden, "ForbiddenHostError", "Host %q does not name this server", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) allowedHost(hostport string) bool {
	if !s.loopback {
		return true // a non-loopback server always has a password; rebinding gains nothing
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if port != "" && port != s.port {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// originGuard refuses cross-origin requests: the request does not execute at all (OpenCode only
// leaves out the CORS headers and runs it). Allowed origins are the server's own and --cors ones;
// for those, CORS preflights are answered here, before authentication.
func (s *Server) originGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := w.Header(); h["Vary"] == nil {
			h["Vary"] = []string{"Origin"} // compressJSON folds its Accept-Encoding into this line
		} else {
			h.Add("Vary", "Origin")
		}
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		sameOrigin := s.sameOrigin(origin, r)
		listed := s.cors[origin]
		if !sameOrigin && !listed {
			routes.WriteError(w, r, errs.Named(errs.Forbidden, "ForbiddenOriginError", "Origin %q is not allowed; start the server with --cors %s to allow it", origin, origin))
			return
		}
		if listed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Expose-Headers", "Link, x-next-cursor")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT, PATCH, POST, DELETE")
				if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
					h.Set("Access-Control-Allow-Headers", req)
				}
				h.Set("Access-Control-Max-Age", "86400")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host)
}

// scope resolves the request's project directory (?directory=, ?location[directory]= or x-opencode-directory).
func (s *Server) scope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var query string
		// Most requests name no directory in the query: they are spared parsing it here (a key
		// can only spell "directory" plainly or with %-escapes).
		if raw := r.URL.RawQuery; strings.Contains(raw, "directory") || strings.Contains(raw, "%") {
			q := r.URL.Query()
			query = q.Get("directory")
			if query == "" {
				query = q.Get("location[directory]") // OpenCode's v2 /api/* routes
			}
		}
		// Canonical header keys here and below: another spelling is copied on every call.
		dir, err := routes.ResolveDirectory(query, r.Header.Get("X-Opencode-Directory"), s.cfg.Directory)
		if err != nil {
			if ok, _ := authenticate(s.cfg.Auth, r); !ok {
				// Say nothing about the file system to a stranger: authentication answers first.
				dir = s.cfg.Directory
			} else {
				routes.WriteError(w, r, err)
				return
			}
		}
		if !routes.SetDirectory(r.Context(), dir) {
			r = r.WithContext(routes.WithDirectory(r.Context(), dir))
		}
		next.ServeHTTP(w, r)
	})
}

// observe gives each request an ID and a logger, logs it, and turns a panic into a 500.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := &exchange{rec: statusRecorder{ResponseWriter: w, status: http.StatusOK, upgrade: r.Header.Get("Upgrade") != ""}}
		reqID := r.Header.Get("X-Request-Id")
		if reqID == "" || len(reqID) > 64 {
			reqID = newRequestID()
		}
		x.id[0] = reqID
		w.Header()["X-Request-Id"] = x.id[:] // canonical already: Set would allocate the key again
		r = r.WithContext(routes.WithLogger(r.Context(), s.log, reqID))
		rec := &x.rec
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic", "request_id", reqID, "panic", p, "stack", string(debug.Stack()))
				if !rec.wrote {
					routes.WriteError(rec, r, errs.E(errs.Internal, "Unexpected server error. Check server logs for details."))
				}
			}
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.log.LogAttrs(r.Context(), slog.LevelDebug, "request", slog.String("request_id", reqID),
					slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.Int("status", rec.status), slog.Duration("took", time.Since(start)))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// exchange is the per-request state observe keeps, in one allocation.
type exchange struct {
	rec statusRecorder
	id  [1]string // the X-Request-Id header's value
}

// newRequestID makes a request's ID: 64 random bits in hex. It names the request in logs and
// error references and guards nothing, so it comes from the runtime's per-thread generator
// (ChaCha8, seeded from the OS), not a system call per request.
func newRequestID() string {
	var raw [8]byte
	var b [16]byte
	binary.BigEndian.PutUint64(raw[:], rand.Uint64())
	hex.Encode(b[:], raw[:])
	return string(b[:])
}

// statusRecorder remembers the status for the access log. It keeps Flush and Hijack reachable
// through Unwrap, which http.ResponseController and the WebSocket upgrade rely on.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	wrote   bool
	upgrade bool // the request asks to switch protocols (a WebSocket)
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	r.wrote = true
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack lets a WebSocket upgrade or an SSE stream take the connection. Only the upgrade answers
// 101; a stream writes its own 200 head, and the access log says so.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.wrote = true
	if r.upgrade {
		r.status = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// bodyDeadline gives a request body a deadline to arrive in (Config.BodyTimeout); once the body has
// been read the deadline is lifted, so a long synchronous request (a prompt) is not cut short.
// Streams (SSE, WebSocket) are GETs without a body and are not affected.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	limit := s.cfg.BodyTimeout
	if limit <= 0 {
		limit = 30 * time.Second
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(limit)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
		}
		next.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	lift func()
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.lift)
	}
	return n, err
}
