package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/internal/base/bus"
)

// The events of a pending request's life, by type: which kind it is and which step.
var lifecycle = map[string]struct {
	kind  Kind
	event Event
}{
	"permission.asked":        {Permission, Asked},
	"permission.replied":      {Permission, Resolved},
	"question.asked":          {Question, Asked},
	"question.replied":        {Question, Resolved},
	"question.rejected":       {Question, Resolved},
	"mcp.elicitation.asked":   {Elicitation, Asked},
	"mcp.elicitation.replied": {Elicitation, Resolved},
}

// isPendingEvent is the bus filter of the events the Dispatcher follows.
func isPendingEvent(ev *bus.Event) bool {
	_, ok := lifecycle[ev.Type]
	return ok
}

// step is one parsed event.
type step struct{ n Notification }

// props is the union of the properties of the lifecycle events that notifications read.
type props struct {
	ID        string `json:"id"`
	RequestID string `json:"requestID"`
	SessionID string `json:"sessionID"`
	// permission
	Permission string         `json:"permission"`
	Patterns   []string       `json:"patterns"`
	Metadata   map[string]any `json:"metadata"`
	Reply      string         `json:"reply"`
	Decision   string         `json:"decision"`
	Cause      string         `json:"cause"`
	// question
	Questions []struct {
		Question string `json:"question"`
		Header   string `json:"header"`
		Options  []struct {
			Label string `json:"label"`
		} `json:"options"`
	} `json:"questions"`
	// elicitation
	Server  string `json:"server"`
	Mode    string `json:"mode"`
	Message string `json:"message"`
	Domain  string `json:"domain"`
	Action  string `json:"action"`
	Time    struct {
		Created int64 `json:"created"`
	} `json:"time"`
}

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
	var p props
	if err := json.Unmarshal(env.Properties, &p); err != nil {
		return step{}, false, err
	}
	n := Notification{Event: lc.event, Kind: lc.kind, SessionID: p.SessionID, Directory: ev.Directory, Time: time.Now().UnixMilli()}
	if lc.event == Asked {
		n.RequestID, n.Request = p.ID, env.Properties
		if p.Time.Created > 0 {
			n.Time = p.Time.Created
		}
		n.Title, n.Message = askedText(lc.kind, p, ev.Directory)
		return step{n}, n.RequestID != "", nil
	}
	r := &Resolution{Cause: p.Cause, Event: env.Properties}
	switch ev.Type {
	case "permission.replied":
		n.RequestID, r.Answer = p.RequestID, p.Decision
		if r.Answer == "" {
			r.Answer = p.Reply
		}
	case "question.replied":
		n.RequestID, r.Cause, r.Answer = p.RequestID, "reply", "answered"
	case "question.rejected":
		// tandem's event says why (reject: dismissed, timeout, cancel); OpenCode's does not.
		n.RequestID = p.RequestID
		if r.Cause == "" {
			r.Cause = "reject"
		}
	case "mcp.elicitation.replied":
		n.RequestID, r.Answer = p.ID, p.Action
	}
	if r.Cause == "" {
		r.Cause = "reply"
	}
	n.Resolution = r
	return step{n}, n.RequestID != "", nil
}

// askedText is the title and message of an asked notification: what asks for what, in which project.
func askedText(kind Kind, p props, dir string) (title, message string) {
	var lines []string
	switch kind {
	case Permission:
		title = "tandem: allow " + p.Permission + "?"
		if cmd, ok := p.Metadata["command"].(string); ok && cmd != "" {
			lines = append(lines, cmd)
		} else {
			lines = append(lines, strings.Join(p.Patterns, "\n"))
		}
	case Question:
		title = "tandem: a question"
		if len(p.Questions) > 0 {
			q := p.Questions[0]
			if q.Header != "" {
				title += ": " + q.Header
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
	case Elicitation:
		title = "tandem: " + p.Server + " asks for input"
		lines = append(lines, p.Message)
		if p.Mode == "url" && p.Domain != "" {
			lines = append(lines, "(a page on "+p.Domain+")")
		}
	}
	if dir != "" {
		lines = append(lines, "in "+filepath.Base(dir))
	}
	return title, clip(strings.Join(lines, "\n"), 1000)
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
