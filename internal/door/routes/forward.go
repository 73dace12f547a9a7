package routes

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

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
	// Authorize sets the credentials a forwarded request carries to the owner (the nodes share
	// the server's password; a browser's cookie is this node's own).
	Authorize(h http.Header)
}

// forwardedHeader marks a request one node forwarded to another: the receiving node serves it
// itself, so that ownership changing in between never sends it round in circles.
const forwardedHeader = "X-Tandem-Forwarded"

// runsOnOwner reports whether an operation acts on a session's run: it writes (not GET) under
// /session/{sessionID}. The legacy permission reply is the exception: answers are settled in the
// database at any node, and must be answerable while the owner is down.
func runsOnOwner(op Op) bool {
	if op.Method == http.MethodGet || op.Method == http.MethodHead || op.ID == "permission.respond" {
		return false
	}
	return strings.HasPrefix(op.Path, "/session/{sessionID}")
}

// forwardToOwner serves the operation on the node that runs the session named in its path.
func forwardToOwner(owners Owners, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(forwardedHeader) != "" {
			h.ServeHTTP(w, r)
			return
		}
		target, err := owners.Owner(r.Context(), pathSessionID(r))
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
				pr.Out.Header.Set(forwardedHeader, "1")
				owners.Authorize(pr.Out.Header)
			},
			// A prompt's reply and a shell command's output arrive as the owner writes them.
			FlushInterval: -1,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				writeError(w, r, errs.E(errs.Unavailable, "the node that runs this session (%s) did not answer: %v; retry in a few seconds (if it stopped, another node takes the session over)", target.Host, err))
			},
		}
		proxy.ServeHTTP(w, r)
	})
}

// pathSessionID is the {sessionID} of the matched route.
func pathSessionID(r *http.Request) string {
	return chi.URLParam(r, "sessionID")
}
