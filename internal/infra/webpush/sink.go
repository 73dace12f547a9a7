package webpush

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/tandem-dev/tandem/internal/infra/notify"
)

// Sink is the notify target that pushes to the browsers subscribed to the web UI. A permission's
// notification carries Approve and Reject buttons (the decision keys once and reject), each with
// its own single-use token; the request's resolution replaces the notification with how it ended
// and who answered.
type Sink struct {
	Service *Service
}

// Type names the sink in the delivery log.
func (s *Sink) Type() string { return "webpush" }

// Deliver pushes n to every subscribed browser. A push that some browsers accepted is delivered
// (retrying would notify those twice); one no browser accepted is retried.
func (s *Sink) Deliver(ctx context.Context, n notify.Notification) (notify.Receipt, error) {
	var sent, total int
	var err error
	link := sameOriginLink(n.Link)
	if n.Event == notify.Resolved {
		title, body := resolvedText(n)
		sent, total, err = s.Service.Resolved(ctx, n.RequestID, title, body, link)
	} else {
		notice := Notice{Kind: string(n.Kind), RequestID: n.RequestID, SessionID: n.SessionID, Title: n.Title, Body: n.Message, URL: link}
		if n.Kind == notify.Permission {
			notice.Buttons = []Button{{Action: "approve", Title: "Approve", Decision: "once"}, {Action: "reject", Title: "Reject", Decision: "reject"}}
		}
		sent, total, err = s.Service.Asked(ctx, notice)
	}
	switch {
	case total == 0 && err == nil:
		return notify.Receipt{Detail: "no browser is subscribed (the bell in the web UI subscribes one)"}, nil
	case sent == 0 && err != nil:
		return notify.Receipt{}, err
	case err != nil:
		return notify.Receipt{Code: 201, Detail: fmt.Sprintf("%d of %d browsers; %v", sent, total, err)}, nil
	}
	return notify.Receipt{Code: 201, Detail: fmt.Sprintf("%d of %d browsers", sent, total)}, nil
}

// sameOriginLink keeps the path and fragment of a link to the web UI: the service worker opens it
// on its own origin, the one the browser subscribed from.
func sameOriginLink(link string) string {
	u, err := url.Parse(link)
	if err != nil || link == "" {
		return ""
	}
	out := u.EscapedPath()
	if out == "" {
		out = "/"
	}
	if u.Fragment != "" {
		out += "#" + u.EscapedFragment()
	}
	return out
}

// resolvedText is the dispatcher's text for how a request ended, with the client that answered
// it named: the person whose phone shows it learns who was first.
func resolvedText(n notify.Notification) (title, body string) {
	title, body = n.Title, n.Message
	if r := n.Resolution; r != nil && r.Cause == "reply" {
		var ev struct {
			Client string `json:"client"`
		}
		if json.Unmarshal(r.Event, &ev) == nil && ev.Client != "" {
			title += " by " + ev.Client
		}
	}
	return title, body
}
