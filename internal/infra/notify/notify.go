// Package notify tells people that a request is waiting for them. A Dispatcher follows the life of
// every pending request on the bus — a permission, a question or an MCP elicitation is asked, then
// answered, timed out or cancelled — and hands each step, as a Notification, to the targets whose
// filter keeps it: a webhook, an ntfy topic, the web UI's push subscriptions. A target may hold a
// notification back for a delay, so that a request answered meanwhile (by a person, a rule or
// another client) notifies nobody. Every attempt to deliver, and every notification held back, is
// written to the delivery log (GET /notify/delivery).
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Kind is the kind of request that waits.
type Kind string

// The kinds of request, as the config's "kinds" filter names them.
const (
	Permission  Kind = "permission"
	Question    Kind = "question"
	Elicitation Kind = "elicitation"
)

// Event is the step of a request's life a notification announces.
type Event string

// The steps.
const (
	Asked    Event = "asked"    // the request waits for a person
	Resolved Event = "resolved" // it no longer does: answered, rejected, timed out or cancelled
)

// Notification is one step of one request, as every sink receives it and as a webhook's body
// carries it (JSON).
type Notification struct {
	// ID names this notification; every attempt to deliver it carries the same ID, so a receiver
	// can drop a retry it already handled.
	ID        string `json:"id"`
	Event     Event  `json:"event"`
	Kind      Kind   `json:"kind"`
	RequestID string `json:"requestID"`
	SessionID string `json:"sessionID,omitempty"`
	Directory string `json:"directory,omitempty"`
	// Title and Message are short human text for a push notification: what asks for what.
	Title   string `json:"title"`
	Message string `json:"message"`
	// Link opens the request's dialog in the web UI (#/pending/<id>).
	Link string `json:"link,omitempty"`
	// Request is the pending item exactly as GET /permission, /question or /mcp/elicitation lists
	// it (and as the *.asked event carries it).
	Request json.RawMessage `json:"request"`
	// Resolution says how it ended; only on resolved notifications.
	Resolution *Resolution `json:"resolution,omitempty"`
	// Time is when the step happened, epoch milliseconds.
	Time int64 `json:"time"`
}

// Resolution is how a request ended.
type Resolution struct {
	// Cause is reply (someone answered), timeout (nobody answered in time), cancel (the turn was
	// aborted, the session deleted, or the server restarted), or for a question reject (a person
	// dismissed it), as tandem's question.rejected event says.
	Cause string `json:"cause"`
	// Answer is the permission's decision key (once, session, always, reject, ...), "answered" for
	// a question, or the elicitation's action (accept, decline, cancel).
	Answer string `json:"answer,omitempty"`
	// Event is the properties of the event that ended it (permission.replied, question.replied,
	// question.rejected, mcp.elicitation.replied).
	Event json.RawMessage `json:"event"`
}

// Sink delivers notifications to one destination.
//
// A new kind of destination plugs in by implementing Sink and being wrapped in a Target:
//
//	d.SetTargets([]notify.Target{{Name: "phone", Sink: mySink, Resolved: true, Filter: notify.Filter{Delay: 30 * time.Second}}})
//
// (cmd/tandem builds the targets from the "notify" config and adds the ones it owns). The
// Dispatcher does everything around a delivery: filtering, the delay, ordering (a request's
// resolved notification is delivered only after its asked one ended), retries with exponential
// backoff, and the delivery log. Deliver makes exactly one attempt and returns; it must honour ctx
// (which carries the per-attempt timeout and ends at shutdown). Return a *StatusError for an HTTP
// answer that is not a success (5xx, 408 and 429 are retried, other statuses are not), Permanent(err)
// for any other failure that a retry cannot fix, and any other error for one worth retrying. A sink
// is used from several goroutines at once.
type Sink interface {
	// Type names the sink in the delivery log: webhook, ntfy, webpush.
	Type() string
	// Deliver makes one attempt to deliver n.
	Deliver(ctx context.Context, n Notification) (Receipt, error)
}

// Receipt is what a successful attempt learnt.
type Receipt struct {
	Code   int    // the HTTP status the destination answered, when there is one
	Detail string // anything worth showing in the delivery log
}

// StatusError is an HTTP answer that is not a success.
type StatusError struct {
	Code       int
	Body       string        // the start of the answer, for the log
	RetryAfter time.Duration // the destination's Retry-After, when it sent one
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

// retryable reports whether another attempt may succeed.
func (e *StatusError) retryable() bool {
	return e.Code >= 500 || e.Code == 408 || e.Code == 425 || e.Code == 429
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks a failure that no retry can fix (a refused request, an invalid subscription).
func Permanent(err error) error { return permanentError{err} }

// final reports whether err ends the retries.
func final(err error) bool {
	var p permanentError
	if errors.As(err, &p) {
		return true
	}
	var s *StatusError
	return errors.As(err, &s) && !s.retryable()
}

// Filter selects what a target is told.
type Filter struct {
	// Kinds keeps only these kinds of request; empty keeps all.
	Kinds []Kind
	// Sessions keeps only the requests of these sessions; empty keeps all.
	Sessions []string
	// Delay holds the asked notification back: a request resolved within it notifies nobody
	// (the log records it as skipped).
	Delay time.Duration
}

func (f Filter) keeps(kind Kind, sessionID string) bool {
	if len(f.Kinds) > 0 && !contains(f.Kinds, kind) {
		return false
	}
	return len(f.Sessions) == 0 || contains(f.Sessions, sessionID)
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Retry bounds the attempts to deliver one notification.
type Retry struct {
	// Attempts is how many times in all (default 5).
	Attempts int
	// Backoff is the wait before the second attempt, doubled before each next one and capped at
	// MaxBackoff (default 1s).
	Backoff time.Duration
}

// MaxBackoff caps the wait between two attempts.
const MaxBackoff = 5 * time.Minute

func (r Retry) attempts() int {
	if r.Attempts <= 0 {
		return 5
	}
	return r.Attempts
}

// wait is the pause after the given failed attempt (1-based).
func (r Retry) wait(attempt int, err error) time.Duration {
	d := r.Backoff
	if d <= 0 {
		d = time.Second
	}
	for i := 1; i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	var s *StatusError
	if errors.As(err, &s) && s.RetryAfter > d {
		d = s.RetryAfter
	}
	return min(d, MaxBackoff)
}

// Target is one destination with its filter.
type Target struct {
	// Name identifies the target in the delivery log; names are unique.
	Name string
	Sink Sink
	// Filter says which requests it hears of, and after how long.
	Filter Filter
	// Resolved sends the resolved notification too (after an asked one was delivered); a push
	// target that only wakes people leaves it off.
	Resolved bool
	Retry    Retry
	// WebURL is the web UI's address for links, when it differs from the server's own.
	WebURL string
}
