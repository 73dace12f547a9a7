package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/base/bus"
)

// ledger is what happened to the requests one session asked a person for while one tools/call (or
// one multi-round-trip turn) lasted: each approval, question and downstream MCP server's form, and
// how it ended. A result's approvals field is read from it, so it reports this call's facts, not the
// strategy's possibilities.
type ledger struct {
	sid string

	mu         sync.Mutex
	asked      map[string]string // request ID -> what was asked, for the line of its end
	order      []string          // request IDs in the order asked
	ends       map[string]string // request ID -> how it ended
	because    map[string]string // request ID -> why this server rejected it (the client could not answer)
	unanswered []string          // the questions that ended without an answer
}

// follow starts a ledger of the session's requests from now on; stop ends it once every event
// published before it was called is recorded (a request's end is published before the tool call that
// waited for it goes on, so stopping after the turn returned misses none).
func (s *Server) follow(sid string) (led *ledger, stop func(), err error) {
	sub, _, err := s.o.Bus.Subscribe("", waitsForAPerson)
	if err != nil {
		return nil, nil, err
	}
	led = &ledger{sid: sid, asked: map[string]string{}, ends: map[string]string{}, because: map[string]string{}}
	quit, done := make(chan struct{}), make(chan struct{})
	drain := func() error {
		batch, err := sub.Take(nil)
		for _, ev := range batch {
			led.record(ev)
		}
		return err
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-sub.Ready():
				if drain() != nil {
					return
				}
			}
		}
	}()
	var once sync.Once
	return led, func() {
		once.Do(func() {
			close(quit)
			<-done
			if err := drain(); err != nil && !errors.Is(err, bus.ErrUnsubscribed) {
				s.o.Logger.Debug("mcp: the ledger's subscription ended early", "session", sid, "err", err)
			}
			sub.Close()
		})
	}, nil
}

// reason notes why this server itself ends a request without an answer from the client, before it
// does; the ending event's line then says so instead of naming this client as the one who answered.
func (l *ledger) reason(id, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.because[id] = why
}

// record reads one event of waitsForAPerson's selection; events of other sessions are ignored.
func (l *ledger) record(ev *bus.Event) {
	var env envelope
	if json.Unmarshal(ev.Payload, &env) != nil {
		return
	}
	var p struct {
		ID        string          `json:"id"`
		RequestID string          `json:"requestID"`
		SessionID string          `json:"sessionID"`
		Cause     string          `json:"cause"`
		Client    string          `json:"client"`
		Decision  string          `json:"decision"`
		Action    string          `json:"action"`
		Server    string          `json:"server"`
		Message   string          `json:"message"`
		Perm      string          `json:"permission"`
		Patterns  []string        `json:"patterns"`
		Questions []question.Info `json:"questions"`
		Metadata  map[string]any  `json:"metadata"`
	}
	if json.Unmarshal(env.Properties, &p) != nil || p.SessionID != l.sid {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch env.Type {
	case api.EventPermissionAsked:
		what := strings.Join(p.Patterns, " ")
		if c, ok := p.Metadata["command"].(string); ok && c != "" {
			what = c
		}
		l.ask(p.ID, fmt.Sprintf("%s %s", p.Perm, what))
	case api.EventQuestionAsked:
		l.ask(p.ID, "question "+questionTitles(p.Questions))
	case api.EventElicitationAsked:
		l.ask(p.ID, fmt.Sprintf("MCP server %s's form %q", p.Server, p.Message))
	case api.EventPermissionReplied:
		l.end(p.RequestID, p.Cause, p.Client, decisionWords(p.Decision))
	case api.EventQuestionReplied:
		l.end(p.RequestID, "reply", p.Client, "answered")
	case api.EventQuestionRejected:
		if _, ok := l.asked[p.RequestID]; ok {
			l.unanswered = append(l.unanswered, strings.TrimPrefix(l.asked[p.RequestID], "question "))
		}
		l.end(p.RequestID, p.Cause, p.Client, "dismissed")
	case api.EventElicitationReplied:
		l.end(p.ID, p.Cause, p.Client, map[string]string{"accept": "answered", "decline": "declined"}[p.Action])
	}
}

func (l *ledger) ask(id, what string) {
	if _, ok := l.asked[id]; !ok {
		l.order = append(l.order, id)
	}
	l.asked[id] = what
}

// end writes how a request ended: answered by whom, rejected by this server and why, timed out, or
// withdrawn with the turn.
func (l *ledger) end(id, cause, client, outcome string) {
	if _, ok := l.asked[id]; !ok {
		return // asked before this call began (another call's, or the pending list's)
	}
	switch {
	case l.because[id] != "":
		l.ends[id] = "unanswered, " + l.because[id]
	case cause == "timeout":
		l.ends[id] = "unanswered in time: " + orDefault(outcome, "rejected")
	case cause == "cancel":
		l.ends[id] = "withdrawn (the turn ended or was aborted)"
	default:
		if outcome == "" {
			outcome = "cancelled"
		}
		if client == "" {
			client = "a client"
		}
		l.ends[id] = outcome + " by " + client
	}
}

// statement is the approvals field: how this client answers (mode), then each request of this call
// and its end, or that none was needed.
func (l *ledger) statement(mode string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.order) == 0 {
		return mode + "; nothing needed an answer in this call"
	}
	lines := make([]string, 0, len(l.order))
	for _, id := range l.order {
		end := l.ends[id]
		if end == "" {
			end = "still waiting in the pending list"
		}
		lines = append(lines, l.asked[id]+": "+end)
	}
	return fmt.Sprintf("%s; %d asked in this call: %s", mode, len(lines), strings.Join(lines, "; "))
}

// unansweredQuestions are the questions of this call that ended without an answer.
func (l *ledger) unansweredQuestions() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.unanswered...)
}

func questionTitles(qs []question.Info) string {
	titles := make([]string, len(qs))
	for i, q := range qs {
		titles[i] = fmt.Sprintf("%q", q.Question)
	}
	return strings.Join(titles, ", ")
}

// decisionWords is a permission decision key as the approvals field says it.
func decisionWords(key string) string {
	switch key {
	case permission.KeyOnce:
		return "allowed once"
	case permission.KeySession:
		return "allowed for the session"
	case permission.KeyAlways:
		return "allowed always"
	case permission.KeyReject, permission.KeyRejectWithMessage:
		return "rejected"
	case permission.KeyDenyAlways:
		return "denied always"
	}
	return orDefault(key, "answered")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
