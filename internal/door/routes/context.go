// Request-scoped values (project directory, logger) and how the directory is resolved.

package routes

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/go-chi/chi/v5"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

type ctxKey int

const requestKey ctxKey = iota

// requestScope is what the server's middleware learns about a request before the router sees it:
// its ID, the logger to name it in, and its project directory. One value holds all three, so the
// middleware adds one context layer per request instead of one per fact (each layer costs a copy
// of the request and allocations on every call).
type requestScope struct {
	base *slog.Logger
	id   string
	dir  string
	// route is the router's context for the request when this layer provides it (see WithLogger).
	route *chi.Context
}

// requestCtx is the context layer that carries a requestScope; the scope and the router's
// context live in the same allocation as the layer.
type requestCtx struct {
	context.Context
	scope requestScope
	route chi.Context
	// Room for what the router records about the route it finds (its pattern, up to two path
	// parameters), which its own pooled contexts would otherwise hold.
	patterns         [1]string
	paramKeys, param [2]string
}

func (c *requestCtx) Value(key any) any {
	switch key {
	case requestKey:
		return &c.scope
	case chi.RouteCtxKey:
		if c.scope.route != nil {
			return c.scope.route
		}
	}
	return c.Context.Value(key)
}

func scopeOf(ctx context.Context) *requestScope {
	s, _ := ctx.Value(requestKey).(*requestScope)
	return s
}

// WithDirectory scopes a request context to a project directory.
func WithDirectory(ctx context.Context, dir string) context.Context {
	c := &requestCtx{Context: ctx}
	if s := scopeOf(ctx); s != nil {
		c.scope = *s
	}
	c.scope.dir = dir
	return c
}

// SetDirectory scopes the request of ctx to a project directory in place, when ctx carries the
// scope WithLogger made for it, and reports whether it did; otherwise the caller derives a context
// with WithDirectory. Only the middleware calls it, before any handler has seen ctx.
func SetDirectory(ctx context.Context, dir string) bool {
	s := scopeOf(ctx)
	if s == nil {
		return false
	}
	s.dir = dir
	return true
}

// DirectoryOf returns the directory a request is scoped to.
func DirectoryOf(ctx context.Context) string {
	if s := scopeOf(ctx); s != nil {
		return s.dir
	}
	return ""
}

// WithLogger attaches the request's ID and logger: base with the request's ID, made only when
// something is logged, so that a request that logs nothing costs no logger. A request that has not
// been routed yet also gets the router's context here: the router uses the one it finds instead of
// adding a context layer (and a copy of the request) of its own.
func WithLogger(ctx context.Context, base *slog.Logger, requestID string) context.Context {
	c := &requestCtx{Context: ctx}
	if s := scopeOf(ctx); s != nil {
		c.scope = *s
	}
	c.scope.base, c.scope.id = base, requestID
	// An outer scope's router context is its own request's: a request made inside another (the
	// page's snapshot GETs, several at once) must never route through it.
	c.scope.route = nil
	if chi.RouteContext(ctx) == nil {
		c.scope.route = &c.route
		c.route.RoutePatterns = c.patterns[:0]
		c.route.URLParams.Keys, c.route.URLParams.Values = c.paramKeys[:0], c.param[:0]
	}
	return c
}

// LoggerOf returns the request's logger.
func LoggerOf(ctx context.Context) *slog.Logger {
	if s := scopeOf(ctx); s != nil && s.base != nil {
		return s.base.With("request_id", s.id)
	}
	return slog.New(slog.DiscardHandler)
}

// ResolveDirectory turns a client's ?directory= or x-opencode-directory value into a clean absolute
// path that exists on this machine. Relative paths and missing directories are refused, so a session
// is never created in a place its tools cannot run.
func ResolveDirectory(query, header, fallback string) (string, error) {
	d := query
	if d == "" && header != "" {
		if u, err := url.PathUnescape(header); err == nil {
			d = u
		} else {
			d = header
		}
	}
	if d == "" {
		return fallback, nil
	}
	if !filepath.IsAbs(d) {
		return "", errs.E(errs.Invalid, "directory: must be an absolute path, got %q", d)
	}
	d = filepath.Clean(d)
	fi, err := os.Stat(d)
	if err != nil || !fi.IsDir() {
		return "", errs.E(errs.Invalid, "directory: %q is not a directory on this server", d)
	}
	return d, nil
}
