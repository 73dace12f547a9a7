package api

import "encoding/json"

// PromptInput is the body of POST /session/{id}/message and prompt_async.
type PromptInput struct {
	MessageID string          `json:"messageID,omitempty"`
	Model     *MessageModel   `json:"model,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	NoReply   bool            `json:"noReply,omitempty"`
	Tools     map[string]bool `json:"tools,omitempty"`
	System    string          `json:"system,omitempty"`
	Variant   string          `json:"variant,omitempty"`
	Parts     []PartInput     `json:"parts"`
}

// PartInput is one part of a prompt: text, or a file reference.
type PartInput struct {
	ID        string `json:"id,omitempty"`
	Type      string `json:"type" enum:"text,file,agent"`
	Text      string `json:"text,omitempty"`
	Synthetic bool   `json:"synthetic,omitempty"`
	Mime      string `json:"mime,omitempty"`
	Filename  string `json:"filename,omitempty"`
	URL       string `json:"url,omitempty"`
	Name      string `json:"name,omitempty"`
	// Source is where a file part was mentioned (OpenCode's FilePartSource), kept as sent.
	Source json.RawMessage `json:"source,omitempty"`
}

// SessionCreateInput is the body of POST /session.
type SessionCreateInput struct {
	ParentID    string           `json:"parentID,omitempty"`
	Title       string           `json:"title,omitempty"`
	Agent       string           `json:"agent,omitempty"`
	Model       *SessionModel    `json:"model,omitempty"`
	Metadata    map[string]any   `json:"metadata,omitempty"`
	Permission  []PermissionRule `json:"permission,omitempty"`
	WorkspaceID string           `json:"workspaceID,omitempty"`
}

// SessionUpdateInput is the body of PATCH /session/{id}; absent fields are left alone.
type SessionUpdateInput struct {
	Title      *string          `json:"title,omitempty"`
	Metadata   map[string]any   `json:"metadata,omitempty"`
	Permission []PermissionRule `json:"permission,omitempty"`
	Time       *struct {
		Archived *int64 `json:"archived,omitempty"`
	} `json:"time,omitempty"`
}

// SessionForkInput is the body of POST /session/{id}/fork.
type SessionForkInput struct {
	MessageID string `json:"messageID,omitempty"`
}

// ShellInput is the body of POST /session/{id}/shell: a command the user runs themselves (the
// TUI's "!ls").
type ShellInput struct {
	MessageID string        `json:"messageID,omitempty"`
	Agent     string        `json:"agent" description:"build or plan; without it the session's agent, else build."`
	Model     *MessageModel `json:"model,omitempty"`
	Command   string        `json:"command" required:"true"`
}

// RevertInput is the body of POST /session/{id}/revert.
type RevertInput struct {
	MessageID string `json:"messageID" required:"true" pattern:"^msg"`
	PartID    string `json:"partID,omitempty" pattern:"^prt"`
}

// SummarizeInput is the body of POST /session/{id}/summarize.
type SummarizeInput struct {
	ProviderID string `json:"providerID" required:"true"`
	ModelID    string `json:"modelID" required:"true"`
	Auto       bool   `json:"auto,omitempty"`
}

// AgentInfo is OpenCode's Agent document.
type AgentInfo struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Mode        string           `json:"mode" enum:"subagent,primary,all"`
	Native      bool             `json:"native"`
	Permission  []PermissionRule `json:"permission"`
	Options     map[string]any   `json:"options"`
	Tools       map[string]bool  `json:"tools,omitempty"`
}
