package routes

import (
	"net/http"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/agent/slash"
)

// Commands serves slash commands: the list a client offers and running one in a session.
type Commands struct {
	Service *slash.Service
}

// SessionCommand is the body of POST /session/{sessionID}/command.
type SessionCommand struct {
	SessionPath
	slash.RunInput
}

// Ops declares the command routes.
func (cm *Commands) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/command", "command.list", "List commands", func(c *Call, _ *struct{}) ([]slash.Command, error) {
			return cm.Service.List(c.Ctx(), c.Dir)
		}).doc("tandem's built-ins (init, review), the configuration's `command` key, and the Markdown files in the user's " +
			"`command/` directory and the project's `.opencode/command/` and `.tandem/command/` (YAML frontmatter: description, " +
			"agent, model, subtask; the body is the template). A later source replaces an earlier command of the same name."),
		op(http.MethodPost, "/session/{sessionID}/command", "session.command", "Send command", func(c *Call, in *SessionCommand) (session.WithParts, error) {
			return cm.Service.Run(c.Ctx(), in.SessionID, in.RunInput)
		}).doc("Expands the command's template — `$1`…`$n` and `$ARGUMENTS` from arguments, each !`cmd` block replaced by its "+
			"output (run in the session's directory, 30 s and 32 KiB at most; a project's own command files run none until the "+
			"directory is trusted: 403 UntrustedProjectError), each `@path` inside the project attached with its content — and "+
			"sends it as a prompt in the session, as POST /session/{sessionID}/message does; returns the last assistant message "+
			"and announces command.executed.", 403, 404, 413, 415),
	}
}
