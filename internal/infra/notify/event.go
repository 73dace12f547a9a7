package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/bus"
)

// The events of a pending request's life, by type: which kind it is and which step.
var lifecycle = map[string]struct {
	kind  Kind
	event Event
}{
	api.EventPermissionAsked:    {Permission, Asked},
	api.EventPermissionReplied:  {Permission, Resolved},
	api.EventQuestionAsked:      {Question, Asked},
	api.EventQuestionReplied:    {Question, Resolved},
	api.EventQuestionRejected:   {Question, Resolved},
	api.EventElicitationAsked:   {Elicitation, Asked},
	api.EventElicitationReplied: {Elicitation, Resolved},
}

// isPendingEvent is the bus filter of the events the Dispatcher follows.
func isPendingEvent(ev *bus.Event) bool {
	_, ok := lifecycle[ev.Type]
	return ok
}

// step is one parsed event.
type step struct{ n Notification }

type envelope struct {
	Properties json.RawMessage `json:"properties"`
}

// parse turns a lifecycle event into the notification it stands for (without its ID, and for a
// resolved one without what the asked one knew). ok is false for events notifications ignore.
func parse(ev *bus.Event) (step, bool, error) {
	lc, ok := lifecycle[ev.Type]
	if !ok {
		return step{}, false, nil
	}
	var env envelope
	if err := json.Unmarshal(ev.Payload, &env); err != nil {
		return step{}, false, err
	}
	n := Notification{Event: lc.event, Kind: lc.kind, Directory: ev.Directory, Time: time.Now().UnixMilli()}
	if lc.event == Asked {
		n.Request = env.Properties
		var lines []string
		var err error
		switch lc.kind {
		case Permission:
			lines, err = askedPermission(&n, env.Properties)
		case Question:
			lines, err = askedQuestion(&n, env.Properties)
		case Elicitation:
			lines, err = askedElicitation(&n, env.Properties)
		}
		if err != nil {
			return step{}, false, err
		}
		if ev.Directory != "" {
			lines = append(lines, "in "+filepath.Base(ev.Directory))
		}
		n.Message = clip(strings.Join(lines, "\n"), 1000)
		return step{n}, n.RequestID != "", nil
	}
	r := &Resolution{Event: env.Properties}
	switch ev.Type {
	case api.EventPermissionReplied:
		var p api.PermissionReplied
		if err := json.Unmarshal(env.Properties, &p); err != nil {
			return step{}, false, err
		}
		n.SessionID, n.RequestID, r.Cause, r.Answer = p.SessionID, p.RequestID, p.Cause, p.Decision
		if r.Answer == "" {
			r.Answer = string(p.Reply)
		}
	case api.EventQuestionReplied:
		var p api.QuestionReplied
		if err := json.Unmarshal(env.Properties, &p); err != nil {
			return step{}, false, err
		}
		n.SessionID, n.RequestID, r.Cause, r.Answer = p.SessionID, p.RequestID, "reply", "answered"
	case api.EventQuestionRejected:
		var p api.QuestionRejected
		if err := json.Unmarshal(env.Properties, &p); err != nil {
			return step{}, false, err
		}
		// tandem's event says why (reject: dismissed, timeout, cancel); OpenCode's does not.
		n.SessionID, n.RequestID, r.Cause = p.SessionID, p.RequestID, p.Cause
		if r.Cause == "" {
			r.Cause = api.QuestionDismissed
		}
	case api.EventElicitationReplied:
		var p api.ElicitationReplied
		if err := json.Unmarshal(env.Properties, &p); err != nil {
			return step{}, false, err
		}
		n.SessionID, n.RequestID, r.Cause, r.Answer = p.SessionID, p.ID, p.Cause, p.Action
	}
	if r.Cause == "" {
		r.Cause = "reply"
	}
	n.Resolution = r
	return step{n}, n.RequestID != "", nil
}

// askedPermission fills in an asked notification from a permission.asked payload and returns the
// lines of its message: what the agent wants to do.
func askedPermission(n *Notification, props json.RawMessage) ([]string, error) {
	var p api.PermissionRequest
	if err := json.Unmarshal(props, &p); err != nil {
		return nil, err
	}
	n.SessionID, n.RequestID = p.SessionID, p.ID
	if p.Time.Created > 0 {
		n.Time = p.Time.Created
	}
	n.Title = "tandem: allow " + p.Permission + "?"
	if cmd, ok := p.Metadata["command"].(string); ok && cmd != "" {
		return []string{cmd}, nil
	}
	return []string{strings.Join(p.Patterns, "\n")}, nil
}

// askedQuestion fills in an asked notification from a question.asked payload and returns the lines
// of its message: the first question with its options.
func askedQuestion(n *Notification, props json.RawMessage) ([]string, error) {
	var p api.QuestionRequest
	if err := json.Unmarshal(props, &p); err != nil {
		return nil, err
	}
	n.SessionID, n.RequestID = p.SessionID, p.ID
	n.Title = "tandem: a question"
	var lines []string
	if len(p.Questions) > 0 {
		q := p.Questions[0]
		if q.Header != "" {
			n.Title += ": " + q.Header
		}
		line := q.Question
		if len(q.Options) > 0 {
			labels := make([]string, len(q.Options))
			for i, o := range q.Options {
				labels[i] = o.Label
			}
			line += " (" + strings.Join(labels, " / ") + ")"
		}
		lines = append(lines, line)
		if more := len(p.Questions) - 1; more > 0 {
			lines = append(lines, fmt.Sprintf("and %d more", more))
		}
	}
	return lines, nil
}

// askedElicitation fills in an asked notification from an mcp.elicitation.asked payload and returns
// the lines of its message: what the server asks, and for a URL the page's domain.
func askedElicitation(n *Notification, props json.RawMessage) ([]string, error) {
	var p api.Elicitation
	if err := json.Unmarshal(props, &p); err != nil {
		return nil, err
	}
	n.SessionID, n.RequestID = p.SessionID, p.ID
	if p.Time.Created > 0 {
		n.Time = p.Time.Created
	}
	n.Title = "tandem: " + p.Server + " asks for input"
	lines := []string{p.Message}
	if p.Mode == "url" && p.Domain != "" {
		lines = append(lines, "(a page on "+p.Domain+")")
	}
	return lines, nil
}

// resolvedText is the title and message of a resolved notification.
func resolvedText(asked Notification, r Resolution) (title, message string) {
	what := strings.TrimPrefix(asked.Title, "tandem: ")
	switch r.Cause {
	case "timeout":
		title = "tandem: timed out"
	case "cancel":
		title = "tandem: cancelled"
	case "reject":
		title = "tandem: dismissed"
	default:
		title = "tandem: answered"
	}
	message = what
	if r.Answer != "" {
		message += " → " + r.Answer
	}
	return title, message
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Link is the web UI's page of a request (#/pending/<id>): it opens straight to the request's
// dialog, or says who answered it first.
func Link(base, requestID string) string {
	return strings.TrimRight(base, "/") + "/#/pending/" + url.PathEscape(requestID)
}
