package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tandem/client"
	"tandem/permission"
	"tandem/question"
	"tandem/session"
)

// runFlags are the flags of `tandem run`.
type runFlags struct {
	serve     serveFlags
	attach    string
	sessionID string
	model     string
	agent     string
	approve   string
}

// The answers `tandem run` gives approvals.
const (
	approveAsk  = "ask"  // ask on the terminal (the default when stdin is one)
	approveDeny = "deny" // reject every approval (the default otherwise)
	approveAll  = "all"  // allow each once
)

// newRunCommand is `tandem run`: one prompt, its answer streamed to stdout, for scripts and CI.
func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run PROMPT...",
		Short: "Run one prompt and print the answer",
		Long: "Send one prompt to a new session (or --session) and stream the answer to stdout; tool calls and\n" +
			"approvals are reported on stderr. Without --attach a tandem runs in-process for the one prompt.\n" +
			"Approvals are asked on the terminal, or with --approve deny (the default without a terminal) or\n" +
			"--approve all (allow each once). The exit status is 1 when the turn ended with an error.",
		Example: "  tandem run 'explain this repository'\n  tandem run --attach local --approve all 'run the tests'\n" +
			"  git diff | tandem run 'review this diff'",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt := strings.Join(args, " ")
			if !isTerminal(os.Stdin) {
				// Piped input is part of the prompt, as in `git diff | tandem run 'review this'`.
				if piped, err := io.ReadAll(os.Stdin); err == nil && len(strings.TrimSpace(string(piped))) > 0 {
					prompt += "\n\n" + string(piped)
				}
			}
			if f.approve == "" {
				f.approve = approveDeny
				if isTerminal(os.Stdin) && isTerminal(os.Stderr) {
					f.approve = approveAsk
				}
			}
			if f.approve != approveAsk && f.approve != approveDeny && f.approve != approveAll {
				return fmt.Errorf("--approve: expected ask, deny or all, got %q", f.approve)
			}
			model, err := session.ParseModel(f.model)
			if err != nil {
				return fmt.Errorf("--model: %w", err)
			}
			cmd.SilenceUsage = true
			c, stop, err := f.connect(cmd)
			if err != nil {
				return err
			}
			defer stop()
			r := &runner{c: c, out: cmd.OutOrStdout(), log: cmd.ErrOrStderr(), approve: f.approve, in: bufio.NewReader(os.Stdin)}
			failed, err := r.run(cmd.Context(), f.sessionID, session.PromptInput{Agent: f.agent, Model: model,
				Parts: []session.PartInput{{Type: "text", Text: prompt}}})
			if err != nil {
				return err
			}
			if failed {
				return errTurnFailed
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.attach, "attach", "", "use the running tandem server at this URL (\"local\": the one `tandem serve` started here)")
	fl.StringVarP(&f.sessionID, "session", "s", "", "continue this session instead of starting one")
	fl.StringVarP(&f.model, "model", "m", "", "provider/model for this prompt")
	fl.StringVar(&f.agent, "agent", "", "build (default) or plan")
	fl.StringVar(&f.approve, "approve", "", "ask, deny or all (default: ask on a terminal, deny otherwise)")
	fl.StringVar(&f.serve.dir, "dir", "", "project directory of the in-process server (default: the current directory)")
	fl.StringVar(&f.serve.dataDir, "data-dir", "", "where the in-process server's database lives")
	return cmd
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// errTurnFailed makes the exit status 1 after the turn's own error was printed.
var errTurnFailed = errors.New("the turn ended with an error")

// connect reaches the server: the one --attach names; else the local `tandem serve` when one is
// running (so the session is in its list, and two servers never share one database); else one
// started in-process for this run on an ephemeral loopback port.
func (f *runFlags) connect(cmd *cobra.Command) (*client.Client, func(), error) {
	paths, err := resolvePaths(f.serve.dataDir)
	if err != nil {
		return nil, nil, err
	}
	if cmd.Flags().Changed("attach") {
		c, err := client.Locate(f.attach, os.Getenv, paths.State)
		if err != nil {
			return nil, nil, fmt.Errorf("--attach: %w", err)
		}
		return c, func() {}, nil
	}
	hctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	if c, err := client.Locate("local", os.Getenv, paths.State); err == nil && c.Health(hctx) == nil {
		if f.serve.dir != "" {
			return nil, nil, fmt.Errorf("--dir: a tandem server is running here (%s) and serves its own directory; stop it, or pass --attach to use it", c.URL())
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "using the tandem server at %s\n", c.URL())
		return c, func() {}, nil
	}
	logger, closeLog, err := openLogger(paths, false, io.Discard, slog.LevelInfo)
	if err != nil {
		return nil, nil, err
	}
	m, err := Start(cmd.Context(), Options{Hostname: "127.0.0.1", Directory: f.serve.dir, Paths: paths,
		Logger: logger, Env: os.Getenv, Private: true})
	if err != nil {
		closeLog()
		return nil, nil, err
	}
	return client.New(m.URL(), m.Username(), m.password), func() { m.Close(); closeLog() }, nil
}

// runner drives one turn from a terminal program: it prints the answer as it streams and answers
// the turn's approvals and questions.
type runner struct {
	c       *client.Client
	out     io.Writer
	log     io.Writer
	approve string
	in      *bufio.Reader
}

// run sends the prompt and follows its events until the session is idle again; failed reports a
// turn that ended with an error.
func (r *runner) run(ctx context.Context, sessionID string, in session.PromptInput) (failed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := r.c.Events(ctx)
	// Subscribe before prompting, so no event of the turn is missed.
	if ev, err := events.Next(ctx); err != nil {
		return false, fmt.Errorf("event stream: %w", err)
	} else if ev.Type != "server.connected" {
		return false, fmt.Errorf("event stream: expected server.connected first, got %s", ev.Type)
	}
	if sessionID == "" {
		s, err := r.c.CreateSession(ctx, session.CreateInput{Agent: in.Agent, Metadata: map[string]any{"client": "tandem run"}})
		if err != nil {
			return false, err
		}
		sessionID = s.ID
	}
	if err := r.c.PromptAsync(ctx, sessionID, in); err != nil {
		return false, err
	}
	fmt.Fprintf(r.log, "session %s\n", sessionID)
	texts := map[string]bool{} // part IDs of text parts
	toolStatus := map[string]string{}
	wroteText := false
	for {
		ev, err := events.Next(ctx)
		if err != nil {
			return false, err
		}
		var p struct {
			SessionID string                `json:"sessionID"`
			Part      session.Part          `json:"part"`
			PartID    string                `json:"partID"`
			Field     string                `json:"field"`
			Delta     string                `json:"delta"`
			Error     *session.MessageError `json:"error"`
		}
		if json.Unmarshal(ev.Properties, &p) != nil {
			continue
		}
		switch ev.Type {
		case "message.part.updated":
			if p.Part.SessionID != sessionID {
				continue
			}
			switch p.Part.Type {
			case "text":
				texts[p.Part.ID] = !p.Part.Synthetic
			case "tool":
				if st := p.Part.State; st != nil && toolStatus[p.Part.ID] != st.Status {
					toolStatus[p.Part.ID] = st.Status
					r.tool(p.Part)
				}
			}
		case "message.part.delta":
			if p.SessionID == sessionID && p.Field == "text" && texts[p.PartID] {
				fmt.Fprint(r.out, p.Delta)
				wroteText = true
			}
		case "permission.asked":
			var req permission.Request
			if json.Unmarshal(ev.Properties, &req) == nil && req.SessionID == sessionID {
				r.approval(ctx, req)
			}
		case "question.asked":
			var q question.Request
			if json.Unmarshal(ev.Properties, &q) == nil && q.SessionID == sessionID {
				r.question(ctx, q)
			}
		case "session.error":
			if p.SessionID == sessionID && p.Error != nil {
				failed = true
				fmt.Fprintf(r.log, "error: %s\n", errorText(p.Error))
			}
		case "session.idle":
			if p.SessionID != sessionID {
				continue
			}
			if wroteText {
				fmt.Fprintln(r.out)
			}
			msgs, err := r.c.Messages(ctx, sessionID)
			if err != nil {
				return failed, err
			}
			if n := len(msgs); n > 0 && msgs[n-1].Info.Error != nil {
				if !failed {
					fmt.Fprintf(r.log, "error: %s\n", errorText(msgs[n-1].Info.Error))
				}
				failed = true
			}
			return failed, nil
		}
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

// approval answers one approval as --approve says; "ask" asks on the terminal.
func (r *runner) approval(ctx context.Context, req permission.Request) {
	what := strings.Join(req.Patterns, " ")
	if c, ok := req.Metadata["command"].(string); ok && c != "" {
		what = c
	}
	reply, message := permission.Reject, "rejected by tandem run (--approve deny)"
	switch r.approve {
	case approveAll:
		reply, message = permission.Once, ""
	case approveAsk:
		fmt.Fprintf(r.log, "? allow %s: %s  [y]es once / [a]lways / [N]o: ", req.Permission, what)
		line, _ := r.in.ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			reply, message = permission.Once, ""
		case "a", "always":
			reply, message = permission.Always, ""
		default:
			message = "rejected on the terminal"
		}
	}
	if err := r.c.ReplyPermission(ctx, req.ID, reply, message); err != nil {
		fmt.Fprintf(r.log, "  (answered elsewhere first: %v)\n", err)
		return
	}
	fmt.Fprintf(r.log, "%s %s: %s\n", map[permission.Reply]string{permission.Once: "allowed", permission.Always: "allowed always", permission.Reject: "rejected"}[reply], req.Permission, what)
}

// question answers the agent's questions on the terminal, or dismisses them without one.
func (r *runner) question(ctx context.Context, q question.Request) {
	if r.approve != approveAsk {
		fmt.Fprintln(r.log, "question dismissed (no terminal to ask on)")
		if err := r.c.RejectQuestion(ctx, q.ID); err != nil {
			fmt.Fprintf(r.log, "  (answered elsewhere first: %v)\n", err)
		}
		return
	}
	answers := make([][]string, len(q.Questions))
	for i, info := range q.Questions {
		fmt.Fprintf(r.log, "? %s\n", info.Question)
		for j, o := range info.Options {
			fmt.Fprintf(r.log, "  %d. %s\n", j+1, o.Label)
		}
		fmt.Fprint(r.log, "> ")
		line, _ := r.in.ReadString('\n')
		line = strings.TrimSpace(line)
		var n int
		if _, err := fmt.Sscanf(line, "%d", &n); err == nil && n >= 1 && n <= len(info.Options) {
			line = info.Options[n-1].Label
		}
		answers[i] = []string{line}
	}
	if err := r.c.ReplyQuestion(ctx, q.ID, answers); err != nil {
		fmt.Fprintf(r.log, "  (answered elsewhere first: %v)\n", err)
	}
}
