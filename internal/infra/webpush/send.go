package webpush

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/notify"
)

// Subscription is where a browser receives pushes: PushSubscription.toJSON() without
// expirationTime.
type Subscription struct {
	Endpoint string `json:"endpoint" required:"true" description:"The push service URL the browser was given."`
	Keys     Keys   `json:"keys" required:"true"`
}

// ErrGone says the push service no longer knows the subscription (404 or 410, RFC 8030 §7.3):
// the browser unsubscribed or the subscription expired, and it should be forgotten.
var ErrGone = errors.New("webpush: subscription is gone")

// Message is one push.
type Message struct {
	Payload []byte
	TTL     time.Duration // how long the push service keeps it for an offline browser
	Urgency string        // very-low, low, normal or high (RFC 8030 §5.3); empty is normal
	Topic   string        // a later message with the same topic replaces an undelivered one
}

// padTo is the size every message is padded to, so that lengths do not tell one request from
// another.
const padTo = 1024

// Send encrypts m to sub and posts it to the push service with v's signature.
func Send(ctx context.Context, hc *http.Client, v *VAPID, sub Subscription, m Message) error {
	body, err := Encrypt(sub.Keys, m.Payload, padTo)
	if err != nil {
		return err
	}
	authz, err := v.Authorization(sub.Endpoint, time.Now())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ttl := m.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Encoding", "aes128gcm")
	req.Header.Set("TTL", strconv.Itoa(int(ttl/time.Second)))
	req.Header.Set("Authorization", authz)
	if m.Urgency != "" {
		req.Header.Set("Urgency", m.Urgency)
	}
	if m.Topic != "" {
		req.Header.Set("Topic", m.Topic)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	detail, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return ErrGone
	case resp.StatusCode/100 != 2:
		// The status decides whether to retry (notify.StatusError); the reason is what a person
		// reads in the delivery log and the UI: Apple's BadJwtToken, FCM's message, Mozilla's.
		return &notify.StatusError{Code: resp.StatusCode, Body: refusalReason(detail), RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return nil
}

// refusalReason is the push service's own word for a refusal: the "reason" of Apple's JSON, the
// "message" or "error" of Mozilla's and Google's, else the start of the body as text.
func refusalReason(body []byte) string {
	var j struct {
		Reason  string          `json:"reason"`
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &j) == nil {
		var text string
		if json.Unmarshal(j.Error, &text) != nil {
			var nested struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(j.Error, &nested)
			text = nested.Message
		}
		for _, r := range []string{j.Reason, j.Message, text} {
			if r = strings.TrimSpace(r); r != "" {
				return r
			}
		}
	}
	text := []rune(strings.Join(strings.Fields(string(bytes.ToValidUTF8(body, nil))), " "))
	if len(text) > 200 {
		return string(text[:200]) + "…"
	}
	return string(text)
}

// retryAfter reads a Retry-After header given in seconds (push services do not send dates).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
