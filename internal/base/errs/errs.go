// Package errs is tandem's one error type. Domain packages return *Error with a Kind; the HTTP layer
// maps the Kind to a status in one place and writes OpenCode's error shape
// {"name": ..., "data": {"message": ...}}. Anything that is not an *Error is an internal error whose
// text never reaches a client.
package errs

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller should do about it.
type Kind int

// The kinds of error, each mapped to one HTTP status and default name by routes (describeKind).
const (
	Internal            Kind = iota // 500: a bug or an outage; details are logged, not shown
	Invalid                         // 400: the request is malformed
	NotFound                        // 404: the thing named does not exist
	Conflict                        // 409: the request lost a race or the state forbids it
	Forbidden                       // 403: refused by policy
	Unauthorized                    // 401: no or wrong credentials
	MethodNotAllowed                // 405: the path exists, the method does not
	TooLarge                        // 413: the body is over the limit
	Unsupported                     // 415: the body is not JSON
	Unavailable                     // 503: shutting down or a dependency is down
	TooManyRequests                 // 429: slow down (too many failed logins from this address)
	InsufficientStorage             // 507: the disk is full; nothing was stored
)

// Error is a classified, user-presentable error.
type Error struct {
	Kind Kind
	// Name is the error name clients see; empty means the Kind's default (NotFoundError, BadRequest, ...).
	Name    string
	Message string
	// Data holds extra fields merged into the "data" object (e.g. the decision that won a race).
	Data map[string]any
	Err  error // the cause, for logs
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// E makes an *Error of kind k with a formatted message.
func E(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Named makes an *Error with an explicit client-visible name.
func Named(k Kind, name, format string, args ...any) *Error {
	return &Error{Kind: k, Name: name, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e carrying extra data fields.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Data = make(map[string]any, len(e.Data)+1)
	for k, v := range e.Data {
		c.Data[k] = v
	}
	c.Data[key] = value
	return &c
}

// KindOf returns the Kind of err, Internal when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err is an *Error of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }
