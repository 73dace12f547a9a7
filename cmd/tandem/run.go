package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// runFlags are the flags of `tandem run`.
type runFlags struct {
	serve     serveFlags
	attach    string
	sessionID string
	model     string
	agent     string
	onAsk     string
	format    string
	timeout   time.Duration
}

// The --on-ask strategies: what `tandem run` does with an approval (or a question, or an MCP form)
// that the permission rules leave to a person.
const (
	askPrompt      = "prompt"             // ask on the terminal; without one, reject
	askReject      = "reject"             // reject at once; a refusal makes the exit status 3
	askWithinRules = "allow-within-rules" // only what the rules allow runs: reject at once, and that is no failure
	askWait        = "wait"               // leave it pending for another client, until --timeout
)

// The exit statuses of `tandem run`.
const (
	exitOK          = 0   // the turn completed
	exitFailed      = 1   // the turn ended with an error, or the server could not be reached
	exitUsage       = 2   // a flag or argument is wrong; nothing was sent
	exitRefused     = 3   // the turn completed, but an approval it asked for was refused or went unanswered
	exitTimeout     = 124 // --timeout passed: the turn was aborted (as timeout(1))
	exitInterrupted = 130 // interrupted (SIGINT or SIGTERM): the turn was aborted
)

// exitError ends the program with code; an empty message prints nothing more.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...) + "\nRun 'tandem run --help' for usage."}
}

// newRunCommand is `tandem run`: one prompt, its answer streamed to stdout, for scripts and CI.
func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run PROMPT...",
		Short: "Run one prompt and print the answer",
		Long: `Send one prompt to a new session (or --session) and stream the answer to stdout; the session,
tool calls and approvals are reported on stderr. With --format json, stdout carries the turn's
events instead, one JSON object per line, and a last {"type":"result",...} line.

Without --attach, tandem run uses the tandem server running here (tandem serve), else the tandem
that owns its data directory (--data-dir), or else starts one in-process for this one prompt.

--on-ask decides what happens when the permission rules leave an approval to a person:
  prompt              ask on the terminal (the default when there is one); without one, reject
  reject              reject it at once (the default without a terminal)
  allow-within-rules  only what the rules and grants allow runs (the server allows that without
                      asking); the rest is rejected at once, and that is not a failure
  wait                leave it pending for another client (web UI, tandem attach, curl) until --timeout
Questions the agent asks and forms MCP servers ask for follow the same strategy.

Exit status: 0 the turn completed; 1 it ended with an error (or the server could not be reached);
2 usage error; 3 it completed but an approval was refused or went unanswered (not with
allow-within-rules); 124 --timeout passed and the turn was aborted; 130 interrupted.`,
		Example: "  tandem run 'explain this repository'\n  tandem run --attach local --on-ask wait 'run the tests'\n" +
			"  git diff | tandem run 'review this diff'\n  tandem run --format json --timeout 5m 'fix the build' | jq -c 'select(.type==\"result\")'",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("a prompt is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt := strings.Join(args, " ")
			if f.format != "text" && f.format != "json" {
				return usageError("--format: expected text or json, got %q", f.format)
			}
			if f.timeout <= 0 {
				return usageError("--timeout: must be positive, got %s", f.timeout)
			}
			term := openTerminal()
			if f.onAsk == "" {
				f.onAsk = askReject
				if term != nil && isTerminal(os.Stderr) {
					f.onAsk = askPrompt
				}
			}
			switch f.onAsk {
			case askPrompt, askReject, askWithinRules, askWait:
			default:
				return usageError("--on-ask: expected prompt, reject, allow-within-rules or wait, got %q", f.onAsk)
			}
			if f.onAsk != askPrompt && term != nil {
				term.close()
				term = nil
			}
			model, err := session.ParseModel(f.model)
			if err != nil {
				return fmt.Errorf("--model: %w", err)
			}
			cmd.SilenceUsage = true
			// The timeout bounds everything from here: reading stdin, reaching the server, the turn, every wait.
			ctx, cancel := context.WithTimeoutCause(cmd.Context(), f.timeout, errRunTimedOut)
			defer cancel()
			if !isTerminal(os.Stdin) {
				// Piped input is part of the prompt, as in `git diff | tandem run 'review this'`.
				piped, err := readAll(ctx, os.Stdin)
				if err != nil {
					return timedOut(ctx, f.timeout, "stdin was still open", err)
				}
				if len(strings.TrimSpace(piped)) > 0 {
					prompt += "\n\n" + piped
				}
			}
			c, reachable, stop, err := f.connect(ctx, cmd)
			if err != nil {
				return timedOut(ctx, f.timeout, "no server answered", err)
			}
			defer stop()
			if f.onAsk == askWait && !reachable {
				return usageError("--on-ask wait: no other client can answer: this run's own server has a generated password. " +
					"Start `tandem serve` first (run uses it), pass --attach, or set TANDEM_SERVER_PASSWORD")
			}
			r := &runner{c: c, out: cmd.OutOrStdout(), log: cmd.ErrOrStderr(), json: f.format == "json", onAsk: f.onAsk, timeout: f.timeout}
			if term != nil {
				defer term.close()
				r.term = term
				r.lines = term.lines()
			} else if f.onAsk == askPrompt {
				fmt.Fprintln(r.log, "--on-ask prompt: there is no terminal to ask on, so approvals are rejected")
			}
			res, err := r.run(ctx, f.sessionID, api.PromptInput{Agent: f.agent, Model: model,
				Parts: []api.PartInput{{Type: "text", Text: prompt}}})
			if err != nil {
				return err
			}
			if res.ExitCode != exitOK {
				return &exitError{code: res.ExitCode, msg: res.summary()}
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	fl := cmd.Flags()
	fl.StringVar(&f.attach, "attach", "", "use the running tandem server at this URL (\"local\": the one `tandem serve` started here)")
	fl.StringVarP(&f.sessionID, "session", "s", "", "continue this session instead of starting one")
	fl.StringVarP(&f.model, "model", "m", "", "provider/model for this prompt")
	fl.StringVar(&f.agent, "agent", "", "build (default) or plan")
	fl.StringVar(&f.onAsk, "on-ask", "", "prompt, reject, allow-within-rules or wait (default: prompt on a terminal, reject otherwise)")
	fl.StringVar(&f.format, "format", "text", "text (the answer on stdout) or json (one event per line, then the result)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Minute, "abort the turn and exit with status 124 after this long")
	fl.StringVar(&f.serve.dir, "dir", "", "project directory of the in-process server (default: the current directory)")
	fl.StringVar(&f.serve.dataDir, "data-dir", "", "where the in-process server's database lives")
	return cmd
}

// errRunTimedOut is the cause of the context of a run that reached its --timeout.
var errRunTimedOut = errors.New("--timeout passed")

// timedOut turns err into the timeout's exit status when the run's --timeout is what ended it, or
// the interruption's when a signal did.
func timedOut(ctx context.Context, timeout time.Duration, what string, err error) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errRunTimedOut):
		return &exitError{code: exitTimeout, msg: fmt.Sprintf("%s when --timeout %s passed", what, timeout)}
	case cause != nil:
		return &exitError{code: exitInterrupted, msg: "interrupted"}
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
// running (so the session is in its list, and two servers never share one database); else one
// started in-process for this run on an ephemeral loopback port. reachable says whether another
// client could answer what the run leaves pending: false for an in-process server whose password
// was generated.
func (f *runFlags) connect(ctx context.Context, cmd *cobra.Command) (c *client.Client, reachable bool, stop func(), err error) {
	paths, err := resolvePaths(f.serve.dataDir)
	if err != nil {
		return nil, false, nil, err
	}
	if cmd.Flags().Changed("attach") {
		c, err := client.Locate(f.attach, os.Getenv, paths.State)
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
	if c, err := client.Locate("local", os.Getenv, paths.State); err == nil && c.Health(hctx) == nil {
		if f.serve.dir != "" {
			return nil, false, nil, fmt.Errorf("--dir: a tandem server is running here (%s) and serves its own directory; stop it, or pass --attach to use it", c.URL())
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "using the tandem server at %s\n", c.URL())
		return c, true, func() {}, nil
	}
	logger, closeLog, err := openLogger(paths, false, io.Discard, slog.LevelInfo)
	if err != nil {
		return nil, false, nil, err
	}
	// The server lives as long as the command, not the run's timeout: a run that times out still
	// aborts its turn there. When another process owns the data directory, the run uses that one.
	m, owner, err := startOrUse(cmd.Context(), Options{Hostname: "127.0.0.1", Directory: f.serve.dir, Paths: paths,
		Logger: logger, Env: os.Getenv, Private: true}, "tandem run", cmd.ErrOrStderr())
	if err != nil {
		closeLog()
		return nil, false, nil, err
	}
	if owner != nil {
		closeLog()
		if f.serve.dir != "" {
			return nil, false, nil, fmt.Errorf("--dir: the tandem server at %s owns the data directory and serves its own directory; stop it, or pass --attach to use it", owner.URL())
		}
		return owner, true, func() {}, nil
	}
	return client.New(m.URL(), m.Username(), m.password), !m.generated, func() { m.Close(); closeLog() }, nil
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
