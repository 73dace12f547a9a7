package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// runner drives one turn for `tandem run`: it streams the answer (or the events) to out, reports
// progress on log and answers what the turn asks as --on-ask says. Everything it writes is written
// from the one goroutine of run.
type runner struct {
	c       *client.Client
	out     io.Writer
	log     io.Writer
	json    bool
	onAsk   string
	timeout time.Duration
	term    *askTTY       // where prompt asks; nil without one
	lines   <-chan string // the lines typed there

	sid        string
	texts      map[string]bool   // part ID -> a text part of the answer (not synthetic)
	toolStatus map[string]string // part ID -> the last status reported
	answer     strings.Builder   // the answer's text as it streamed
	requests   map[string]permission.Request
	mine       map[string]bool // requests this run answered
	queue      []*ask          // waiting for the terminal, oldest first; the first one is shown
	approvals  []approvalOutcome
	failure    string // the turn's error
	// before is what the session had spent before the prompt; the result reports the difference.
	before session.Session
}

// runResult is the last line of --format json, and what decides the exit status.
type runResult struct {
	Type      string            `json:"type"` // "result"
	SessionID string            `json:"sessionID"`
	Status    string            `json:"status"` // completed, error, refused, timeout, interrupted
	ExitCode  int               `json:"exitCode"`
	Text      string            `json:"text"` // the answer, as it streamed
	Error     string            `json:"error,omitempty"`
	Approvals []approvalOutcome `json:"approvals"` // every approval of the turn, in the order they ended
	// Cost (US dollars, at the model's prices) and Tokens are what the turn's model calls used, in
	// the shapes of GET /session's cost and tokens.
	Cost    float64        `json:"cost"`
	Tokens  session.Tokens `json:"tokens"`
	timeout time.Duration
}

// approvalOutcome is how one approval of the turn ended.
type approvalOutcome struct {
	RequestID  string   `json:"requestID"`
	Permission string   `json:"permission"`
	Patterns   []string `json:"patterns"`
	Decision   string   `json:"decision"` // the decision key (once, session, always, reject, ...)
	Reply      string   `json:"reply"`    // OpenCode's reply: once, always or reject
	Cause      string   `json:"cause"`    // reply, timeout or cancel
	By         string   `json:"by"`       // "tandem run", or "another client"
}

// summary is what the program prints last on stderr for a non-zero exit status.
func (r *runResult) summary() string {
	switch r.Status {
	case "error":
		return "the turn ended with an error"
	case "refused":
		n := 0
		for _, a := range r.Approvals {
			if a.Reply == string(permission.Reject) {
				n++
			}
		}
		return fmt.Sprintf("%d approval(s) refused or unanswered", n)
	case "timeout":
		return fmt.Sprintf("--timeout %s passed: the turn was aborted", r.timeout)
	case "interrupted":
		return "interrupted: the turn was aborted"
	}
	return ""
}

// run sends the prompt and follows its events until the session is idle again, the timeout passes
// or a signal arrives; the result says how it ended. An error means the turn could not be followed.
func (r *runner) run(ctx context.Context, sessionID string, in session.PromptInput) (*runResult, error) {
	r.texts, r.toolStatus = map[string]bool{}, map[string]string{}
	r.requests, r.mine = map[string]permission.Request{}, map[string]bool{}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := r.c.Events(sctx)
	// Subscribe before prompting, so no event of the turn is missed.
	ev, err := events.Next(ctx)
	if err != nil {
		return nil, timedOut(ctx, r.timeout, "the event stream had not opened", fmt.Errorf("event stream: %w", err))
	}
	if ev.Type != "server.connected" {
		return nil, fmt.Errorf("event stream: expected server.connected first, got %s", ev.Type)
	}
	if sessionID == "" {
		s, err := r.c.CreateSession(ctx, session.CreateInput{Agent: in.Agent, Metadata: map[string]any{"client": "tandem run"}})
		if err != nil {
			return nil, timedOut(ctx, r.timeout, "the session was not created", err)
		}
		sessionID = s.ID
	} else {
		s, err := r.c.Session(ctx, sessionID)
		if err != nil {
			return nil, timedOut(ctx, r.timeout, "the session was not read", err)
		}
		r.before = s
	}
	r.sid = sessionID
	if err := r.c.PromptAsync(ctx, sessionID, in); err != nil {
		return nil, timedOut(ctx, r.timeout, "the prompt was not sent", err)
	}
	fmt.Fprintf(r.log, "session %s\n", sessionID)

	evs := make(chan client.Event)
	failed := make(chan error, 1)
	go func() {
		for {
			ev, err := events.Next(sctx)
			if err != nil {
				failed <- err
				return
			}
			select {
			case evs <- ev:
			case <-sctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return r.stop(ctx), nil
		case err := <-failed:
			if ctx.Err() != nil {
				return r.stop(ctx), nil
			}
			return nil, fmt.Errorf("event stream: %w", err)
		case line, ok := <-r.lines:
			if !ok {
				r.lines = nil
				r.terminalGone(ctx)
				continue
			}
			r.typed(ctx, line)
		case ev := <-evs:
			if r.handle(ctx, ev) {
				return r.finish(ctx)
			}
		}
	}
}

// EventSession is the session an event belongs to, from whichever field its kind carries.
func EventSession(props json.RawMessage) string {
	var p struct {
		SessionID string `json:"sessionID"`
		Part      struct {
			SessionID string `json:"sessionID"`
		} `json:"part"`
		Info struct {
			ID        string `json:"id"`
			SessionID string `json:"sessionID"`
		} `json:"info"`
	}
	if json.Unmarshal(props, &p) != nil {
		return ""
	}
	switch {
	case p.SessionID != "":
		return p.SessionID
	case p.Part.SessionID != "":
		return p.Part.SessionID
	case p.Info.SessionID != "":
		return p.Info.SessionID
	case strings.HasPrefix(p.Info.ID, "ses_"):
		return p.Info.ID // session.created, session.updated
	}
	return ""
}

// handle follows one event; it reports whether the turn is over.
func (r *runner) handle(ctx context.Context, ev client.Event) (done bool) {
	if ev.Type == "server.connected" {
		return r.resynced(ctx, ev)
	}
	if EventSession(ev.Properties) != r.sid {
		return false
	}
	if r.json {
		r.emit(struct {
			Type       string          `json:"type"`
			Properties json.RawMessage `json:"properties"`
		}{ev.Type, ev.Properties})
	}
	var p struct {
		Part   session.Part          `json:"part"`
		PartID string                `json:"partID"`
		Field  string                `json:"field"`
		Delta  string                `json:"delta"`
		Error  *session.MessageError `json:"error"`
	}
	if json.Unmarshal(ev.Properties, &p) != nil {
		return false
	}
	switch ev.Type {
	case "message.part.updated":
		switch p.Part.Type {
		case "text":
			r.texts[p.Part.ID] = !p.Part.Synthetic
		case "tool":
			if st := p.Part.State; st != nil && r.toolStatus[p.Part.ID] != st.Status {
				r.toolStatus[p.Part.ID] = st.Status
				r.tool(p.Part)
			}
		}
	case "message.part.delta":
		if p.Field == "text" && r.texts[p.PartID] {
			r.answer.WriteString(p.Delta)
			if !r.json {
				fmt.Fprint(r.out, p.Delta)
			}
		}
	case "permission.asked":
		var req permission.Request
		if json.Unmarshal(ev.Properties, &req) == nil {
			r.permissionAsked(ctx, req)
		}
	case "permission.replied":
		r.permissionReplied(ev.Properties)
	case "question.asked":
		var q question.Request
		if json.Unmarshal(ev.Properties, &q) == nil {
			r.questionAsked(ctx, q)
		}
	case "question.replied", "question.rejected":
		var q struct {
			RequestID string `json:"requestID"`
		}
		if json.Unmarshal(ev.Properties, &q) == nil {
			r.answeredElsewhere(q.RequestID)
		}
	case "mcp.elicitation.asked":
		var e struct{ ID, Server, Message string }
		if json.Unmarshal(ev.Properties, &e) == nil {
			r.elicitationAsked(ctx, e.ID, e.Server, e.Message)
		}
	case "session.error":
		if p.Error != nil {
			r.failure = errorText(p.Error)
			fmt.Fprintf(r.log, "error: %s\n", r.failure)
		}
	case "session.idle":
		return true
	}
	return false
}

// resynced handles server.connected in the middle of the turn: with resync the server restarted
// and events were lost, so the session's status says whether the turn is still running.
func (r *runner) resynced(ctx context.Context, ev client.Event) bool {
	var p struct {
		Resync bool `json:"resync"`
	}
	if json.Unmarshal(ev.Properties, &p) != nil || !p.Resync {
		return false
	}
	fmt.Fprintln(r.log, "the server restarted; following the turn there")
	statuses, err := r.c.Statuses(ctx)
	if err != nil {
		fmt.Fprintf(r.log, "session status: %v\n", err)
		return false
	}
	_, busy := statuses[r.sid]
	return !busy
}

func (r *runner) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(r.log, "encode an event: %v\n", err)
		return
	}
	fmt.Fprintf(r.out, "%s\n", b)
}

// finish reads how the turn ended once the session is idle.
func (r *runner) finish(ctx context.Context) (*runResult, error) {
	if !r.json && r.answer.Len() > 0 {
		fmt.Fprintln(r.out)
	}
	msgs, err := r.c.Messages(ctx, r.sid)
	if err != nil {
		return nil, timedOut(ctx, r.timeout, "the messages were not read", err)
	}
	if n := len(msgs); n > 0 && msgs[n-1].Info.Error != nil && r.failure == "" {
		r.failure = errorText(msgs[n-1].Info.Error)
		fmt.Fprintf(r.log, "error: %s\n", r.failure)
	}
	res := r.result("completed", ExitOK)
	r.spent(ctx, res)
	refused := false
	for _, a := range r.approvals {
		refused = refused || a.Reply == string(permission.Reject)
	}
	switch {
	case r.failure != "":
		res.Status, res.ExitCode, res.Error = "error", ExitFailed, r.failure
	case refused && r.onAsk != askWithinRules:
		res.Status, res.ExitCode = "refused", ExitRefused
	}
	r.report(res)
	return res, nil
}

// stop aborts the turn when the timeout passed or a signal arrived.
func (r *runner) stop(ctx context.Context) *runResult {
	res := r.result("interrupted", ExitInterrupted)
	if errors.Is(context.Cause(ctx), errRunTimedOut) {
		res.Status, res.ExitCode = "timeout", ExitTimeout
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.c.Abort(actx, r.sid); err != nil {
		fmt.Fprintf(r.log, "abort the turn: %v\n", err)
	}
	r.spent(actx, res)
	if !r.json && r.answer.Len() > 0 {
		fmt.Fprintln(r.out)
	}
	r.report(res)
	return res
}

func (r *runner) result(status string, code int) *runResult {
	approvals := r.approvals
	if approvals == nil {
		approvals = []approvalOutcome{}
	}
	return &runResult{Type: "result", SessionID: r.sid, Status: status, ExitCode: code, Text: r.answer.String(),
		Approvals: approvals, timeout: r.timeout}
}

// spent fills in what the turn cost: the session's totals now, less what they were before it.
func (r *runner) spent(ctx context.Context, res *runResult) {
	s, err := r.c.Session(ctx, r.sid)
	if err != nil {
		fmt.Fprintf(r.log, "read the turn's cost: %v\n", err)
		return
	}
	b, a := r.before.Tokens, s.Tokens
	res.Cost = s.Cost - r.before.Cost
	res.Tokens = session.Tokens{Total: a.Total - b.Total, Input: a.Input - b.Input, Output: a.Output - b.Output,
		Reasoning: a.Reasoning - b.Reasoning, Cache: session.TokensCache{Read: a.Cache.Read - b.Cache.Read, Write: a.Cache.Write - b.Cache.Write}}
}

// report writes the result line of --format json.
func (r *runner) report(res *runResult) {
	if r.json {
		r.emit(res)
	}
}

func errorText(e *session.MessageError) string {
	if msg, ok := e.Data["message"].(string); ok && msg != "" {
		return e.Name + ": " + msg
	}
	return e.Name
}

// tool reports a tool call's progress on stderr, one line per status.
func (r *runner) tool(p session.Part) {
	st := p.State
	what := p.Tool
	if st.Title != "" {
		what += ": " + st.Title
	} else {
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(st.Input, &in) == nil && in.Command != "" {
			what += ": " + in.Command
		}
	}
	switch st.Status {
	case "running":
		fmt.Fprintf(r.log, "… %s\n", what)
	case "completed":
		fmt.Fprintf(r.log, "✓ %s\n", what)
	case "error":
		fmt.Fprintf(r.log, "✗ %s: %s\n", what, st.Error)
	}
}
