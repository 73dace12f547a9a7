package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NotifyTarget is one place where requests that wait for a person are announced: an entry of the
// "notify" list. Type says which sink delivers it; the filter fields (Kinds, Sessions, Delay) are
// common to every type.
type NotifyTarget struct {
	// Type is the sink: "webhook" (signed JSON POSTs), "ntfy" (an ntfy-compatible topic) or
	// "webpush" (the browsers subscribed to the web UI; it has no url).
	Type string `json:"type"`
	// Name identifies the target in the delivery log; default "<type>-<position>" (webhook-1).
	Name string `json:"name,omitempty"`
	// Enabled false keeps the entry without using it.
	Enabled *bool `json:"enabled,omitempty"`
	// URL is where notifications are POSTed: the webhook's endpoint or the ntfy topic URL.
	URL string `json:"url,omitempty"`
	// Secret is the webhook's shared key for the HMAC-SHA256 signature (required for webhooks).
	Secret string `json:"secret,omitempty"`
	// Token is sent as "Authorization: Bearer <token>" (an ntfy access token).
	Token string `json:"token,omitempty"`
	// Headers are added to every request (e.g. a proxy's own credentials).
	Headers map[string]string `json:"headers,omitempty"`
	// Priority is the ntfy priority of an asked request: 1-5 or min, low, default, high, urgent
	// (default high).
	Priority NotifyPriority `json:"priority,omitzero"`
	// Kinds keeps only these kinds of request: permission, question, elicitation (default all).
	Kinds []string `json:"kinds,omitempty"`
	// Sessions keeps only the requests of these sessions (default all).
	Sessions []string `json:"sessions,omitempty"`
	// Delay holds a notification back: a request answered within it (by a person, a rule or another
	// client) notifies nobody. Seconds, or a duration like "30s".
	Delay Seconds `json:"delay,omitzero"`
	// Attempts bounds the deliveries of one notification, retries included (default 5 for
	// webhooks, 3 for ntfy; at most 20).
	Attempts int `json:"attempts,omitempty"`
	// Backoff is the wait before the first retry, doubled for each next one (default 1s, at most
	// 5 minutes between two attempts). Seconds, or a duration like "500ms".
	Backoff Seconds `json:"backoff,omitzero"`
	// WebURL is the address of tandem's web UI as the person reaches it (a reverse proxy, a
	// tailnet name), for the links in notifications; default the server's own URL.
	WebURL string `json:"webURL,omitempty"`
	// Subject is the contact a webpush target's VAPID signature names, a mailto: or https: URL
	// (default: webURL when it is a public https address, else tandem's home page; Apple's push
	// service refuses a contact at localhost).
	Subject string `json:"subject,omitempty"`
}

// NotifyKinds are the kinds of request a notify target can be limited to.
var NotifyKinds = []string{"permission", "question", "elicitation"}

// notifyTypes are the types of target tandem knows; validation names them.
var notifyTypes = []string{"webhook", "ntfy", "webpush"}

// Active reports whether the target is used.
func (t NotifyTarget) Active() bool { return t.Enabled == nil || *t.Enabled }

// DisplayName is the target's name, or its default name at position i (0-based) of the list.
func (t NotifyTarget) DisplayName(i int) string {
	if t.Name != "" {
		return t.Name
	}
	return fmt.Sprintf("%s-%d", t.Type, i+1)
}

// Seconds is a duration written as a number of seconds (fractions allowed) or a Go duration string
// ("30s", "1m30s"). Decoding never fails; a malformed value is reported by validation.
type Seconds struct {
	Set     bool
	D       time.Duration
	invalid json.RawMessage
}

// UnmarshalJSON accepts a non-negative number of seconds or a duration string.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*s = Seconds{}
		return nil
	}
	bad := Seconds{Set: true, invalid: append(json.RawMessage(nil), b...)}
	var secs float64
	if err := json.Unmarshal(b, &secs); err == nil {
		if secs < 0 {
			*s = bad
			return nil
		}
		*s = Seconds{Set: true, D: time.Duration(secs * float64(time.Second))}
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		if d, err := time.ParseDuration(str); err == nil && d >= 0 {
			*s = Seconds{Set: true, D: d}
			return nil
		}
	}
	*s = bad
	return nil
}

// MarshalJSON writes the value as a duration string (or back as it was written, when invalid).
func (s Seconds) MarshalJSON() ([]byte, error) {
	if s.invalid != nil {
		return s.invalid, nil
	}
	return json.Marshal(s.D.String())
}

// IsZero lets omitzero drop an absent duration.
func (s Seconds) IsZero() bool { return !s.Set }

// NotifyPriority is an ntfy priority, 1 (min) to 5 (urgent); 0 means the default.
type NotifyPriority struct {
	Level   int
	invalid json.RawMessage
}

var priorityNames = map[string]int{"min": 1, "low": 2, "default": 3, "high": 4, "urgent": 5, "max": 5}

// UnmarshalJSON accepts 1-5 or a name (min, low, default, high, urgent, max).
func (p *NotifyPriority) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*p = NotifyPriority{invalid: append(json.RawMessage(nil), b...)}
	var s string
	if json.Unmarshal(b, &s) == nil {
		if n, ok := priorityNames[strings.ToLower(s)]; ok {
			*p = NotifyPriority{Level: n}
		} else if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= 5 {
			*p = NotifyPriority{Level: n}
		}
		return nil
	}
	var n int
	if json.Unmarshal(b, &n) == nil && n >= 1 && n <= 5 {
		*p = NotifyPriority{Level: n}
	}
	return nil
}

// MarshalJSON writes the level as a number.
func (p NotifyPriority) MarshalJSON() ([]byte, error) {
	if p.invalid != nil && p.Level == 0 {
		return p.invalid, nil
	}
	return strconv.AppendInt(nil, int64(p.Level), 10), nil
}

// IsZero lets omitzero drop an absent priority.
func (p NotifyPriority) IsZero() bool { return p.Level == 0 && p.invalid == nil }

// validateNotify checks the notify targets; the pointer names the value at fault.
func validateNotify(targets []NotifyTarget) (string, error) {
	names := map[string]int{}
	webpushAt := -1
	for i, t := range targets {
		ptr := "/notify/" + strconv.Itoa(i)
		where := fmt.Sprintf("notify[%d]", i)
		if !slices.Contains(notifyTypes, t.Type) {
			if t.Type == "" {
				return ptr, fmt.Errorf("%s: type is required, one of %s", where, strings.Join(notifyTypes, ", "))
			}
			return ptr + "/type", fmt.Errorf("%s: type must be one of %s, got %q", where, strings.Join(notifyTypes, ", "), t.Type)
		}
		name := t.DisplayName(i)
		if j, dup := names[name]; dup {
			return ptr + "/name", fmt.Errorf("%s: the name %q is taken by notify[%d]; names identify targets in the delivery log", where, name, j)
		}
		names[name] = i
		if t.Type == "webpush" {
			if webpushAt >= 0 {
				return ptr, fmt.Errorf("%s: notify[%d] is the webpush target already; there is one, for every subscribed browser", where, webpushAt)
			}
			webpushAt = i
			if t.URL != "" || t.Secret != "" || t.Token != "" || len(t.Headers) > 0 {
				return ptr, fmt.Errorf("%s (webpush): takes no url, secret, token or headers: browsers subscribe from the web UI (the bell)", where)
			}
			if t.Subject != "" && !strings.HasPrefix(t.Subject, "mailto:") && !strings.HasPrefix(t.Subject, "https://") {
				return ptr + "/subject", fmt.Errorf("%s (webpush): subject must be a mailto: or https: URL (RFC 8292), got %q", where, t.Subject)
			}
		}
		u, err := url.Parse(t.URL)
		switch {
		case t.Type == "webpush":
		case t.URL == "":
			return ptr, fmt.Errorf("%s (%s): url is required", where, t.Type)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return ptr + "/url", fmt.Errorf("%s: url must be an http or https URL, got %q", where, t.URL)
		}
		if t.Type == "webhook" && t.Secret == "" {
			return ptr, fmt.Errorf("%s (webhook): secret is required: every POST is signed with it (HMAC-SHA256) so the receiver can tell it comes from tandem", where)
		}
		if t.Type != "webpush" && t.Subject != "" {
			return ptr + "/subject", fmt.Errorf("%s: subject is a webpush setting; a %s has none", where, t.Type)
		}
		if t.Type != "ntfy" && !t.Priority.IsZero() {
			return ptr + "/priority", fmt.Errorf("%s: priority is an ntfy setting; a %s has none", where, t.Type)
		}
		if t.Priority.invalid != nil && t.Priority.Level == 0 {
			return ptr + "/priority", fmt.Errorf("%s: priority must be 1-5 or min, low, default, high, urgent, got %s", where, t.Priority.invalid)
		}
		for j, k := range t.Kinds {
			if !slices.Contains(NotifyKinds, k) {
				return ptr + "/kinds/" + strconv.Itoa(j), fmt.Errorf("%s: kinds: %q is not one of %s", where, k, strings.Join(NotifyKinds, ", "))
			}
		}
		for _, d := range []struct {
			key string
			s   Seconds
		}{{"delay", t.Delay}, {"backoff", t.Backoff}} {
			if d.s.invalid != nil {
				return ptr + "/" + d.key, fmt.Errorf("%s: %s must be a number of seconds or a duration like \"30s\", got %s", where, d.key, d.s.invalid)
			}
		}
		if t.Attempts < 0 || t.Attempts > 20 {
			return ptr + "/attempts", fmt.Errorf("%s: attempts must be between 1 and 20, got %d", where, t.Attempts)
		}
		if t.WebURL != "" {
			if w, err := url.Parse(t.WebURL); err != nil || (w.Scheme != "http" && w.Scheme != "https") || w.Host == "" {
				return ptr + "/webURL", fmt.Errorf("%s: webURL must be an http or https URL, got %q", where, t.WebURL)
			}
		}
	}
	return "", nil
}
