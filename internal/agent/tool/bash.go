package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/tandem-dev/tandem/internal/infra/process"
)

const (
	// progressEvery throttles streamed output so a chatty command does not flood the event bus.
	progressEvery = 50 * time.Millisecond
	// termGrace is how long a timed-out command may clean up after SIGTERM before SIGKILL.
	termGrace = time.Second
	// drainGrace bounds the wait for the output pipe to close after the shell exits, in case a
	// process that left the group (setsid) still holds it open.
	drainGrace = 500 * time.Millisecond
	// groupGrace bounds the wait for killed group members to be reaped, so that none is still
	// exiting when Run returns. It only matters where no init process reaps orphans.
	groupGrace = time.Second
)

// Bash runs a shell command in the session's directory. The zero value uses the default Options.
type Bash struct{ opts Options }

// NewBash makes the bash tool with its own timeouts, output limit and shell.
func NewBash(opts Options) *Bash { return &Bash{opts: opts.withDefaults()} }

type bashInput struct {
	Command     string  `json:"command"`
	Timeout     flexInt `json:"timeout"`
	Workdir     string  `json:"workdir"`
	Description string  `json:"description"`
}

func (*Bash) Name() string { return "bash" }

func (b *Bash) Description() string {
	opts := b.opts.withDefaults()
	return fmt.Sprintf(`Runs a shell command (%s) in the project directory and returns its combined stdout and stderr.

- Use workdir to run in a subdirectory instead of "cd dir && ...".
- timeout is in milliseconds: default %d, at most %d. On timeout the whole process group is killed.
- Output beyond %d lines or %d bytes keeps its beginning and end with a marker in between.
- A non-zero exit status is reported in the output; it is not a tool failure.
- Commands do not get a terminal and cannot read input; background processes are killed when the command ends.
- Prefer the read, list, glob, grep, edit and write tools over cat, ls, find, grep, sed and echo redirection.`,
		opts.Shell.String(), opts.BashTimeout.Milliseconds(), opts.BashMaxTimeout.Milliseconds(), opts.OutputLines, opts.OutputLimit)
}

func (*Bash) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command to execute"},
    "timeout": {"type": "number", "description": "Optional timeout in milliseconds"},
    "workdir": {"type": "string", "description": "Directory to run the command in, relative to the project directory or absolute. Defaults to the project directory."},
    "description": {"type": "string", "description": "Clear, concise description of what this command does in 5-10 words, e.g. \"Lists files in current directory\""}
  },
  "required": ["command", "description"],
  "additionalProperties": false
}`)
}

func (b *Bash) Run(ctx context.Context, call *Call) (Result, error) {
	opts := b.opts.withDefaults()
	call = guard(call, opts)
	var in bashInput
	if err := decodeInput("bash", call.Input, &in); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return Result{}, invalid("The bash tool needs a non-empty command.")
	}
	timeout := opts.BashTimeout
	if in.Timeout.Set {
		switch {
		case in.Timeout.Value < 0:
			return Result{}, invalid("Invalid timeout %d: the timeout is in milliseconds and must be positive.", in.Timeout.Value)
		case in.Timeout.Value > 0:
			timeout = min(time.Duration(in.Timeout.Value)*time.Millisecond, opts.BashMaxTimeout)
		}
	}
	where, err := locate(ctx, call, in.Workdir, true)
	if err != nil {
		return Result{}, err
	}
	if info, err := os.Stat(where.Abs); err != nil || !info.IsDir() {
		return Result{}, invalid("workdir %s is not an existing directory.", where.Abs)
	}
	writes, err := askForCommand(ctx, call, opts.Shell, in.Command, where.Abs)
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err := writesStillLead(writes); err != nil {
		return Result{}, err
	}
	if call.Terminals != nil {
		if res, ok, err := runInClientTerminal(ctx, call, opts, in, where.Abs, timeout); ok || err != nil {
			return res, err
		}
	}
	return runCommand(ctx, call, opts, in, where.Abs, timeout)
}

// runInClientTerminal runs the command in the client's terminal, which the client shows live; the
// result reads as tandem's own run would.
func runInClientTerminal(ctx context.Context, call *Call, opts Options, in bashInput, cwd string, timeout time.Duration) (Result, bool, error) {
	var terminal string
	started := func(id string) {
		terminal = id
		if call.Progress != nil {
			call.Progress(Progress{Title: in.Command, Metadata: map[string]any{"terminalId": id, "description": in.Description}})
		}
	}
	tr, ok, err := call.Terminals.RunInTerminal(ctx, opts.Shell, in.Command, cwd, timeout, opts.OutputLimit, started)
	if !ok {
		return Result{}, false, err
	}
	var exit any
	if tr.ExitCode != nil {
		exit = *tr.ExitCode
	}
	meta := map[string]any{"output": tr.Output, "exit": exit, "truncated": tr.Truncated, "description": in.Description, "terminalId": terminal}
	res := Result{Title: in.Command, Metadata: meta, Output: tr.Output}
	var note string
	switch {
	case ctx.Err() != nil:
		note = "(Command was aborted)"
	case tr.TimedOut:
		note = fmt.Sprintf("(Command timed out after %d ms; the terminal was killed)", timeout.Milliseconds())
	case tr.ExitCode == nil && tr.Signal != "":
		note = "(Command was terminated by " + tr.Signal + ")"
	case tr.ExitCode != nil && *tr.ExitCode != 0:
		note = fmt.Sprintf("(Command exited with code %d)", *tr.ExitCode)
	}
	if note != "" {
		if res.Output != "" {
			res.Output += "\n\n"
		}
		res.Output += note
	}
	if res.Output == "" {
		res.Output = "(no output)"
	}
	if ctx.Err() != nil {
		return res, true, ctx.Err()
	}
	return res, true, err
}

// run starts the command in its own process group and supervises it until the group is gone.
func runCommand(ctx context.Context, call *Call, opts Options, in bashInput, cwd string, timeout time.Duration) (Result, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	cmd := exec.Command(opts.Shell.Path, opts.Shell.Args(in.Command)...)
	cmd.Env = opts.Shell.Env(os.Environ())
	cmd.Dir = cwd
	cmd.Stdout = w
	cmd.Stderr = w
	process.OwnGroup(cmd)
	if err := opts.start(ctx, call, cmd); err != nil {
		_ = r.Close()
		_ = w.Close()
		return Result{}, fmt.Errorf("starting %s: %w", opts.Shell.Path, err)
	}
	_ = w.Close()
	pgid := cmd.Process.Pid

	out := newCapture(opts.OutputLimit, opts.OutputLines)
	// The part's live output starts empty and grows by what the command prints, as it prints it.
	report := func() {
		if call.Progress == nil {
			return
		}
		fresh, skipped := out.Take()
		if fresh != "" || skipped > 0 {
			call.Progress(Progress{Output: fresh, Skipped: skipped})
		}
	}
	if call.Progress != nil {
		call.Progress(Progress{Title: in.Command, Metadata: map[string]any{"output": "", "description": in.Description}})
	}
	wrote := make(chan struct{}, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 32*1024)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				out.Write(buf[:n])
				select {
				case wrote <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var (
		aborted, timedOut bool
		throttle, grace   <-chan time.Time
		lastReport        = time.Now()
		done              = ctx.Done()
		expired           = deadline.C
	)
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-wrote:
			if since := time.Since(lastReport); since >= progressEvery {
				report()
				lastReport = time.Now()
			} else if throttle == nil {
				throttle = time.After(progressEvery - since)
			}
		case <-throttle:
			throttle = nil
			report()
			lastReport = time.Now()
		case <-expired:
			expired = nil
			timedOut = true
			process.TerminateGroup(pgid)
			grace = time.After(termGrace)
		case <-grace:
			grace = nil
			process.KillGroup(pgid)
		case <-done:
			done = nil
			aborted = true
			process.KillGroup(pgid)
		}
	}
	// The shell is gone; whatever it left running in its group goes too.
	process.KillGroup(pgid)
	select {
	case <-drained:
	case <-time.After(drainGrace):
		_ = r.Close()
		<-drained
	}
	_ = r.Close()
	awaitGroupGone(pgid, groupGrace)
	report()

	text, truncated := out.String()
	var exit any
	state := cmd.ProcessState
	if state.Exited() {
		exit = state.ExitCode()
	}
	meta := map[string]any{"output": text, "exit": exit, "truncated": truncated, "description": in.Description}
	res := Result{Title: in.Command, Metadata: meta}

	var notes []string
	switch {
	case aborted:
		notes = append(notes, "(Command was aborted)")
	case timedOut:
		notes = append(notes, fmt.Sprintf("(Command timed out after %d ms; its process group was killed)", timeout.Milliseconds()))
	case !state.Exited():
		notes = append(notes, fmt.Sprintf("(Command was terminated by %s)", signalName(state)))
	case state.ExitCode() != 0:
		notes = append(notes, fmt.Sprintf("(Command exited with code %d)", state.ExitCode()))
	}
	if note := opts.refusalNote(call, text); note != "" {
		notes = append(notes, note)
		meta["sandboxRefused"] = true
	}
	res.Output = text
	if len(notes) > 0 {
		if res.Output != "" {
			res.Output += "\n\n"
		}
		res.Output += strings.Join(notes, "\n")
	}
	if res.Output == "" {
		res.Output = "(no output)"
	}
	if aborted {
		return res, ctx.Err()
	}
	return res, nil
}

// awaitGroupGone waits until no process of the group is still running. SIGKILL has been sent, but
// delivery and exit take a moment; returning earlier would let a caller observe a process that is
// still tearing down. Zombies count as gone: where no init reaps orphans they never disappear.
func awaitGroupGone(pgid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for delay := 200 * time.Microsecond; process.GroupRunning(pgid) && time.Now().Before(deadline); delay = min(2*delay, 20*time.Millisecond) {
		time.Sleep(delay)
	}
}

func signalName(state *os.ProcessState) string {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return "a signal"
}

// freshKeep bounds the live output waiting to be taken: a command printing faster than it is
// streamed loses the oldest of it, counted, not the newest.
const freshKeep = 64 << 10

// capture keeps the beginning and the end of a stream within a byte and a line limit, and what
// arrived since it was last taken, for the part's live output.
type capture struct {
	mu        sync.Mutex
	headCap   int
	tailCap   int
	headLines int
	tailLines int
	head      []byte
	headNL    int // newlines in head
	tail      []byte
	total     int
	fresh     []byte
	skipped   int // bytes dropped from the front of fresh
}

func newCapture(limit, lines int) *capture {
	return &capture{headCap: limit / 2, tailCap: limit - limit/2, headLines: lines / 2, tailLines: lines - lines/2}
}

func (c *capture) Write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += len(p)
	c.fresh = append(c.fresh, p...)
	if over := len(c.fresh) - freshKeep; over > 0 {
		c.skipped += over
		c.fresh = c.fresh[:copy(c.fresh, c.fresh[over:])]
	}
	if room := c.headCap - len(c.head); room > 0 && c.headNL < c.headLines {
		n := min(room, len(p))
		for i := 0; i < n; {
			j := bytes.IndexByte(p[i:n], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			if c.headNL++; c.headNL == c.headLines {
				n = i
			}
		}
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > c.tailCap {
		c.tail = append(c.tail[:0:0], c.tail[len(c.tail)-c.tailCap:]...)
	}
}

// Take returns what arrived since the last Take and how many bytes before that it leaves out.
func (c *capture) Take() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fresh, skipped := string(c.fresh), c.skipped
	c.fresh, c.skipped = c.fresh[:0], 0
	return fresh, skipped
}

// String returns what was kept and whether anything was dropped from the middle.
func (c *capture) String() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := lastLines(c.tail, c.tailLines)
	kept := len(c.head) + len(tail)
	if kept == c.total {
		return string(c.head) + string(tail), false
	}
	head := strings.ToValidUTF8(trimPartialRuneEnd(c.head), "")
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n\n... (%d bytes of output truncated) ...\n\n%s", head, c.total-kept, tail), true
}

// lastLines returns b's last n lines (a final newline ends the last line, it does not start one).
func lastLines(b []byte, n int) []byte {
	if n <= 0 {
		return b[len(b):]
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for ; ; n-- {
		j := bytes.LastIndexByte(b[:end], '\n')
		if j < 0 {
			return b
		}
		if n == 1 {
			return b[j+1:]
		}
		end = j
	}
}

func trimPartialRuneEnd(b []byte) string {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return string(b[:len(b)-i])
			}
			break
		}
	}
	return string(b)
}
