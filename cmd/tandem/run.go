package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/door/run"
)

// newRunCommand is `tandem run`: one prompt, its answer streamed to stdout, for scripts and CI.
func newRunCommand() *cobra.Command {
	var o run.Options
	var dataDir string
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
				return run.UsageError("a prompt is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := app.ResolvePaths(dataDir)
			if err != nil {
				return err
			}
			o.Prompt, o.AttachSet, o.StateDir = strings.Join(args, " "), cmd.Flags().Changed("attach"), paths.State
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			o.Start = func() (*client.Client, bool, func(), error) {
				return app.StartPrivate(cmd.Context(), paths, o.Dir, cmd.ErrOrStderr())
			}
			return run.Prompt(cmd.Context(), o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return run.UsageError("%v", err) })
	fl := cmd.Flags()
	fl.StringVar(&o.Attach, "attach", "", "use the running tandem server at this URL (\"local\": the one `tandem serve` started here)")
	fl.StringVarP(&o.SessionID, "session", "s", "", "continue this session instead of starting one")
	fl.StringVarP(&o.Model, "model", "m", "", "provider/model for this prompt")
	fl.StringVar(&o.Variant, "variant", "", "the model's variant for this prompt (\"high\": think harder; GET /provider lists them)")
	fl.StringVar(&o.Agent, "agent", "", "build (default) or plan")
	fl.StringVar(&o.OnAsk, "on-ask", "", "prompt, reject, allow-within-rules or wait (default: prompt on a terminal, reject otherwise)")
	fl.StringVar(&o.Format, "format", "text", "text (the answer on stdout) or json (one event per line, then the result)")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "abort the turn and exit with status 124 after this long")
	fl.StringVar(&o.Dir, "dir", "", "project directory of the in-process server (default: the current directory)")
	fl.StringVar(&dataDir, "data-dir", "", "where the in-process server's database lives")
	return cmd
}
