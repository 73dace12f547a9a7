package notify

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Ntfy publishes notifications to an ntfy topic (https://ntfy.sh or a self-hosted server): a POST
// to the topic URL whose body is the message, with the title, priority, tags and click link in
// headers, as ntfy's publish API takes them.
type Ntfy struct {
	URL string // the topic: https://ntfy.sh/my-topic
	// Token, when set, is sent as a Bearer token (an ntfy access token).
	Token string
	// Priority is the priority of asked notifications, 1-5 (default 4, high); resolved ones are
	// sent at 2 (low).
	Priority int
	Headers  map[string]string
	Client   *http.Client
}

// Type implements Sink.
func (s *Ntfy) Type() string { return "ntfy" }

var ntfyTags = map[Kind]string{Permission: "lock", Question: "question", Elicitation: "memo"}

// Deliver implements Sink: one POST to the topic.
func (s *Ntfy) Deliver(ctx context.Context, n Notification) (Receipt, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader(n.Message))
	if err != nil {
		return Receipt{}, Permanent(err)
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	priority := s.Priority
	if priority == 0 {
		priority = 4
	}
	tags := ntfyTags[n.Kind]
	if n.Event == Resolved {
		priority, tags = 2, "white_check_mark"
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("User-Agent", "tandem-notify")
	req.Header.Set("Title", headerText(n.Title))
	req.Header.Set("Priority", strconv.Itoa(priority))
	req.Header.Set("Tags", tags)
	if n.Link != "" {
		req.Header.Set("Click", n.Link)
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	return send(s.Client, req)
}

// headerText keeps a header value ASCII: text that is not is RFC 2047-encoded, which ntfy decodes.
func headerText(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf || s[i] < ' ' {
			return mime.BEncoding.Encode("utf-8", s)
		}
	}
	return s
}
