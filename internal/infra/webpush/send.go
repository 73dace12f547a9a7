package webpush

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
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
		return fmt.Errorf("webpush: push service answered %s: %s", resp.Status, bytes.TrimSpace(detail))
	}
	return nil
}
