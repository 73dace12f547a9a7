package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// DefaultIdleTimeout is how long a provider may stay silent, before its first chunk or between
// two chunks, when the configuration does not say.
const DefaultIdleTimeout = 5 * time.Minute

var errIdle = errors.New("provider idle timeout")

// idleWatch cancels a call when the provider stays silent for longer than its limit, so that a
// hung provider fails the turn instead of hanging it. A limit of zero or less disables it.
type idleWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	limit  time.Duration
	timer  *time.Timer
	fired  atomic.Bool
}

func watchIdle(parent context.Context, limit time.Duration) *idleWatch {
	ctx, cancel := context.WithCancelCause(parent)
	w := &idleWatch{ctx: ctx, cancel: cancel, limit: limit}
	if limit > 0 {
		w.timer = time.AfterFunc(limit, func() {
			w.fired.Store(true)
			cancel(errIdle)
		})
	}
	return w
}

// kick records that the provider said something.
func (w *idleWatch) kick() {
	if w.timer != nil && !w.fired.Load() {
		w.timer.Reset(w.limit)
	}
}

func (w *idleWatch) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(context.Canceled)
}

// timeoutError is the failure a silent provider produces.
func (w *idleWatch) timeoutError(providerID string, cause error) *Error {
	return &Error{
		Kind:     ErrTimeout,
		Provider: providerID,
		Message: fmt.Sprintf("no response from the provider for %s; giving up (provider.%s.options.timeout sets this limit in milliseconds)",
			w.limit, providerID),
		Err: cause,
	}
}

// newHTTPClient gives each provider its own connection pool with bounded connect and TLS
// handshakes. There is no overall request timeout: a long answer may stream for many minutes, and
// the idle watch bounds silence instead.
func newHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// failure classifies what ended a stream early. The order matters: a fired idle watch explains a
// cancelled request, and the caller's own cancellation is reported as such.
func failure(ctx context.Context, w *idleWatch, providerID string, err error, api func(error) (apiFailure, bool)) error {
	if w.fired.Load() {
		return w.timeoutError(providerID, err)
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if f, ok := api(err); ok {
		return classifyFailure(providerID, f, err)
	}
	return transportError(providerID, err)
}
