// Package routes declares every HTTP operation tandem serves, once: method, path, input and output
// types, summary and handler. The same declarations build the chi router and the OpenAPI document.
// Handlers are short and uniform — decode, validate, call the domain, encode — and every error
// becomes an HTTP status in one place (writeError).
package routes

import (
	"context"
	"net/http"
	"reflect"
	"strings"

	"github.com/tandem-dev/tandem/internal/door/openapi"
)

// Auth says how a route is authenticated.
type Auth int

// Authentication modes.
const (
	AuthRequired Auth = iota // credentials or the session cookie
	AuthPublic               // no credentials (health)
	AuthTicket               // credentials, or a single-use ticket the handler redeems itself
)

// Op is one declared operation.
type Op struct {
	openapi.Operation
	Auth    Auth
	Handler http.HandlerFunc
}

// Call is what a handler gets besides its decoded input.
type Call struct {
	W   http.ResponseWriter
	R   *http.Request
	Dir string // the project directory the request is scoped to
}

// Ctx is the request context.
func (c *Call) Ctx() context.Context { return c.R.Context() }

// Header is the response header, for paging links.
func (c *Call) Header() http.Header { return c.W.Header() }

// NoContent is the output of operations that answer 204.
type NoContent struct{}

// op declares a JSON operation whose handler gets In decoded from the path, query, headers and body.
func op[In, Out any](method, path, opID, summary string, fn func(c *Call, in *In) (Out, error)) Op {
	var in In
	var out Out
	o := Op{Operation: openapi.Operation{
		Method: method, Path: path, ID: opID, Summary: summary,
		Tags:   []string{tagOf(opID)},
		Errors: []int{http.StatusBadRequest},
	}}
	if hasFields(reflect.TypeOf(in)) {
		o.Request = &in
	}
	if _, ok := any(out).(NoContent); ok {
		o.Status = http.StatusNoContent
	} else {
		o.Response = &out
	}
	bind := bindingOf(reflect.TypeFor[In]())
	o.Handler = func(w http.ResponseWriter, r *http.Request) {
		x := &exchange[In, Out]{c: Call{W: w, R: r, Dir: DirectoryOf(r.Context())}}
		if err := bind.decode(r, &x.in); err != nil {
			writeError(w, r, err)
			return
		}
		if v, ok := any(&x.in).(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				writeError(w, r, err)
				return
			}
		}
		var err error
		if x.out, err = fn(&x.c, &x.in); err != nil {
			writeError(w, r, err)
			return
		}
		if o.Status == http.StatusNoContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if body, ok := any(&x.out).(*encodedJSON); ok {
			writeJSON(w, r, http.StatusOK, body)
			return
		}
		writeJSON(w, r, http.StatusOK, x.out)
	}
	return o
}

// exchange is one call of an operation: the call, its input and its result in one allocation.
type exchange[In, Out any] struct {
	c   Call
	in  In
	out Out
}

// raw declares an operation whose handler writes its own response (SSE, WebSocket).
func raw(method, path, opID, summary string, in, out any, contentType string, h http.HandlerFunc) Op {
	return Op{
		Operation: openapi.Operation{
			Method: method, Path: path, ID: opID, Summary: summary, Tags: []string{tagOf(opID)},
			Request: in, Response: out, ContentType: contentType,
		},
		Handler: h,
	}
}

func tagOf(opID string) string {
	tag, _, _ := strings.Cut(opID, ".")
	return tag
}

func (o Op) doc(description string, errors ...int) Op {
	o.Description = description
	o.Errors = append(o.Errors, errors...)
	return o
}

// answers documents the success body as v's type, for a handler that returns it encoded already
// (encodedJSON).
func (o Op) answers(v any) Op {
	o.Response = v
	return o
}

func (o Op) public() Op {
	o.Auth = AuthPublic
	o.Public = true
	return o
}

func hasFields(t reflect.Type) bool {
	return t != nil && (t.Kind() != reflect.Struct || t.NumField() > 0)
}
