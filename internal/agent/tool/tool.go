// Package tool holds the built-in tools the agent calls: bash, read, write, edit, multiedit,
// apply_patch, list, glob, grep, webfetch, todowrite and todoread. Their inputs, outputs and metadata use OpenCode's names so that clients
// written for OpenCode render tandem's tool parts unchanged.
//
// Every tool asks its Call's Gate before it acts, and a path that leaves the session's directory is
// asked for separately as "external_directory". A refusal ends the call before anything happens, and
// its message goes back to the model unchanged.
package tool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/shelljudge"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// Tool is one capability the model can call by name.
type Tool interface {
	Name() string
	Description() string
	Parameters() json.RawMessage // JSON Schema of the input object
	Run(ctx context.Context, call *Call) (Result, error)
}

// Call is everything a tool needs for one invocation; the prompt loop builds one per tool call.
type Call struct {
	ID        string // the model's tool call ID
	SessionID string
	MessageID string
	Agent     string
	Dir       string // the session's directory: relative paths resolve here
	Input     json.RawMessage
	Gate      Gate           // ask before acting; never nil when Run is called
	Progress  func(Progress) // live updates for the running tool part; may be nil
	Todos     TodoStore      // may be nil for tools that do not need it
	// Files is a client's view of text files (an editor's unsaved buffers, over ACP) that read,
	// write and edit go through; nil: the disk.
	Files Files
	// Terminals runs bash's commands in a client's terminals (an editor's, over ACP, so the person
	// watches them live); nil: tandem runs them.
	Terminals Terminals
	// ParentSessionID and RootSessionID, in a subagent's session, name the session that started it
	// and the top of that line: what the call asks a person carries them, so it is shown there.
	ParentSessionID, RootSessionID string
}

// Terminals runs a command in a client's terminal until it exits, the timeout passes (the client
// kills it) or ctx ends (likewise); started receives the terminal's ID once it runs. ok=false says
// the client takes no part, and tandem runs the command itself.
type Terminals interface {
	RunInTerminal(ctx context.Context, shell shelljudge.Shell, command, cwd string, timeout time.Duration, outputLimit int, started func(terminalID string)) (res TerminalResult, ok bool, err error)
}

// TerminalResult is how a command in a client's terminal ended.
type TerminalResult struct {
	Output    string
	Truncated bool
	ExitCode  *int   // nil when a signal ended it
	Signal    string // the signal's name, when one did
	TimedOut  bool
}

// Files reads and writes text files through a client. ok=false says the client takes no part in
// that call, and the tool uses the disk.
type Files interface {
	ReadText(ctx context.Context, path string) (text string, ok bool, err error)
	WriteText(ctx context.Context, path, content string) (ok bool, err error)
}

// Gate is the one permission checkpoint. nil error = go ahead. A non-nil error means refused; its
// message is what the model is told, so tools return it unchanged from Run.
type Gate interface {
	Check(ctx context.Context, ask Ask) error
}

// Ask is one permission question, shaped like OpenCode's PermissionRequest so the permission package
// can publish it as is.
type Ask struct {
	Permission string         // "bash", "edit", "read", "external_directory", "list", "glob", "grep", "todowrite", ...
	Patterns   []string       // what is asked for now (the command; the path relative to Dir)
	Always     []string       // patterns an "always" reply would remember (bash: "echo *"; edit: the path)
	Metadata   map[string]any // bash: {"command"}; edit/write: {"filepath", "diff"}
	// Unjudged lists why the action cannot be judged before it runs (bash: eval, sudo, a computed
	// command name; a write to tandem's own configuration). Such an ask is never satisfied by a
	// remembered grant: only the user's own configuration can allow it, otherwise a person is asked.
	Unjudged []string
	// With are further permissions the same action needs, judged in this one request (bash: edit,
	// and external_directory outside the project, for each file a redirection writes). Each is
	// decided by the rules and remembered grants as an ask of its own would be, but never asked on
	// its own: a deny refuses the action, one that would ask makes this request asked, and a lasting
	// answer to this request remembers only Always.
	With []Need
}

// Need is one permission an Ask needs besides its own.
type Need struct {
	Permission string
	Pattern    string
	// Unjudged, when set, says why no remembered grant satisfies this need (a write to
	// configuration): only the user's own rules can allow it, otherwise a person is asked.
	Unjudged string
}

// Progress is a live update of a running tool part (bash streams its output this way). Nil Metadata
// and an empty Title leave the part's as they were.
type Progress struct {
	Title    string
	Metadata map[string]any
	// Output is what the tool printed since its previous Progress, appended to the part's live
	// metadata.output (a Metadata with an "output" key starts it; its value is ignored). Skipped
	// counts the bytes printed before Output that it leaves out, too many to stream.
	Output  string
	Skipped int
}

// Result is a finished call: Output goes to the model, Title and Metadata to the clients.
type Result struct {
	Title    string
	Output   string         // what the model sees
	Metadata map[string]any // what clients see in the part (bash: output, exit, truncated, description; edit: diff, filediff)
	Changes  []FileChange   // files this call wrote, for GET /session/{id}/diff
}

// FileChange records one file a call wrote, so the session can show and revert its diff.
type FileChange struct {
	Path    string // absolute
	Before  string
	After   string
	Existed bool
}

// Todo is one item of a session's todo list.
type Todo = api.Todo

// TodoStore keeps each session's todo list; the session package implements it.
type TodoStore interface {
	Todos(ctx context.Context, sessionID string) ([]Todo, error)
	SetTodos(ctx context.Context, sessionID string, todos []Todo) error // the store publishes todo.updated
}

// Options tune the built-in tools; zero values take the defaults.
type Options struct {
	BashTimeout    time.Duration // default 2 minutes: used when the model gives no timeout
	BashMaxTimeout time.Duration // default 10 minutes: the most a model may ask for
	OutputLimit    int           // bytes of bash output kept (head and tail), default 50 KiB
	OutputLines    int           // lines of bash output kept (head and tail), default 2000 as in OpenCode
	// Shell runs every command and is the dialect it is judged in; default shelljudge.FindShell().
	Shell shelljudge.Shell
	// Sandbox confines every command the bash tool runs; nil runs them unconfined.
	Sandbox *sandbox.Policy
}

func (o Options) withDefaults() Options {
	if o.BashTimeout <= 0 {
		o.BashTimeout = 2 * time.Minute
	}
	if o.BashMaxTimeout <= 0 {
		o.BashMaxTimeout = 10 * time.Minute
	}
	if o.BashTimeout > o.BashMaxTimeout {
		o.BashTimeout = o.BashMaxTimeout
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = 50 * 1024
	}
	if o.OutputLines <= 0 {
		o.OutputLines = 2000
	}
	if o.Shell.Path == "" {
		o.Shell = shelljudge.FindShell()
	}
	return o
}

// Set is an ordered collection of tools by name; the order is the order the model is shown.
type Set struct {
	order []string
	tools map[string]Tool
}

// NewSet makes a Set holding tools in the given order.
func NewSet(tools ...Tool) *Set {
	s := &Set{tools: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		s.Add(t)
	}
	return s
}

// Builtins returns the built-in tools: bash, read, write, edit, multiedit, apply_patch, list, glob,
// grep, webfetch, todowrite, todoread. A turn offers apply_patch or edit and write, by the model
// (PatchTools).
func Builtins(opts Options) *Set {
	opts = opts.withDefaults()
	return NewSet(
		NewBash(opts),
		Read{},
		Write{},
		Edit{},
		MultiEdit{},
		ApplyPatch{},
		List{},
		Glob{},
		Grep{},
		WebFetch{},
		TodoWrite{},
		TodoRead{},
	)
}

// Get returns the tool with that name.
func (s *Set) Get(name string) (Tool, bool) {
	t, ok := s.tools[name]
	return t, ok
}

// All returns the tools in order.
func (s *Set) All() []Tool {
	out := make([]Tool, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, s.tools[name])
	}
	return out
}

// Add puts t in the set; a tool with the same name is replaced in place, keeping its position.
func (s *Set) Add(t Tool) {
	if s.tools == nil {
		s.tools = make(map[string]Tool)
	}
	if _, exists := s.tools[t.Name()]; !exists {
		s.order = append(s.order, t.Name())
	}
	s.tools[t.Name()] = t
}
