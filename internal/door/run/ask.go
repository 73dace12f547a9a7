package run

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
)

// askTTY is where --on-ask prompt asks: stdin and stderr when both are terminals, else the
// controlling terminal (so `git diff | tandem run ...` can still ask).
type askTTY struct {
	in  io.Reader
	out io.Writer
	f   *os.File // the opened /dev/tty; nil when stdin and stderr are used
}

// openTerminal returns the terminal to ask on, or nil when the process has none.
func openTerminal() *askTTY {
	if isTerminal(os.Stdin) && isTerminal(os.Stderr) {
		return &askTTY{in: os.Stdin, out: os.Stderr}
	}
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return &askTTY{in: f, out: f, f: f}
}

func (t *askTTY) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// lines delivers what is typed, a line at a time; the channel closes when the terminal does.
func (t *askTTY) lines() <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(t.in)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// ask is an approval or a question waiting for the person at the terminal.
type ask struct {
	perm    *permission.Request
	q       *question.Request
	choice  *permission.Choice // chosen, waiting for its message (reject-with-message)
	step    int                // the question being asked
	answers [][]string
}

func (a *ask) id() string {
	if a.perm != nil {
		return a.perm.ID
	}
	return a.q.ID
}

// what an approval is about, in a few words: the command, the file, or the patterns.
func what(req permission.Request) string {
	if c, ok := req.Metadata["command"].(string); ok && c != "" {
		return req.Permission + ": " + c
	}
	if f, ok := req.Metadata["filepath"].(string); ok && f != "" {
		return req.Permission + ": " + f
	}
	return req.Permission + ": " + strings.Join(req.Patterns, " ")
}

// permissionAsked answers an approval of the turn as --on-ask says.
func (r *runner) permissionAsked(ctx context.Context, req permission.Request) {
	if _, seen := r.requests[req.ID]; seen {
		return // announced again after a server restart
	}
	r.requests[req.ID] = req
	switch {
	case r.onAsk == askPrompt && r.term != nil:
		r.enqueue(&ask{perm: &req})
	case r.onAsk == askPrompt:
		r.reply(ctx, req, permission.KeyReject, "rejected by tandem run: there was no terminal to ask on (--on-ask prompt)")
	case r.onAsk == askReject:
		r.reply(ctx, req, permission.KeyReject, "rejected by tandem run (--on-ask reject)")
	case r.onAsk == askWithinRules:
		r.reply(ctx, req, permission.KeyReject, "rejected by tandem run (--on-ask allow-within-rules): only what the permission rules allow may run here, and nobody can be asked; stay within what is allowed")
	case r.onAsk == askWait:
		var keys []string
		for _, d := range req.Decisions {
			keys = append(keys, d.Key)
		}
		fmt.Fprintf(r.log, "waiting for another client to answer %s (%s): the web UI or `tandem attach` at %s, or POST %s/permission/%s/reply {\"reply\": %s}\n",
			req.ID, what(req), r.c.URL(), r.c.URL(), req.ID, strings.Join(quoted(keys), "|"))
	}
}

func quoted(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strconv.Quote(k)
	}
	return out
}

// reply answers an approval by its decision key, as POST /permission/{id}/reply does.
func (r *runner) reply(ctx context.Context, req permission.Request, key, message string) {
	r.mine[req.ID] = true
	if err := r.c.Decide(ctx, req.ID, key, message); err != nil {
		delete(r.mine, req.ID)
		fmt.Fprintf(r.log, "  (%s was answered elsewhere first: %v)\n", req.ID, err)
	}
}

// permissionReplied reports how an approval ended, whoever answered it.
func (r *runner) permissionReplied(props json.RawMessage) {
	var p struct {
		RequestID string `json:"requestID"`
		Reply     string `json:"reply"`
		Decision  string `json:"decision"`
		Cause     string `json:"cause"`
	}
	if json.Unmarshal(props, &p) != nil {
		return
	}
	req := r.requests[p.RequestID]
	out := approvalOutcome{RequestID: p.RequestID, Permission: req.Permission, Patterns: req.Patterns, Decision: p.Decision,
		Reply: p.Reply, Cause: p.Cause, By: "another client"}
	if out.Decision == "" {
		out.Decision = p.Reply
	}
	if r.mine[p.RequestID] {
		out.By = "tandem run"
	}
	if out.Patterns == nil {
		out.Patterns = []string{}
	}
	r.approvals = append(r.approvals, out)
	verb := "allowed"
	if p.Reply == string(permission.Reject) {
		verb = "rejected"
	}
	if out.Decision != string(permission.Once) && out.Decision != string(permission.Reject) {
		verb += " (" + out.Decision + ")"
	}
	note := ""
	switch {
	case p.Cause == "timeout":
		note = " — nobody answered in time"
	case p.Cause == "cancel":
		note = " — cancelled"
	case out.By != "tandem run":
		note = " — answered by another client"
	}
	fmt.Fprintf(r.log, "%s %s%s\n", verb, what(req), note)
	r.answeredElsewhere(p.RequestID)
}

// questionAsked answers a question of the agent as --on-ask says: on the terminal, left for
// another client, or dismissed.
func (r *runner) questionAsked(ctx context.Context, q question.Request) {
	switch {
	case r.onAsk == askPrompt && r.term != nil:
		r.enqueue(&ask{q: &q, answers: make([][]string, len(q.Questions))})
	case r.onAsk == askWait:
		fmt.Fprintf(r.log, "waiting for another client to answer the question %s: the web UI or `tandem attach` at %s, or POST %s/question/%s/reply\n",
			q.ID, r.c.URL(), r.c.URL(), q.ID)
	default:
		fmt.Fprintf(r.log, "question dismissed (--on-ask %s, nobody to ask)\n", r.onAsk)
		if err := r.c.RejectQuestion(ctx, q.ID); err != nil {
			fmt.Fprintf(r.log, "  (answered elsewhere first: %v)\n", err)
		}
	}
}

// elicitationAsked handles a form or link an MCP server asks for: tandem run does not render
// forms, so it is left for the web UI or `tandem attach` (prompt, wait), or declined.
func (r *runner) elicitationAsked(ctx context.Context, id, server, message string) {
	if r.onAsk == askWait || (r.onAsk == askPrompt && r.term != nil) {
		fmt.Fprintf(r.log, "the MCP server %s asks: %s\n  answer it in the web UI or `tandem attach` at %s (POST %s/mcp/elicitation/%s/reply)\n",
			server, message, r.c.URL(), r.c.URL(), id)
		return
	}
	fmt.Fprintf(r.log, "declined what the MCP server %s asked (--on-ask %s): %s\n", server, r.onAsk, message)
	if err := r.c.ReplyElicitation(ctx, id, "decline", nil); err != nil {
		fmt.Fprintf(r.log, "  (answered elsewhere first: %v)\n", err)
	}
}

// enqueue adds what the terminal must ask; the first in the queue is the one shown.
func (r *runner) enqueue(a *ask) {
	r.queue = append(r.queue, a)
	if len(r.queue) == 1 {
		r.show()
	}
}

// answeredElsewhere drops a request that ended from the queue; when it was the one shown, the
// terminal says so and shows the next.
func (r *runner) answeredElsewhere(id string) {
	i := slices.IndexFunc(r.queue, func(a *ask) bool { return a.id() == id })
	if i < 0 {
		return
	}
	r.queue = slices.Delete(r.queue, i, i+1)
	if i == 0 && r.term != nil {
		fmt.Fprintln(r.term.out, "\n  (answered elsewhere)")
		r.show()
	}
}

// terminalGone rejects what waits for the terminal once it is closed, and everything after it.
func (r *runner) terminalGone(ctx context.Context) {
	r.term = nil
	queue := r.queue
	r.queue = nil
	for _, a := range queue {
		if a.perm != nil {
			r.reply(ctx, *a.perm, permission.KeyReject, "rejected by tandem run: the terminal was closed")
		} else if err := r.c.RejectQuestion(ctx, a.q.ID); err != nil {
			fmt.Fprintf(r.log, "  (answered elsewhere first: %v)\n", err)
		}
	}
}

// show asks the first item of the queue on the terminal.
func (r *runner) show() {
	if len(r.queue) == 0 || r.term == nil {
		return
	}
	a, w := r.queue[0], r.term.out
	if a.q != nil {
		info := a.q.Questions[a.step]
		fmt.Fprintf(w, "? %s\n", info.Question)
		for j, o := range info.Options {
			fmt.Fprintf(w, "  %d) %s\n", j+1, o.Label)
		}
		fmt.Fprint(w, "> ")
		return
	}
	if a.choice != nil {
		fmt.Fprint(w, "  tell the agent why: ")
		return
	}
	fmt.Fprintf(w, "? allow %s\n", what(*a.perm))
	if why, ok := a.perm.Metadata["unjudged"]; ok {
		fmt.Fprintf(w, "  (it cannot be judged before it runs: %v)\n", why)
	}
	for i, d := range a.perm.Decisions {
		fmt.Fprintf(w, "  %d) %s (%s)\n", i+1, d.Label, strings.Join(d.Patterns, ", "))
	}
	fmt.Fprintf(w, "  [1-%d or a key; y = once, n = reject; Enter = reject]: ", len(a.perm.Decisions))
}

// typed takes a line typed on the terminal as the answer to what is shown.
func (r *runner) typed(ctx context.Context, line string) {
	if len(r.queue) == 0 {
		return // nothing is asked: the line means nothing
	}
	a := r.queue[0]
	line = strings.TrimSpace(line)
	switch {
	case a.q != nil:
		info := a.q.Questions[a.step]
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(info.Options) {
			line = info.Options[n-1].Label
		}
		a.answers[a.step] = []string{line}
		if a.step++; a.step < len(a.q.Questions) {
			r.show()
			return
		}
		r.queue = r.queue[1:]
		if err := r.c.ReplyQuestion(ctx, a.q.ID, a.answers); err != nil {
			fmt.Fprintf(r.log, "  (answered elsewhere first: %v)\n", err)
		}
	case a.choice != nil:
		if line == "" {
			fmt.Fprint(r.term.out, "  a message is required: ")
			return
		}
		r.queue = r.queue[1:]
		r.reply(ctx, *a.perm, a.choice.Key, line)
	default:
		c, ok := chooseDecision(a.perm.Decisions, line)
		if !ok {
			fmt.Fprintf(r.term.out, "  %q is not one of the answers\n", line)
			r.show()
			return
		}
		if c.Message {
			a.choice = &c
			r.show()
			return
		}
		r.queue = r.queue[1:]
		r.reply(ctx, *a.perm, c.Key, "")
	}
	r.show()
}

// chooseDecision reads a typed answer against a request's decisions: a number, a key, or y/n.
func chooseDecision(decisions []permission.Choice, line string) (permission.Choice, bool) {
	key := strings.ToLower(line)
	switch key {
	case "", "n", "no":
		key = permission.KeyReject
	case "y", "yes":
		key = permission.KeyOnce
	}
	if n, err := strconv.Atoi(key); err == nil && n >= 1 && n <= len(decisions) {
		return decisions[n-1], true
	}
	for _, d := range decisions {
		if d.Key == key {
			return d, true
		}
	}
	return permission.Choice{}, false
}
