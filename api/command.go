package api

import "encoding/json"

// Command is OpenCode's Command: a slash command a client can offer (GET /command).
type Command struct {
	Name        string   `json:"name" required:"true"`
	Description string   `json:"description,omitempty"`
	Agent       string   `json:"agent,omitempty"`
	Model       string   `json:"model,omitempty" description:"providerID/modelID the command runs with."`
	Source      string   `json:"source,omitempty" enum:"command,mcp,skill"`
	Template    string   `json:"template" required:"true"`
	Subtask     bool     `json:"subtask,omitempty" description:"Listed as written; tandem runs every command in the session itself."`
	Hints       []string `json:"hints" required:"true" description:"The placeholders the template uses ($1, $2, …, $ARGUMENTS), for a client to prompt for."`
}

// CommandRunInput is the body of POST /session/{id}/command.
type CommandRunInput struct {
	MessageID string            `json:"messageID,omitempty"`
	Agent     string            `json:"agent,omitempty" description:"The agent to run with; default the command's, else the session's."`
	Model     string            `json:"model,omitempty" description:"providerID/modelID; default the command's, else the session's."`
	Arguments string            `json:"arguments" required:"true" description:"What the user typed after the command's name."`
	Command   string            `json:"command" required:"true" description:"The command's name, without the slash."`
	Variant   string            `json:"variant,omitempty"`
	Parts     []CommandFilePart `json:"parts,omitempty" description:"Files attached to the prompt."`
}

// CommandFilePart is a file a client attaches to a command's prompt.
type CommandFilePart struct {
	ID       string          `json:"id,omitempty" pattern:"^prt"`
	Type     string          `json:"type" required:"true" enum:"file"`
	Mime     string          `json:"mime" required:"true"`
	Filename string          `json:"filename,omitempty"`
	URL      string          `json:"url" required:"true"`
	Source   json.RawMessage `json:"source,omitempty"`
}
