package routes

import (
	"context"
	"log/slog"
	"testing"

	"github.com/go-chi/chi/v5"
)

func TestRequestScope(t *testing.T) {
	base := slog.New(slog.DiscardHandler)
	t.Run("the directory set in place is the request's", func(t *testing.T) {
		ctx := WithLogger(t.Context(), base, "req1")
		if !SetDirectory(ctx, "/p") || DirectoryOf(ctx) != "/p" {
			t.Fatalf("directory %q", DirectoryOf(ctx))
		}
	})
	t.Run("a context without a scope is not changed in place", func(t *testing.T) {
		if SetDirectory(t.Context(), "/p") || DirectoryOf(t.Context()) != "" {
			t.Fatal("a bare context took a directory")
		}
	})
	t.Run("a derived directory leaves the parent's and keeps its logger and route", func(t *testing.T) {
		parent := WithLogger(t.Context(), base, "req1")
		SetDirectory(parent, "/a")
		child := WithDirectory(parent, "/b")
		if DirectoryOf(parent) != "/a" || DirectoryOf(child) != "/b" {
			t.Fatalf("parent %q, child %q", DirectoryOf(parent), DirectoryOf(child))
		}
		if scopeOf(child).id != "req1" || scopeOf(child).base != base {
			t.Fatal("the derived context lost the request's logger")
		}
		if chi.RouteContext(child) != chi.RouteContext(parent) || chi.RouteContext(parent) == nil {
			t.Fatal("the derived context has another router context")
		}
	})
	t.Run("a routed request keeps its router's context", func(t *testing.T) {
		routed := context.WithValue(t.Context(), chi.RouteCtxKey, chi.NewRouteContext())
		if got := chi.RouteContext(WithLogger(routed, base, "req1")); got != chi.RouteContext(routed) {
			t.Fatal("a new logger hid the router's context")
		}
	})
	t.Run("no logger is a discarding one", func(t *testing.T) {
		if LoggerOf(WithDirectory(t.Context(), "/p")) == nil {
			t.Fatal("no logger")
		}
	})
}
