package webpush

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// DefaultTokenTTL is how long a notification's action buttons work. After that a tap opens the
// request in the web UI instead, where the person signs in as usual.
const DefaultTokenTTL = 15 * time.Minute

// Options configure a Service.
type Options struct {
	// DB keeps the VAPID key, the subscriptions and the hashes of the action tokens.
	DB     store.Store
	Logger *slog.Logger
	// Client posts to push services; nil is a client with a 30-second timeout.
	Client *http.Client
	// Subject is the contact in the VAPID signature (default DefaultSubject).
	Subject  string
	TokenTTL time.Duration
	Now      func() time.Time
	// Changed is called after a subscription was added or forgotten (the unconfigured webpush
	// target exists only while a browser is subscribed).
	Changed func()
}

// Service holds the VAPID identity, the subscriptions and the action tokens, and sends pushes.
// The tokens are kept in the database by their SHA-256 only, so a notification's buttons work
// across a restart as long as its request waits.
type Service struct {
	db      store.Store
	log     *slog.Logger
	hc      *http.Client
	vapid   *VAPID
	ttl     time.Duration
	now     func() time.Time
	changed func()

	subscribed atomic.Bool

	mu      sync.Mutex
	subject string
}

// Open loads the server's VAPID key, generating and storing it on the first start.
func Open(ctx context.Context, o Options) (*Service, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	fresh, err := GenerateVAPID()
	if err != nil {
		return nil, err
	}
	der, err := fresh.Marshal()
	if err != nil {
		return nil, err
	}
	stored, err := o.DB.VAPIDKey(ctx, der, o.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	v, err := ParseVAPID(stored)
	if err != nil {
		return nil, err
	}
	s := &Service{db: o.DB, log: o.Logger, hc: o.Client, vapid: v, ttl: o.TokenTTL, now: o.Now, subject: o.Subject, changed: o.Changed}
	if err := s.count(ctx); err != nil {
		return nil, err
	}
	if _, err := s.db.PrunePushTokens(ctx, s.now().UnixMilli()); err != nil {
		return nil, err
	}
	return s, nil
}

// SetSubject sets the contact the VAPID signature names (empty: DefaultSubject).
func (s *Service) SetSubject(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subject = subject
}

func (s *Service) identity() *VAPID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &VAPID{key: s.vapid.key, Subject: s.subject}
}

// PublicKey is the applicationServerKey browsers subscribe with.
func (s *Service) PublicKey() string { return s.vapid.PublicKey() }

// Subscribe stores a browser's subscription (again: a renewed one replaces its keys).
func (s *Service) Subscribe(ctx context.Context, sub Subscription, userAgent string) error {
	u, err := url.Parse(sub.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errs.E(errs.Invalid, "endpoint: not an http(s) URL")
	}
	if _, _, err := sub.Keys.parse(); err != nil {
		return errs.E(errs.Invalid, "%v", err)
	}
	err = s.db.PutPushSubscription(ctx, store.PushSubscription{
		Endpoint: sub.Endpoint, P256dh: sub.Keys.P256dh, Auth: sub.Keys.Auth, UserAgent: userAgent, Created: s.now().UnixMilli(),
	})
	if err == nil {
		s.changedSubscriptions(ctx)
	}
	return err
}

// changedSubscriptions recounts the subscriptions and tells Options.Changed.
func (s *Service) changedSubscriptions(ctx context.Context) {
	if err := s.count(ctx); err != nil {
		s.log.Error("webpush: count subscriptions", "err", err)
	}
	if s.changed != nil {
		s.changed()
	}
}

func (s *Service) count(ctx context.Context) error {
	subs, err := s.db.PushSubscriptions(ctx)
	if err != nil {
		return err
	}
	s.subscribed.Store(len(subs) > 0)
	return nil
}

// Subscribed reports whether any browser is subscribed.
func (s *Service) Subscribed() bool { return s.subscribed.Load() }

// Unsubscribe forgets a subscription.
func (s *Service) Unsubscribe(ctx context.Context, endpoint string) error {
	err := s.db.DeletePushSubscription(ctx, endpoint)
	if errors.Is(err, store.ErrNotFound) {
		return errs.E(errs.NotFound, "Push subscription not found: %s", endpoint)
	}
	if err == nil {
		s.changedSubscriptions(ctx)
	}
	return err
}

// Subscriber is a stored subscription as GET /push/subscription lists it.
type Subscriber struct {
	Endpoint  string `json:"endpoint"`
	UserAgent string `json:"userAgent"`
	Time      struct {
		Created int64 `json:"created"`
	} `json:"time"`
}

// Subscribers lists the subscriptions, oldest first, without their keys.
func (s *Service) Subscribers(ctx context.Context) ([]Subscriber, error) {
	rows, err := s.db.PushSubscriptions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Subscriber, 0, len(rows))
	for _, r := range rows {
		sub := Subscriber{Endpoint: r.Endpoint, UserAgent: r.UserAgent}
		sub.Time.Created = r.Created
		out = append(out, sub)
	}
	return out, nil
}

// Action is a button on a notification: the decision it sends and the token it sends it with.
type Action struct {
	Action   string `json:"action"` // the button's ID in the notification ("approve", "reject")
	Title    string `json:"title"`
	Decision string `json:"decision"` // the reply key it answers with
	Token    string `json:"token"`
}

// Notice is what a notification says about a pending request.
type Notice struct {
	Kind      string // permission, question, elicitation
	RequestID string
	SessionID string
	Title     string
	Body      string
	// URL opens the request in the web UI (default DeepLink(RequestID)).
	URL string
	// Buttons maps each button ID to its title and decision key; each gets its own token.
	Buttons []Button
}

// Button is an action a Notice offers.
type Button struct {
	Action, Title, Decision string
}

// payload is the JSON the service worker receives.
type payload struct {
	Type      string   `json:"type"` // asked or resolved
	Kind      string   `json:"kind,omitempty"`
	RequestID string   `json:"requestID"`
	SessionID string   `json:"sessionID,omitempty"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	URL       string   `json:"url"` // the UI's deep link to the request's dialog
	Actions   []Action `json:"actions,omitempty"`
	Expires   int64    `json:"expires,omitempty"` // when the actions stop working (epoch ms)
}

// DeepLink is the web UI's address of a request's dialog, relative to the server's origin.
func DeepLink(requestID string) string { return "/#/pending/" + url.PathEscape(requestID) }

// Asked notifies every subscriber of a pending request, with a fresh token per button and
// subscriber. It returns how many pushes were accepted out of how many subscriptions;
// subscriptions the push service reports gone are forgotten.
func (s *Service) Asked(ctx context.Context, n Notice) (sent, total int, err error) {
	expires := s.now().Add(s.ttl)
	link := n.URL
	if link == "" {
		link = DeepLink(n.RequestID)
	}
	return s.broadcast(ctx, n.RequestID, func() (payload, error) {
		p := payload{Type: "asked", Kind: n.Kind, RequestID: n.RequestID, SessionID: n.SessionID,
			Title: clip(n.Title, 120), Body: clip(n.Body, 600), URL: link, Expires: expires.UnixMilli()}
		tokens, err := s.issue(ctx, n.RequestID, n.Buttons, expires)
		if err != nil {
			return payload{}, err
		}
		for i, b := range n.Buttons {
			p.Actions = append(p.Actions, Action{Action: b.Action, Title: b.Title, Decision: b.Decision, Token: tokens[i]})
		}
		return p, nil
	})
}

// Resolved replaces a request's notification with how it ended (title, body) and voids its tokens.
func (s *Service) Resolved(ctx context.Context, requestID, title, body, link string) (sent, total int, err error) {
	_, verr := s.db.DeletePushTokens(ctx, requestID)
	if link == "" {
		link = DeepLink(requestID)
	}
	sent, total, err = s.broadcast(ctx, requestID, func() (payload, error) {
		return payload{Type: "resolved", RequestID: requestID, Title: clip(title, 120), Body: clip(body, 600), URL: link}, nil
	})
	return sent, total, errors.Join(verr, err)
}

func (s *Service) broadcast(ctx context.Context, requestID string, build func() (payload, error)) (int, int, error) {
	subs, err := s.db.PushSubscriptions(ctx)
	if err != nil {
		return 0, 0, err
	}
	sent := 0
	var failed []error
	vapid := s.identity()
	for _, sub := range subs {
		p, err := build()
		if err != nil {
			return sent, len(subs), errors.Join(append(failed, err)...)
		}
		body, err := encode(p)
		if err != nil {
			return sent, len(subs), errors.Join(append(failed, err)...)
		}
		err = Send(ctx, s.hc, vapid, Subscription{Endpoint: sub.Endpoint, Keys: Keys{P256dh: sub.P256dh, Auth: sub.Auth}},
			Message{Payload: body, TTL: s.ttl, Urgency: "high", Topic: topic(requestID)})
		switch {
		case err == nil:
			sent++
		case errors.Is(err, ErrGone):
			s.log.Info("push subscription gone; forgetting it", "endpoint", sub.Endpoint)
			switch derr := s.db.DeletePushSubscription(ctx, sub.Endpoint); {
			case derr == nil:
				s.changedSubscriptions(ctx)
			case !errors.Is(derr, store.ErrNotFound):
				failed = append(failed, derr)
			}
		default:
			failed = append(failed, fmt.Errorf("%s: %w", sub.Endpoint, err))
		}
	}
	return sent, len(subs), errors.Join(failed...)
}

// encode writes the payload as JSON that fits one record, shortening the body (and then the title)
// when escapes or long lines make it too large.
func encode(p payload) ([]byte, error) {
	for {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // a command's < > & stay one byte each
		if err := enc.Encode(p); err != nil {
			return nil, err
		}
		if buf.Len() <= MaxPlaintext {
			return bytes.TrimRight(buf.Bytes(), "\n"), nil
		}
		switch {
		case len([]rune(p.Body)) > 1:
			p.Body = clip(p.Body, len([]rune(p.Body))/2)
		case len([]rune(p.Title)) > 1:
			p.Title = clip(p.Title, len([]rune(p.Title))/2)
		default:
			return nil, fmt.Errorf("webpush: a notification of %d bytes does not fit in one message", buf.Len())
		}
	}
}

// topic is the Topic header of a request's pushes (at most 32 base64url characters, RFC 8030
// §5.4): an undelivered "asked" is replaced by its "resolved".
func topic(requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return b64.EncodeToString(sum[:])[:32]
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// issue makes a single-use token per button, each answering requestID with its button's decision
// until expires, and stores their hashes (pruning the expired ones) in one transaction.
func (s *Service) issue(ctx context.Context, requestID string, buttons []Button, expires time.Time) ([]string, error) {
	tokens := make([]string, len(buttons))
	err := s.db.Tx(ctx, func(q store.Tx) error {
		if _, err := q.PrunePushTokens(ctx, s.now().UnixMilli()); err != nil {
			return err
		}
		for i, b := range buttons {
			raw := make([]byte, 32)
			_, _ = rand.Read(raw) // crypto/rand.Read never fails
			tokens[i] = b64.EncodeToString(raw)
			err := q.PutPushToken(ctx, store.PushToken{Hash: hash(tokens[i]), RequestID: requestID, Decision: b.Decision, Expires: expires.UnixMilli()})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return tokens, err
}

func hash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// Redeem spends an action token: it returns the request and decision the token was issued for,
// once. Every other token of that request is voided with it (one tap answers; the other buttons,
// and the same buttons on the person's other devices, stop working). Both happen in one
// transaction, so two taps racing (or two servers on one database) cannot both win.
func (s *Service) Redeem(ctx context.Context, token string) (requestID, decision string, err error) {
	valid := false
	err = s.db.Tx(ctx, func(q store.Tx) error {
		t, err := q.PushToken(ctx, hash(token))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if now := s.now().UnixMilli(); now > t.Expires {
			_, err := q.PrunePushTokens(ctx, now) // this one and any other that expired
			return err
		}
		if _, err := q.DeletePushTokens(ctx, t.RequestID); err != nil {
			return err
		}
		valid, requestID, decision = true, t.RequestID, t.Decision
		return nil
	})
	switch {
	case err != nil:
		return "", "", err
	case !valid:
		return "", "", errs.Named(errs.Forbidden, "ActionTokenError", "this notification's action has expired or was already used: open the request in tandem to answer it")
	}
	return requestID, decision, nil
}
