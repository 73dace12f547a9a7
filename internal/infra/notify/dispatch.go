package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Options configure a Dispatcher.
type Options struct {
	Bus *bus.Bus
	// DB keeps the delivery log; nil keeps none (tests of the sinks alone).
	DB     store.Store
	Logger *slog.Logger
	// Targets are the destinations at start; SetTargets replaces them.
	Targets []Target
	// WebURL is the server's own address, for links (a target's WebURL overrides it). It is a
	// function because the listener is bound after the dispatcher starts.
	WebURL func() string
	// AttemptTimeout bounds one attempt (default 10s).
	AttemptTimeout time.Duration
	// Keep is how many delivery log entries are kept (default 10,000).
	Keep int
	// Node, when several nodes share one database and each sees every node's events, is this
	// node's ID: it notifies of the requests it asked alone, so a person is told once, not once
	// per node.
	Node string
}

// follows is the bus filter of the events the Dispatcher acts on.
func (o Options) follows(ev *bus.Event) bool {
	return isPendingEvent(ev) && (o.Node == "" || ev.Origin == o.Node)
}

// Dispatcher turns the bus's pending-request events into notifications for its targets.
type Dispatcher struct {
	o      Options
	log    *slog.Logger
	ids    *id.Source
	sub    *bus.Subscription
	client *http.Client

	ctx     context.Context // ends when Close gives up waiting: in-flight attempts are cut off
	cancel  context.CancelFunc
	stop    chan struct{} // closed by Close: the event loop handles what is queued and returns
	closing chan struct{} // closed by Close: no new attempt starts, backoffs end
	loop    chan struct{} // closed when the event loop has returned
	wg      sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	targets []Target
	open    map[string]*request // by request ID, while it waits
}

// request is a waiting request and what each target has been told of it.
type request struct {
	asked   Notification
	targets []*told
}

// told is one target's share of a request.
type told struct {
	target Target
	state  toldState
	timer  *time.Timer   // while held back
	ended  chan struct{} // closed when the asked notification's delivery ended (started only)
}

type toldState int

const (
	heldBack toldState = iota // the delay runs
	started                   // the asked notification went out (or is going)
	skipped                   // resolved within the delay: nothing went out
)

// New subscribes to the bus and starts dispatching; Close stops it.
func New(ctx context.Context, o Options) (*Dispatcher, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 10 * time.Second
	}
	if o.Keep <= 0 {
		o.Keep = 10000
	}
	if o.WebURL == nil {
		o.WebURL = func() string { return "" }
	}
	sub, _, err := o.Bus.Subscribe("", o.follows)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = http.ProxyFromEnvironment
	d := &Dispatcher{
		o: o, log: o.Logger, ids: id.NewSource(), sub: sub,
		client: &http.Client{Transport: transport, CheckRedirect: noRedirects},
		stop:   make(chan struct{}), closing: make(chan struct{}), loop: make(chan struct{}),
		targets: o.Targets, open: map[string]*request{},
	}
	d.ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go d.run()
	return d, nil
}

// noRedirects keeps a signed body from being replayed to wherever a receiver redirects.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Client is the HTTP client sinks share; its connections are closed with the Dispatcher.
func (d *Dispatcher) Client() *http.Client { return d.client }

// SetTargets replaces the targets. Requests already waiting keep the targets they were announced
// to; the next ones go to the new targets.
func (d *Dispatcher) SetTargets(ts []Target) {
	d.mu.Lock()
	d.targets = ts
	d.mu.Unlock()
}

// Targets returns the current targets.
func (d *Dispatcher) Targets() []Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Target(nil), d.targets...)
}

// Delivery is one entry of the delivery log, as GET /notify/delivery lists it.
type Delivery struct {
	ID             string `json:"id"`
	NotificationID string `json:"notificationID"`
	Target         string `json:"target"`
	Sink           string `json:"sink" description:"webhook, ntfy, ..."`
	Event          string `json:"event" enum:"asked,resolved"`
	Kind           string `json:"kind" enum:"permission,question,elicitation"`
	RequestID      string `json:"requestID"`
	SessionID      string `json:"sessionID,omitempty"`
	Attempt        int    `json:"attempt" description:"1 for the first attempt; 0 for a notification held back (skipped)"`
	Status         string `json:"status" enum:"delivered,retrying,failed,skipped" description:"retrying: this attempt failed and another follows; failed: no more attempts; skipped: resolved within the target's delay, nothing sent"`
	Code           int    `json:"code,omitempty" description:"The HTTP status the target answered."`
	Detail         string `json:"detail,omitempty"`
	Time           struct {
		Started  int64 `json:"started"`
		Duration int64 `json:"duration" description:"Milliseconds."`
	} `json:"time"`
}

// DeliveryQuery filters the delivery log.
type DeliveryQuery = store.DeliveryQuery

// Deliveries reads the delivery log, newest first.
func (d *Dispatcher) Deliveries(ctx context.Context, q DeliveryQuery) ([]Delivery, error) {
	out := []Delivery{}
	if d.o.DB == nil {
		return out, nil
	}
	rows, err := d.o.DB.Deliveries(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		e := Delivery{ID: r.ID, NotificationID: r.NotificationID, Target: r.Target, Sink: r.Sink, Event: r.Event, Kind: r.Kind,
			RequestID: r.RequestID, SessionID: r.SessionID, Attempt: r.Attempt, Status: r.Status, Code: r.Code, Detail: r.Detail}
		e.Time.Started, e.Time.Duration = r.Time, r.Duration
		out = append(out, e)
	}
	return out, nil
}

// Close stops dispatching. Events already published are still handled, and deliveries under way
// get until ctx ends to finish (no retry waits for its backoff); then they are cut off. Held-back
// notifications are dropped.
func (d *Dispatcher) Close(ctx context.Context) {
	close(d.stop)
	<-d.loop
	d.mu.Lock()
	d.closed = true
	for _, r := range d.open {
		for _, t := range r.targets {
			if t.state == heldBack && t.timer.Stop() {
				d.wg.Done()
			}
		}
	}
	d.open = map[string]*request{}
	d.mu.Unlock()
	close(d.closing)
	idle := make(chan struct{})
	go func() { d.wg.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-ctx.Done():
		d.cancel()
		<-idle
	}
	d.cancel()
	d.client.CloseIdleConnections()
}

func (d *Dispatcher) run() {
	defer close(d.loop)
	sub := d.sub
	defer func() { sub.Close() }()
	var batch []*bus.Event
	var last *bus.Event // the newest event handled, to resume after it
	for {
		stopping := false
		select {
		case <-sub.Ready():
		case <-d.stop:
			stopping = true
		}
		var err error
		batch, err = sub.Take(batch[:0])
		for _, ev := range batch {
			d.handle(ev)
			last = ev
		}
		if stopping {
			return
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, bus.ErrSlow) {
			return
		}
		// Cut off for falling behind (it never should): pick up after the last event handled.
		cursor := ""
		if last != nil {
			cursor = d.o.Bus.CursorOf(last)
		}
		next, resume, serr := d.o.Bus.Subscribe(cursor, d.o.follows)
		if serr != nil {
			return
		}
		d.log.Warn("notify: fell behind the event bus; resubscribed", "resync", resume.Resync)
		sub = next
		for _, ev := range resume.Replay {
			d.handle(ev)
			last = ev
		}
	}
}

func (d *Dispatcher) handle(ev *bus.Event) {
	step, ok, err := parse(ev)
	if err != nil {
		d.log.Error("notify: unreadable event", "type", ev.Type, "err", err)
		return
	}
	if !ok {
		return
	}
	if step.n.Event == Asked {
		d.asked(step)
	} else {
		d.resolved(step)
	}
}

func (d *Dispatcher) asked(s step) {
	n := s.n
	n.ID = d.ids.New(id.Notice)
	before := d.toldBefore(n.RequestID)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if _, dup := d.open[n.RequestID]; dup {
		return // announced again (a restored request): its targets were told already
	}
	r := &request{asked: n}
	for _, t := range d.targets {
		if !t.Filter.keeps(n.Kind, n.SessionID) {
			continue
		}
		tt := &told{target: t}
		r.targets = append(r.targets, tt)
		if before[t.Name] {
			// A request restored after a restart: this target heard of it from the previous run.
			// It is not told again, but it will hear how the request ends.
			tt.state, tt.ended = started, make(chan struct{})
			close(tt.ended) // that delivery ended before this process started
			d.log.Info("notify: not announcing a restored request again", "target", t.Name, "request", n.RequestID)
			continue
		}
		// The delay counts from when the request was asked (a restored one was asked before the restart).
		delay := t.Filter.Delay - time.Since(time.UnixMilli(n.Time))
		if t.Filter.Delay <= 0 || delay <= 0 {
			d.startLocked(tt, n)
			continue
		}
		d.wg.Add(1)
		tt.timer = time.AfterFunc(delay, func() {
			defer d.wg.Done()
			d.mu.Lock()
			defer d.mu.Unlock()
			if tt.state == heldBack && !d.closed {
				d.startLocked(tt, n)
			}
		})
	}
	if len(r.targets) > 0 {
		d.open[n.RequestID] = r
	}
}

// toldBefore is the set of targets the delivery log says were already told that requestID waits.
func (d *Dispatcher) toldBefore(requestID string) map[string]bool {
	if d.o.DB == nil {
		return nil
	}
	names, err := d.o.DB.DeliveredTargets(d.ctx, requestID, string(Asked))
	if err != nil {
		// Better twice than never: every target is told.
		d.log.Error("notify: read the delivery log; a restored request may be announced twice", "request", requestID, "err", err)
		return nil
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

// startLocked sends the asked notification to one target.
func (d *Dispatcher) startLocked(t *told, n Notification) {
	t.state = started
	t.ended = make(chan struct{})
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(t.ended)
		d.deliver(t.target, n)
	}()
}

func (d *Dispatcher) resolved(s step) {
	d.mu.Lock()
	r, ok := d.open[s.n.RequestID]
	delete(d.open, s.n.RequestID)
	if !ok || d.closed {
		d.mu.Unlock()
		return
	}
	n := s.n
	n.ID = d.ids.New(id.Notice)
	n.Request = r.asked.Request
	n.Title, n.Message = resolvedText(r.asked, *n.Resolution)
	if n.SessionID == "" {
		n.SessionID = r.asked.SessionID
	}
	if n.Directory == "" {
		n.Directory = r.asked.Directory
	}
	var held []*told
	for _, t := range r.targets {
		switch t.state {
		case heldBack:
			t.state = skipped
			if t.timer.Stop() {
				d.wg.Done()
			}
			held = append(held, t)
		case started:
			if !t.target.Resolved {
				continue
			}
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				select {
				case <-t.ended: // the receiver hears of the request before it hears of its end
				case <-d.ctx.Done():
					return
				}
				d.deliver(t.target, n)
			}()
		}
	}
	d.mu.Unlock()
	for _, t := range held {
		wait := time.Duration(n.Time-r.asked.Time) * time.Millisecond
		d.record(store.Delivery{
			ID: d.ids.New(id.Delivery), NotificationID: r.asked.ID, Target: t.target.Name, Sink: t.target.Sink.Type(),
			Event: string(Asked), Kind: string(r.asked.Kind), RequestID: r.asked.RequestID, SessionID: r.asked.SessionID,
			Status: "skipped", Time: n.Time,
			Detail: fmt.Sprintf("resolved (%s) after %s, within the delay of %s: no one was notified", n.Resolution.Cause, wait.Round(time.Millisecond), t.target.Filter.Delay),
		})
	}
}

// deliver makes the attempts to deliver n to t, each one logged, until one succeeds, a failure is
// final, the attempts run out, or the dispatcher closes.
func (d *Dispatcher) deliver(t Target, n Notification) {
	n.Link = d.link(t, n)
	for attempt := 1; ; attempt++ {
		row := store.Delivery{
			ID: d.ids.New(id.Delivery), NotificationID: n.ID, Target: t.Name, Sink: t.Sink.Type(), Event: string(n.Event),
			Kind: string(n.Kind), RequestID: n.RequestID, SessionID: n.SessionID, Attempt: attempt,
		}
		start := time.Now()
		row.Time = start.UnixMilli()
		ctx, cancel := context.WithTimeout(d.ctx, d.o.AttemptTimeout)
		rec, err := t.Sink.Deliver(ctx, n)
		cancel()
		row.Duration = time.Since(start).Milliseconds()
		last := attempt >= t.Retry.attempts() || final(err) || d.ctx.Err() != nil
		switch {
		case err == nil:
			row.Status, row.Code, row.Detail = "delivered", rec.Code, rec.Detail
		case last:
			row.Status, row.Detail = "failed", err.Error()
		default:
			row.Status, row.Detail = "retrying", err.Error()
		}
		var se *StatusError
		if errors.As(err, &se) {
			row.Code = se.Code
		}
		var wait time.Duration
		if err != nil && !last {
			wait = t.Retry.wait(attempt, err)
			row.Detail += fmt.Sprintf(" (next attempt in %s)", wait)
		}
		d.record(row)
		if err == nil || last {
			if err != nil {
				d.log.Warn("notify: delivery failed", "target", t.Name, "request", n.RequestID, "event", n.Event, "attempts", attempt, "err", err)
			}
			return
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-d.closing:
			timer.Stop()
			d.record(store.Delivery{
				ID: d.ids.New(id.Delivery), NotificationID: n.ID, Target: t.Name, Sink: t.Sink.Type(), Event: string(n.Event),
				Kind: string(n.Kind), RequestID: n.RequestID, SessionID: n.SessionID, Attempt: attempt,
				Status: "failed", Time: time.Now().UnixMilli(), Detail: "the server stopped before the next attempt",
			})
			return
		}
	}
}

// record writes one entry of the delivery log (and prunes the oldest) in one transaction.
func (d *Dispatcher) record(row store.Delivery) {
	if d.o.DB == nil {
		return
	}
	ctx := context.WithoutCancel(d.ctx)
	err := d.o.DB.Tx(ctx, func(q store.Tx) error { return q.LogDelivery(ctx, row, d.o.Keep) })
	if err != nil {
		d.log.Error("notify: write the delivery log", "target", row.Target, "request", row.RequestID, "err", err)
	}
}

// link is the web UI's page of the request, as t's person reaches it.
func (d *Dispatcher) link(t Target, n Notification) string {
	base := t.WebURL
	if base == "" {
		base = d.o.WebURL()
	}
	if base == "" {
		return ""
	}
	return Link(base, n.RequestID)
}
