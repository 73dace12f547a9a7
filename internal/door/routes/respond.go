// Responses: the JSON writer and the one error writer every failure goes through.

package routes

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// encodedJSON is a response body that is JSON already: stored documents passed through as they are.
type encodedJSON []byte

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var body []byte
	switch v := v.(type) {
	case encodedJSON:
		body = v
	case *encodedJSON: // spares a handler's result the conversion to an interface
		body = *v
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			writeError(w, r, fmt.Errorf("encode response: %w", err))
			return
		}
	}
	// With a length, net/http sends the body as it is instead of in chunks. Both values share one
	// allocation (the keys are canonical already).
	vals := make([]string, 2)
	vals[0], vals[1] = "application/json", strconv.Itoa(len(body))
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = vals[0:1:1], vals[1:2:2]
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteError maps err to a status and writes the one error shape. Internal errors are logged with
// the request ID and shown to the client only as a reference.
func WriteError(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, err) }

func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *errs.Error
	if !errors.As(err, &e) {
		e = storageError(err)
	}
	if e == nil {
		ref := fmt.Sprintf("err_%x", time.Now().UnixNano()&0xffffffffff)
		LoggerOf(r.Context()).Error("internal error", "err", err, "ref", ref, "method", r.Method, "path", r.URL.Path)
		e = &errs.Error{Kind: errs.Internal, Message: "Unexpected server error. Check server logs for details.", Data: map[string]any{"ref": ref}}
	}
	data := make(map[string]any, len(e.Data)+1)
	for k, v := range e.Data {
		data[k] = v
	}
	data["message"] = e.Message
	status, name := describeKind(e.Kind)
	if e.Name != "" {
		name = e.Name
	}
	// The Basic challenge is for curl and SDKs; a page's own fetch or EventSource (Sec-Fetch-Mode
	// cors/same-origin) would make the browser open its credentials popup instead of the UI's form.
	if mode := r.Header.Get("Sec-Fetch-Mode"); e.Kind == errs.Unauthorized && (mode == "" || mode == "navigate") {
		w.Header().Set("WWW-Authenticate", `Basic realm="tandem", charset="UTF-8"`)
	}
	if secs, ok := e.Data["retryAfter"].(int); ok {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	writeJSONNoFail(w, status, errorBody{Name: name, Data: data})
}

// storageError names a write that the disk or the database refused (SQLite's database or disk is
// full, a read-only database or file system) with what to do, or nil for any other error. The
// writes are transactions, so a refused one changed nothing.
func storageError(err error) *errs.Error {
	switch {
	case store.Full(err):
		return errs.Named(errs.InsufficientStorage, "StorageFullError",
			"tandem could not save this because the disk is full; nothing was changed. Free some space on the disk of tandem's data directory, then try again.").
			With("cause", err.Error())
	case store.ReadOnly(err):
		return errs.Named(errs.Unavailable, "ReadOnlyStorageError",
			"tandem could not save this because its data directory or database is read-only; nothing was changed. Make them writable by the user tandem runs as, then try again.").
			With("cause", err.Error())
	}
	return nil
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

// describeKind is the one table from an error's kind to the HTTP status and the client-visible name
// the error gets when it carries no name of its own. An unknown kind is answered as Internal.
func describeKind(k errs.Kind) (status int, name string) {
	switch k {
	case errs.Invalid:
		return http.StatusBadRequest, "BadRequest"
	case errs.NotFound:
		return http.StatusNotFound, "NotFoundError"
	case errs.Conflict:
		return http.StatusConflict, "ConflictError"
	case errs.Forbidden:
		return http.StatusForbidden, "ForbiddenError"
	case errs.Unauthorized:
		return http.StatusUnauthorized, "UnauthorizedError"
	case errs.MethodNotAllowed:
		return http.StatusMethodNotAllowed, "MethodNotAllowedError"
	case errs.TooLarge:
		return http.StatusRequestEntityTooLarge, "PayloadTooLargeError"
	case errs.Unsupported:
		return http.StatusUnsupportedMediaType, "UnsupportedMediaTypeError"
	case errs.Unavailable:
		return http.StatusServiceUnavailable, "UnavailableError"
	case errs.TooManyRequests:
		return http.StatusTooManyRequests, "TooManyRequestsError"
	case errs.InsufficientStorage:
		return http.StatusInsufficientStorage, "StorageFullError"
	default:
		return http.StatusInternalServerError, "UnknownError"
	}
}

func notFound(format string, args ...any) error { return errs.E(errs.NotFound, format, args...) }

func unavailable(format string, args ...any) error { return errs.E(errs.Unavailable, format, args...) }
