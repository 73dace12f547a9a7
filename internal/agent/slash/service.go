package slash

import (
	"context"
	"log/slog"
	"strings"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// Service lists a project's commands and runs them as prompts in sessions.
type Service struct {
	// Config reads the merged configuration seen from a directory.
	Config func(dir string) (config.Config, error)
	// Env looks up environment variables (the user's configuration directory, the trust list).
	Env      func(string) string
	Sessions *session.Service
	Bus      *bus.Bus
	Logger   *slog.Logger
	// Sandbox confines the templates' !`cmd` blocks as it does the agent's commands; nil: unconfined.
	Sandbox *sandbox.Policy
}

func (s *Service) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// List returns the commands of the project in dir, by name.
func (s *Service) List(_ context.Context, dir string) ([]Command, error) {
	cfg, err := s.Config(dir)
	if err != nil {
		return nil, err
	}
	trusted, err := config.Trusted(s.Env, dir)
	if err != nil {
		return nil, err
	}
	return Load(dir, Sources{Config: cfg, UserDir: config.UserDir(s.Env), Trusted: trusted,
		Skipped: func(err error) { s.log().Warn("a command was left out", "dir", dir, "err", err) }})
}

// RunInput is the body of POST /session/{id}/command (api.CommandRunInput), which the service
// validates.
type RunInput api.CommandRunInput

// FilePart is a file a client attaches to a command's prompt.
type FilePart = api.CommandFilePart

// Validate checks the fields a client can get wrong.
func (in *RunInput) Validate() error {
	if strings.TrimSpace(in.Command) == "" {
		return errs.E(errs.Invalid, "command: required")
	}
	if in.MessageID != "" && !id.Valid(id.Message, in.MessageID) {
		return errs.E(errs.Invalid, "messageID: malformed message ID %q", in.MessageID)
	}
	if in.Model != "" {
		if _, _, ok := config.SplitModel(in.Model); !ok {
			return errs.E(errs.Invalid, "model: must look like \"provider/model\", got %q", in.Model)
		}
	}
	for i, p := range in.Parts {
		if p.Type != "file" || p.URL == "" || p.Mime == "" {
			return errs.E(errs.Invalid, "parts[%d]: a file part needs type \"file\", url and mime", i)
		}
	}
	return nil
}

// Run expands a command and sends it as a prompt in the session; it waits for the turn, as
// POST /session/{id}/message does, and returns the last assistant message. command.executed
// announces it.
func (s *Service) Run(ctx context.Context, sessionID string, in RunInput) (session.WithParts, error) {
	if err := in.Validate(); err != nil {
		return session.WithParts{}, err
	}
	sess, err := s.Sessions.Get(ctx, sessionID)
	if err != nil {
		return session.WithParts{}, err
	}
	cmds, err := s.List(ctx, sess.Directory)
	if err != nil {
		return session.WithParts{}, err
	}
	var cmd *Command
	for i := range cmds {
		if cmds[i].Name == in.Command {
			cmd = &cmds[i]
		}
	}
	if cmd == nil {
		return session.WithParts{}, errs.E(errs.NotFound, "Command not found: %s", in.Command)
	}
	exp, err := Expand(ctx, *cmd, in.Arguments, sess.Directory, session.Worktree(sess.Directory), s.Sandbox)
	if err != nil {
		return session.WithParts{}, err
	}
	prompt := session.PromptInput{MessageID: in.MessageID, Agent: in.Agent, Variant: in.Variant,
		Parts: []session.PartInput{{Type: "text", Text: exp.Text}}}
	if prompt.Agent == "" {
		prompt.Agent = cmd.Agent
	}
	model := in.Model
	if model == "" {
		model = cmd.Model
	}
	if model != "" {
		p, m, ok := config.SplitModel(model)
		if !ok {
			return session.WithParts{}, errs.E(errs.Invalid, "command %q: model must look like \"provider/model\", got %q", cmd.Name, model)
		}
		prompt.Model = &session.MessageModel{ProviderID: p, ModelID: m}
	}
	for _, f := range exp.Files {
		prompt.Parts = append(prompt.Parts,
			session.PartInput{Type: "text", Synthetic: true, Text: "Contents of " + f.Rel + " (attached with @" + f.Rel + "):\n" + f.Content},
			session.PartInput{Type: "file", Mime: "text/plain", Filename: f.Rel, URL: "file://" + f.Abs})
	}
	for _, p := range in.Parts {
		prompt.Parts = append(prompt.Parts, session.PartInput{ID: p.ID, Type: "file", Mime: p.Mime, Filename: p.Filename, URL: p.URL})
	}
	reply, err := s.Sessions.Prompt(ctx, sessionID, prompt)
	if err != nil {
		return session.WithParts{}, err
	}
	s.Bus.Emit(s.log(), sess.Directory, api.EventCommandExecuted, api.CommandExecuted{Name: cmd.Name, SessionID: sessionID, Arguments: in.Arguments, MessageID: reply.Info.ParentID})
	return reply, nil
}
