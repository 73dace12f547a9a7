package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/tandem-dev/tandem/internal/door/routes"
)

// SnapshotPaths are the API's GETs the web UI makes before it can show the inbox and the composer
// (web/src/store.js, snapshotPaths, lists the same): the session list, their statuses, what waits
// for an answer, the agents and providers the composer offers, the terminals and MCP servers.
var SnapshotPaths = []string{
	"/session", "/session/status", "/permission", "/question", "/mcp/elicitation",
	"/agent", "/config/providers", "/pty", "/mcp",
}

// Snapshot answers SnapshotPaths for the browser that asked for the UI's page, as one JSON object
// by path, so the page can carry them (web.Snapshot). It is nil unless the request carries a
// valid session cookie (or the server has no password): only the cookie is passed on, so a
// password or token in the page's request never reaches these, and each GET goes through the
// whole chain (the same auth guard, scope and errors as the app's own requests). A path that
// fails is left out; the app asks for it again.
func (s *Server) Snapshot(r *http.Request) []byte {
	if s.cfg.Auth == nil || r.Context().Value(snapshotKey{}) != nil {
		return nil // a snapshot's own GET never builds another (the fallback may serve it)
	}
	cookie, err := r.Cookie(routes.SessionCookie)
	if err != nil && !s.cfg.Auth.Disabled() {
		return nil
	}
	get := func(path string) *recorder {
		// Marked as a snapshot's, and without the page request's routing state, which the
		// router would otherwise reuse for every GET at once.
		ctx := context.WithValue(context.WithValue(r.Context(), snapshotKey{}, true), chi.RouteCtxKey, (*chi.Context)(nil))
		sub := r.Clone(ctx)
		sub.Method = http.MethodGet
		sub.URL = &url.URL{Path: path}
		sub.RequestURI = path
		sub.Body, sub.ContentLength = http.NoBody, 0
		sub.Header = http.Header{"Accept": {"application/json"}}
		if ua := r.Header.Get("User-Agent"); ua != "" {
			sub.Header.Set("User-Agent", ua)
		}
		if cookie != nil {
			sub.AddCookie(cookie)
		}
		rec := &recorder{header: http.Header{}, code: http.StatusOK}
		s.http.Handler.ServeHTTP(rec, sub)
		return rec
	}
	// The first answer says whether the cookie is valid; only then are the others asked.
	first := get(SnapshotPaths[1])
	if first.code != http.StatusOK {
		return nil
	}
	answers := make([]*recorder, len(SnapshotPaths))
	answers[1] = first
	var wg sync.WaitGroup
	for i, path := range SnapshotPaths {
		if answers[i] != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = get(path)
		}()
	}
	wg.Wait()
	snap := make(map[string]json.RawMessage, len(SnapshotPaths))
	for i, path := range SnapshotPaths {
		if a := answers[i]; a.code == http.StatusOK && a.header.Get("Content-Encoding") == "" && json.Valid(a.body.Bytes()) {
			snap[path] = a.body.Bytes()
		}
	}
	if _, ok := snap["/session"]; !ok {
		return nil // no inbox to show: the app loads as it would without a snapshot
	}
	out, err := json.Marshal(snap)
	if err != nil {
		return nil
	}
	return out
}

// snapshotKey marks the context of a snapshot's GETs.
type snapshotKey struct{}

// recorder keeps a GET's answer in memory for Snapshot.
type recorder struct {
	header http.Header
	code   int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote && code >= 200 {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
