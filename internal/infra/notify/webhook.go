package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook POST.
const (
	// HeaderTimestamp is when the POST was signed, in Unix seconds.
	HeaderTimestamp = "X-Tandem-Timestamp"
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, keyed with the shared secret, of the
	// timestamp, a dot and the body: Sign(secret, timestamp, body).
	HeaderSignature = "X-Tandem-Signature"
	// HeaderEvent is the notification's event: asked or resolved.
	HeaderEvent = "X-Tandem-Event"
	// HeaderNotification is the notification's ID, the same on every retry.
	HeaderNotification = "X-Tandem-Notification"
)

// Sign is the value of HeaderSignature for a body sent at timestamp (Unix seconds, as written in
// HeaderTimestamp). A receiver recomputes it with the shared secret, compares in constant time,
// and refuses a timestamp too far from its own clock, so a captured POST cannot be replayed later.
func Sign(secret []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(timestamp))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a webhook POST's signature and that its timestamp is within tolerance of now.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) bool {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return false
	}
	return hmac.Equal([]byte(signature), []byte(Sign(secret, timestamp, body)))
}

// Webhook POSTs each notification as JSON to a URL, signed with a shared secret.
type Webhook struct {
	URL     string
	Secret  string
	Headers map[string]string // added to every POST
	Client  *http.Client
}

// Type implements Sink.
func (w *Webhook) Type() string { return "webhook" }

// Deliver implements Sink: one signed POST; any 2xx is a success.
func (w *Webhook) Deliver(ctx context.Context, n Notification) (Receipt, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return Receipt{}, Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return Receipt{}, Permanent(err)
	}
	for k, v := range w.Headers {
		req.Header.Set(k, v)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tandem-notify")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign([]byte(w.Secret), ts, body))
	req.Header.Set(HeaderEvent, string(n.Event))
	req.Header.Set(HeaderNotification, n.ID)
	return send(w.Client, req)
}

// send does one request and turns a non-2xx answer into a *StatusError.
func send(client *http.Client, req *http.Request) (Receipt, error) {
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return Receipt{}, err
	}
	defer res.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // lets the connection be reused
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return Receipt{Code: res.StatusCode}, nil
	}
	se := &StatusError{Code: res.StatusCode, Body: strings.TrimSpace(string(head))}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		se.RetryAfter = time.Duration(s) * time.Second
	}
	return Receipt{}, se
}
