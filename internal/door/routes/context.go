// Request-scoped values (project directory, logger) and how the directory is resolved.

package routes

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

type ctxKey int

const (
	dirKey ctxKey = iota
	loggerKey
)

// WithDirectory scopes a request context to a project directory.
func WithDirectory(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, dirKey, dir)
}

// DirectoryOf returns the directory a request is scoped to.
func DirectoryOf(ctx context.Context) string {
	d, _ := ctx.Value(dirKey).(string)
	return d
}

// WithLogger attaches the request's logger: base with the request's ID, made only when something
// is logged, so that a request that logs nothing costs no logger.
func WithLogger(ctx context.Context, base *slog.Logger, requestID string) context.Context {
	return context.WithValue(ctx, loggerKey, requestLogger{base: base, id: requestID})
}

type requestLogger struct {
	base *slog.Logger
	id   string
}

// LoggerOf returns the request's logger.
func LoggerOf(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(requestLogger); ok {
		return l.base.With("request_id", l.id)
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
