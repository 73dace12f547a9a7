package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrorKind classifies a provider failure by what the prompt loop can do about it.
type ErrorKind int

// The kinds of provider failure.
const (
	ErrOther           ErrorKind = iota // anything unrecognised
	ErrAuth                             // missing, wrong or unauthorised credentials
	ErrRateLimit                        // 429: slow down, maybe for RetryAfter
	ErrServer                           // 5xx or "overloaded": the provider's fault, worth a retry
	ErrNetwork                          // no connection, connection dropped
	ErrTimeout                          // the provider went silent for longer than the idle timeout
	ErrContextOverflow                  // the conversation no longer fits the model's context
	ErrBadRequest                       // the request was refused as malformed; retrying will not help
)

func (k ErrorKind) String() string {
	switch k {
	case ErrAuth:
		return "auth"
	case ErrRateLimit:
		return "rate-limit"
	case ErrServer:
		return "server"
	case ErrNetwork:
		return "network"
	case ErrTimeout:
		return "timeout"
	case ErrContextOverflow:
		return "context-overflow"
	case ErrBadRequest:
		return "bad-request"
	}
	return "other"
}

// Error classifies provider failures so the loop can retry where that helps.
type Error struct {
	Kind       ErrorKind
	Provider   string
	Status     int // HTTP status, 0 when no response arrived
	Message    string
	RetryAfter time.Duration // from Retry-After, 0 when the provider did not say
	Err        error

	// ResponseBody and ResponseHeaders are what the provider answered, for OpenCode's APIError.
	ResponseBody    string
	ResponseHeaders map[string]string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the same request may succeed later: rate limits, server errors,
// network failures and timeouts.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrRateLimit, ErrServer, ErrNetwork, ErrTimeout:
		return true
	}
	return false
}

// Payload renders the error as a member of OpenCode's AssistantMessage error union, which is what
// clients display on a failed message.
func (e *Error) Payload() map[string]any {
	switch e.Kind {
	case ErrAuth:
		return map[string]any{"name": "ProviderAuthError", "data": map[string]any{"providerID": e.Provider, "message": e.Message}}
	case ErrContextOverflow:
		data := map[string]any{"message": e.Message}
		if e.ResponseBody != "" {
			data["responseBody"] = e.ResponseBody
		}
		return map[string]any{"name": "ContextOverflowError", "data": data}
	case ErrOther:
		return map[string]any{"name": "UnknownError", "data": map[string]any{"message": e.Error()}}
	}
	data := map[string]any{"message": e.Message, "isRetryable": e.Retryable()}
	if e.Status > 0 {
		data["statusCode"] = e.Status
	}
	if len(e.ResponseHeaders) > 0 {
		data["responseHeaders"] = e.ResponseHeaders
	}
	if e.ResponseBody != "" {
		data["responseBody"] = e.ResponseBody
	}
	return map[string]any{"name": "APIError", "data": data}
}

// overflowPhrases are how providers say the prompt is too long (OpenAI, Anthropic, Ollama, vLLM,
// llama.cpp, OpenRouter, Gemini-compatible proxies).
var overflowPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"prompt is too long",
	"input is too long",
	"too many tokens",
	"exceeds the context",
	"reduce the length",
}

func mentionsOverflow(s string) bool {
	s = strings.ToLower(s)
	for _, p := range overflowPhrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// apiFailure is what a provider answered when it refused a request.
type apiFailure struct {
	status  int
	header  http.Header
	body    string // raw response body, usually {"error": {...}}
	errType string // error.type or error.code from the body
	message string // error.message from the body
}

// parseFailureBody reads the {"error": {"type", "code", "message"}} envelope both APIs use.
func parseFailureBody(body string) (errType, message string) {
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(body), &envelope) != nil || len(envelope.Error) == 0 {
		return "", ""
	}
	var detail struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(envelope.Error, &detail) != nil {
		var text string
		if json.Unmarshal(envelope.Error, &text) == nil {
			return "", text
		}
		return "", ""
	}
	errType = detail.Type
	var code string
	if json.Unmarshal(detail.Code, &code) == nil && code != "" {
		errType = code
	}
	return errType, detail.Message
}

// classifyFailure turns a refused request into an *Error.
func classifyFailure(providerID string, f apiFailure, cause error) *Error {
	e := &Error{Provider: providerID, Status: f.status, Err: cause, ResponseBody: f.body}
	if f.status == http.StatusOK {
		e.Status = 0 // an error event inside a stream that had started fine
	}
	if len(f.header) > 0 {
		e.ResponseHeaders = make(map[string]string, len(f.header))
		for k := range f.header {
			e.ResponseHeaders[strings.ToLower(k)] = f.header.Get(k)
		}
		e.RetryAfter = retryAfter(f.header, time.Now())
	}
	e.Message = f.message
	if e.Message == "" {
		e.Message = strings.TrimSpace(f.body)
		if len(e.Message) > 500 || e.Message == "" || strings.HasPrefix(e.Message, "<") {
			e.Message = http.StatusText(f.status)
		}
		if e.Message == "" {
			e.Message = "the provider refused the request"
		}
	}
	e.Kind = kindOf(f)
	return e
}

func kindOf(f apiFailure) ErrorKind {
	switch f.errType {
	case "authentication_error", "permission_error", "invalid_api_key":
		return ErrAuth
	case "rate_limit_error", "rate_limit_exceeded":
		return ErrRateLimit
	case "insufficient_quota", "billing_error":
		return ErrBadRequest // retrying never buys credit
	case "overloaded_error", "api_error", "server_error":
		return ErrServer
	case "context_length_exceeded":
		return ErrContextOverflow
	}
	switch s := f.status; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return ErrAuth
	case s == http.StatusTooManyRequests:
		return ErrRateLimit
	case s == http.StatusRequestTimeout:
		return ErrTimeout
	case s == http.StatusRequestEntityTooLarge:
		return ErrContextOverflow
	case s >= 500:
		return ErrServer
	case s >= 400:
		if mentionsOverflow(f.message) || mentionsOverflow(f.body) {
			return ErrContextOverflow
		}
		return ErrBadRequest
	}
	if mentionsOverflow(f.message) {
		return ErrContextOverflow
	}
	return ErrOther
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v > 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	ra := strings.TrimSpace(h.Get("Retry-After"))
	if ra == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(ra, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(ra); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// transportError classifies a failure that is not an API answer: the connection, the idle
// watchdog, or the caller's context.
func transportError(providerID string, err error) *Error {
	e := &Error{Provider: providerID, Err: err}
	var nerr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind, e.Message = ErrNetwork, "connection refused: "+hostOf(err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF):
		e.Kind, e.Message = ErrNetwork, "the connection to the provider was cut"
	case errors.As(err, &nerr) && nerr.Timeout():
		e.Kind, e.Message = ErrTimeout, "the provider did not answer in time"
	case errors.As(err, &nerr):
		e.Kind, e.Message = ErrNetwork, err.Error()
	default:
		e.Kind, e.Message = ErrOther, err.Error()
	}
	return e
}

func hostOf(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if u, perr := url.Parse(uerr.URL); perr == nil {
			return u.Host
		}
	}
	return err.Error()
}

// ctxError reports the caller's cancellation as itself, so errors.Is(err, context.Canceled) holds
// and the loop can tell an abort from a failure.
func ctxError(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return ctx.Err()
}
