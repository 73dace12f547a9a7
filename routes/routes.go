// Package routes declares every HTTP operation tandem serves, once: method, path, input and output
// types, summary and handler. The same declarations build the chi router and the OpenAPI document.
// Handlers are short and uniform — decode, validate, call the domain, encode — and every error
// becomes an HTTP status in one place (writeError).
package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"tandem/errs"
	"tandem/openapi"
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

// MaxBody bounds request bodies; larger ones get 413.
const MaxBody = 8 << 20

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
	o.Handler = func(w http.ResponseWriter, r *http.Request) {
		c := &Call{W: w, R: r, Dir: DirectoryOf(r.Context())}
		var in In
		if err := decode(r, &in); err != nil {
			writeError(w, r, err)
			return
		}
		if v, ok := any(&in).(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				writeError(w, r, err)
				return
			}
		}
		res, err := fn(c, &in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if o.Status == http.StatusNoContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, r, http.StatusOK, res)
	}
	return o
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

func (o Op) public() Op {
	o.Auth = AuthPublic
	o.Public = true
	return o
}

func hasFields(t reflect.Type) bool {
	return t != nil && (t.Kind() != reflect.Struct || t.NumField() > 0)
}

// decode fills in from path parameters, the query string, headers and the JSON body.
func decode(r *http.Request, in any) error {
	v := reflect.ValueOf(in).Elem()
	if v.Kind() != reflect.Struct {
		return decodeBody(r, in)
	}
	hasBody, err := bindParams(r, v)
	if err != nil {
		return err
	}
	if !hasBody {
		return checkNoBody(r)
	}
	return decodeBody(r, in)
}

// bindParams sets the fields tagged path, query or header (also in embedded structs) and reports
// whether any field belongs to the JSON body.
func bindParams(r *http.Request, v reflect.Value) (hasBody bool, err error) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		var raw, where, name string
		var present bool
		switch {
		case f.Tag.Get("path") != "":
			where, name = "path", f.Tag.Get("path")
			raw = chi.URLParam(r, name)
			present = raw != ""
		case f.Tag.Get("query") != "":
			where, name = "query", f.Tag.Get("query")
			present = r.URL.Query().Has(name)
			raw = r.URL.Query().Get(name)
		case f.Tag.Get("header") != "":
			where, name = "header", f.Tag.Get("header")
			raw = r.Header.Get(name)
			present = raw != ""
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			body, err := bindParams(r, v.Field(i))
			if err != nil {
				return false, err
			}
			hasBody = hasBody || body
			continue
		default:
			if f.Tag.Get("json") != "-" && f.IsExported() {
				hasBody = true
			}
			continue
		}
		if !present {
			continue
		}
		if err := setScalar(v.Field(i), raw); err != nil {
			return false, errs.E(errs.Invalid, "%s parameter %q: %v", where, name, err)
		}
	}
	return hasBody, nil
}

func setScalar(f reflect.Value, raw string) error {
	switch f.Kind() {
	case reflect.String:
		f.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("expected true or false, got %q", raw)
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			// OpenCode documents some of these as numbers; accept an integral float.
			fl, ferr := strconv.ParseFloat(raw, 64)
			if ferr != nil || fl != float64(int64(fl)) {
				return fmt.Errorf("expected an integer, got %q", raw)
			}
			n = int64(fl)
		}
		f.SetInt(n)
	case reflect.Float64:
		fl, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("expected a number, got %q", raw)
		}
		f.SetFloat(fl)
	default:
		return fmt.Errorf("unsupported parameter type %s", f.Type())
	}
	return nil
}

// checkNoBody refuses a non-JSON content type on a mutating request even when no body is expected,
// so a cross-site form or text/plain POST never reaches a handler.
func checkNoBody(r *http.Request) error {
	if isSafe(r.Method) {
		return nil
	}
	return checkContentType(r, false)
}

func isSafe(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// checkContentType requires application/json when a body is present or a type is declared.
func checkContentType(r *http.Request, bodyPresent bool) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if bodyPresent {
			return errs.E(errs.Unsupported, "Content-Type must be application/json")
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return errs.E(errs.Unsupported, "Content-Type must be application/json, got %q", ct)
	}
	return nil
}

func decodeBody(r *http.Request, in any) error {
	if isSafe(r.Method) {
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errs.E(errs.TooLarge, "request body larger than %d bytes", MaxBody)
		}
		return errs.E(errs.Invalid, "reading request body: %v", err)
	}
	trimmed := strings.TrimSpace(string(body))
	if err := checkContentType(r, trimmed != ""); err != nil {
		return err
	}
	if trimmed == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if err := dec.Decode(in); err != nil {
		return errs.E(errs.Invalid, "%s", describeJSONError(err))
	}
	if dec.More() {
		return errs.E(errs.Invalid, "request body: unexpected data after the JSON value")
	}
	return nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return fmt.Sprintf("%s: expected %s, got JSON %s", field, typeErr.Type, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("request body: invalid JSON at byte %d: %v", syntaxErr.Offset, err)
	default:
		return "request body: " + err.Error()
	}
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, r, fmt.Errorf("encode response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteError maps err to a status and writes the one error shape. Internal errors are logged with
// the request ID and shown to the client only as a reference.
func WriteError(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, err) }

func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *errs.Error
	if !errors.As(err, &e) {
		ref := fmt.Sprintf("err_%x", time.Now().UnixNano()&0xffffffffff)
		LoggerOf(r.Context()).Error("internal error", "err", err, "ref", ref, "method", r.Method, "path", r.URL.Path)
		e = &errs.Error{Kind: errs.Internal, Message: "Unexpected server error. Check server logs for details.", Data: map[string]any{"ref": ref}}
	}
	data := make(map[string]any, len(e.Data)+1)
	for k, v := range e.Data {
		data[k] = v
	}
	data["message"] = e.Message
	name := e.Name
	if name == "" {
		name = errs.DefaultName(e.Kind)
	}
	// The Basic challenge is for curl and SDKs; a page's own fetch or EventSource (Sec-Fetch-Mode
	// cors/same-origin) would make the browser open its credentials popup instead of the UI's form.
	if mode := r.Header.Get("Sec-Fetch-Mode"); e.Kind == errs.Unauthorized && (mode == "" || mode == "navigate") {
		w.Header().Set("WWW-Authenticate", `Basic realm="tandem", charset="UTF-8"`)
	}
	writeJSONNoFail(w, statusOf(e.Kind), errorBody{Name: name, Data: data})
}

// errorBody is OpenCode's most common error shape, the one tandem uses everywhere.
type errorBody struct {
	Name string         `json:"name"`
	Data map[string]any `json:"data"`
}

func writeJSONNoFail(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func statusOf(k errs.Kind) int {
	switch k {
	case errs.Invalid:
		return http.StatusBadRequest
	case errs.NotFound:
		return http.StatusNotFound
	case errs.Conflict:
		return http.StatusConflict
	case errs.Forbidden:
		return http.StatusForbidden
	case errs.Unauthorized:
		return http.StatusUnauthorized
	case errs.TooLarge:
		return http.StatusRequestEntityTooLarge
	case errs.Unsupported:
		return http.StatusUnsupportedMediaType
	case errs.Unavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

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

// WithLogger attaches the request's logger (carrying its request ID).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey, l)
}

// LoggerOf returns the request's logger.
func LoggerOf(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
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

func notFound(format string, args ...any) error { return errs.E(errs.NotFound, format, args...) }

func unavailable(format string, args ...any) error { return errs.E(errs.Unavailable, format, args...) }
