// Package run is `tandem run`: one prompt sent to a tandem server, its answer streamed to stdout,
// what it asks answered on the terminal or as --on-ask says, and an exit status for scripts.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// The --on-ask strategies: what `tandem run` does with an approval (or a question, or an MCP form)
// that the permission rules leave to a person.
const (
	askPrompt      = "prompt"             // ask on the terminal; without one, reject
	askReject      = "reject"             // reject at once; a refusal makes the exit status 3
	askWithinRules = "allow-within-rules" // only what the rules allow runs: reject at once, and that is no failure
	askWait        = "wait"               // leave it pending for another client, until --timeout
)

// The exit statuses of `tandem run`, documented in its help.
const (
	ExitOK          = 0   // the turn completed
	ExitFailed      = 1   // the turn ended with an error, or the server could not be reached
	ExitUsage       = 2   // a flag or argument is wrong; nothing was sent
	ExitRefused     = 3   // the turn completed, but an approval it asked for was refused or went unanswered
	ExitTimeout     = 124 // --timeout passed: the turn was aborted (as timeout(1))
	ExitInterrupted = 130 // interrupted (SIGINT or SIGTERM): the turn was aborted
)

// ExitError ends the program with Code; an empty message prints nothing more.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// UsageError is a wrong flag or argument of `tandem run`: nothing was sent.
func UsageError(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Msg: fmt.Sprintf(format, args...) + "\nRun 'tandem run --help' for usage."}
}

// Options are one `tandem run`: its prompt, its flags and where it writes.
type Options struct {
	Prompt    string
	SessionID string // continue this session instead of starting one
	Model     string // provider/model
	Variant   string // the model's variant ("high": think harder)
	Agent     string
	OnAsk     string // prompt, reject, allow-within-rules or wait; "" picks by the terminal
	Format    string // text or json
	Timeout   time.Duration
	// Attach is the server --attach names (AttachSet: the flag was given); StateDir holds the
	// state file of the local server; Dir is --dir, which only an in-process server can serve.
	Attach    string
	AttachSet bool
	StateDir  string
	Dir       string
	// Start starts the run's own server when no other one is used (the one that owns the data
	// directory, or one in-process); reachable says whether another client could answer there.
	// It lives as long as the command, not the run's timeout: a run that times out still aborts
	// its turn there.
	Start          func() (c *client.Client, reachable bool, stop func(), err error)
	Stdout, Stderr io.Writer
}

// Prompt sends one prompt and streams its answer as o says; the error is an *ExitError with the
// exit status when the turn did not complete cleanly.
func Prompt(ctx context.Context, o Options) error {
	if o.Format != "text" && o.Format != "json" {
		return UsageError("--format: expected text or json, got %q", o.Format)
	}
	if o.Timeout <= 0 {
		return UsageError("--timeout: must be positive, got %s", o.Timeout)
	}
	term := openTerminal()
	if o.OnAsk == "" {
		o.OnAsk = askReject
		if term != nil && isTerminal(os.Stderr) {
			o.OnAsk = askPrompt
		}
	}
	switch o.OnAsk {
	case askPrompt, askReject, askWithinRules, askWait:
	default:
		return UsageError("--on-ask: expected prompt, reject, allow-within-rules or wait, got %q", o.OnAsk)
	}
	if o.OnAsk != askPrompt && term != nil {
		term.close()
		term = nil
	}
	model, err := session.ParseModel(o.Model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	// The timeout bounds everything from here: reading stdin, reaching the server, the turn, every wait.
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, errRunTimedOut)
	defer cancel()
	prompt := o.Prompt
	if !isTerminal(os.Stdin) {
		// Piped input is part of the prompt, as in `git diff | tandem run 'review this'`.
		piped, err := readAll(ctx, os.Stdin)
		if err != nil {
			return timedOut(ctx, o.Timeout, "stdin was still open", err)
		}
		if len(strings.TrimSpace(piped)) > 0 {
			prompt += "\n\n" + piped
		}
	}
	c, reachable, stop, err := o.connect(ctx)
	if err != nil {
		return timedOut(ctx, o.Timeout, "no server answered", err)
	}
	defer stop()
	if o.OnAsk == askWait && !reachable {
		return UsageError("--on-ask wait: no other client can answer: this run's own server has a generated password. " +
			"Start `tandem serve` first (run uses it), pass --attach, or set TANDEM_SERVER_PASSWORD")
	}
	r := &runner{c: c, out: o.Stdout, log: o.Stderr, json: o.Format == "json", onAsk: o.OnAsk, timeout: o.Timeout}
	if term != nil {
		defer term.close()
		r.term = term
		r.lines = term.lines()
	} else if o.OnAsk == askPrompt {
		fmt.Fprintln(r.log, "--on-ask prompt: there is no terminal to ask on, so approvals are rejected")
	}
	res, err := r.run(ctx, o.SessionID, session.PromptInput{Agent: o.Agent, Model: model, Variant: o.Variant,
		Parts: []session.PartInput{{Type: "text", Text: prompt}}})
	if err != nil {
		return err
	}
	if res.ExitCode != ExitOK {
		return &ExitError{Code: res.ExitCode, Msg: res.summary()}
	}
	return nil
}

// errRunTimedOut is the cause of the context of a run that reached its --timeout.
var errRunTimedOut = errors.New("--timeout passed")

// timedOut turns err into the timeout's exit status when the run's --timeout is what ended it, or
// the interruption's when a signal did.
func timedOut(ctx context.Context, timeout time.Duration, what string, err error) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errRunTimedOut):
		return &ExitError{Code: ExitTimeout, Msg: fmt.Sprintf("%s when --timeout %s passed", what, timeout)}
	case cause != nil:
		return &ExitError{Code: ExitInterrupted, Msg: "interrupted"}
	}
	return err
}

// readAll reads r to its end, or until ctx ends (a pipe nobody closes must not hang the run).
func readAll(ctx context.Context, r io.Reader) (string, error) {
	done := make(chan struct{})
	var data []byte
	var err error
	go func() {
		defer close(done)
		data, err = io.ReadAll(r)
	}()
	select {
	case <-done:
		return string(data), err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// isTerminal reports whether f is a terminal (not merely a character device such as /dev/null).
func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd())
}

// connect reaches the server: the one --attach names; else the local `tandem serve` when one is
// running (so the session is in its list, and two servers never share one database); else the
// run's own (o.Start). reachable says whether another client could answer what the run leaves
// pending.
func (o *Options) connect(ctx context.Context) (c *client.Client, reachable bool, stop func(), err error) {
	if o.AttachSet {
		c, err := client.Locate(o.Attach, os.Getenv, o.StateDir)
		if err != nil {
			return nil, false, nil, fmt.Errorf("--attach: %w", err)
		}
		// A server that is not there is said at once, in one line, instead of after the event
		// stream's reconnects.
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := c.Health(hctx); err != nil && !errors.As(err, new(*client.Error)) {
			return nil, false, nil, fmt.Errorf("--attach: no tandem server answers at %s (%v)", c.URL(), rootCause(err))
		}
		return c, true, func() {}, nil
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if c, err := client.Locate("local", os.Getenv, o.StateDir); err == nil && c.Health(hctx) == nil {
		if o.Dir != "" {
			return nil, false, nil, fmt.Errorf("--dir: a tandem server is running here (%s) and serves its own directory; stop it, or pass --attach to use it", c.URL())
		}
		fmt.Fprintf(o.Stderr, "using the tandem server at %s\n", c.URL())
		return c, true, func() {}, nil
	}
	return o.Start()
}

// rootCause is the innermost error of a chain, e.g. "connect: connection refused" of a request
// that found no server.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
