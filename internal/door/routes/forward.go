package routes

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Owners says which node runs a session when several nodes share one database. A request that
// acts on a session's run (a prompt, an abort, a shell command, a revert...) is served by that
// node, whichever node it arrived at; reads are served anywhere, and answers to pending requests
// are settled in the database by whichever node they reach.
type Owners interface {
	// Owner returns the base URL of the live node that runs the session, or nil when this node
	// runs it or may (no node does). The error is Unavailable while the node that ran it has
	// stopped and no other node has taken the session over yet.
	Owner(ctx context.Context, sessionID string) (*url.URL, error)
	// Terminal returns the base URL of the live node a terminal runs on, or nil when it runs here
	// (or nowhere: this node answers 404).
	Terminal(ctx context.Context, ptyID string) (*url.URL, error)
	// Terminals lists the terminals the other live nodes run, for GET /pty.
	Terminals() []api.PtyInfo
	// Authorize sets the credentials a forwarded request carries to the owner (the nodes share
	// the server's password; a browser's cookie is this node's own).
	Authorize(h http.Header)
}

// ForwardedHeader marks a request one node forwarded to another: the receiving node serves it
// itself, so that ownership changing in between never sends it round in circles.
const ForwardedHeader = "X-Tandem-Forwarded"

// ownerOf returns how to find the node an operation must be served by, or nil for an operation
// any node serves. Writes under /session/{sessionID} act on a session's run and go to the node
// that runs it (the legacy permission reply excepted: answers are settled in the database at any
// node, and must be answerable while that node is down). Everything under /pty/{ptyID} goes to
// the node whose terminal it is: only that node has its process.
func ownerOf(op Op, owners Owners) func(r *http.Request) (*url.URL, error) {
	switch {
	case strings.HasPrefix(op.Path, "/pty/{ptyID}"):
		return func(r *http.Request) (*url.URL, error) { return owners.Terminal(r.Context(), chi.URLParam(r, "ptyID")) }
	case op.Method == http.MethodGet || op.Method == http.MethodHead || op.ID == "permission.respond":
		return nil
	case strings.HasPrefix(op.Path, "/session/{sessionID}"):
		return func(r *http.Request) (*url.URL, error) {
			return owners.Owner(r.Context(), chi.URLParam(r, "sessionID"))
		}
	}
	return nil
}

// forward serves the operation on the node owner names, or here when it names none.
func forward(owners Owners, owner func(r *http.Request) (*url.URL, error), h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) != "" {
			h.ServeHTTP(w, r)
			return
		}
		target, err := owner(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if target == nil {
			h.ServeHTTP(w, r)
			return
		}
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.SetXForwarded()
				// This node has checked the client's Host and Origin; the owner serves its own host,
				// and a cross-origin check there would compare the client's origin with the wrong one.
				pr.Out.Header.Del("Origin")
				pr.Out.Header.Set(ForwardedHeader, "1")
				owners.Authorize(pr.Out.Header)
			},
			// A prompt's reply, a shell command's output and a terminal arrive as the owner writes them.
			FlushInterval: -1,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				writeError(w, r, errs.E(errs.Unavailable, "the node that runs this (%s) did not answer: %v; retry in a few seconds (if it stopped, another node takes its sessions over)", target.Host, err))
			},
		}
		proxy.ServeHTTP(w, r)
	})
}
