package routes

import (
	"net/http"
	"sort"

	"github.com/go-chi/chi/v5"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/door/openapi"
)

// Module is a group of operations with the dependencies they need; each routes file defines one.
type Module interface {
	Ops() []Op
}

// Guard wraps a handler with the authentication its operation asks for; the server provides it.
type Guard func(op Op, h http.Handler) http.Handler

// API is the set of modules a server exposes.
type API struct {
	Info    openapi.Info
	Modules []Module
	// Owners, when several nodes share one database, sends requests acting on a session's run to
	// the node that runs it; nil on one node.
	Owners Owners
}

// Ops lists every operation, the document's included, in a stable order.
func (a *API) Ops() []Op {
	ops := []Op{a.docOp()}
	for _, m := range a.Modules {
		ops = append(ops, m.Ops()...)
	}
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	return ops
}

// Router builds the chi router from the operations.
func (a *API) Router(guard Guard) chi.Router {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, req, notFound("No route for %s %s", req.Method, req.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, req, errs.E(errs.MethodNotAllowed, "%s is not allowed on %s", req.Method, req.URL.Path))
	})
	for _, op := range a.Ops() {
		var h http.Handler = op.Handler
		if a.Owners != nil {
			if owner := ownerOf(op, a.Owners); owner != nil {
				h = forward(a.Owners, owner, h)
			}
		}
		if guard != nil {
			h = guard(op, h)
		}
		r.Method(op.Method, op.Path, h)
	}
	return r
}

// Document builds the OpenAPI document from the operations.
func (a *API) Document() ([]byte, error) {
	ops := a.Ops()
	docs := make([]openapi.Operation, len(ops))
	for i, op := range ops {
		docs[i] = op.Operation
	}
	return openapi.Build(a.Info, docs)
}

func (a *API) docOp() Op {
	return raw(http.MethodGet, "/doc", "app.doc", "OpenAPI document", nil, map[string]any{}, "application/json",
		func(w http.ResponseWriter, r *http.Request) {
			body, err := a.Document()
			if err != nil {
				writeError(w, r, err)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}).doc("This document: every operation tandem serves, generated from the route declarations.")
}
