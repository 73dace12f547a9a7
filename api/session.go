package api

import (
	"bytes"
	"encoding/json"
)

// Session is OpenCode's Session document.
type Session struct {
	ID          string           `json:"id"`
	Slug        string           `json:"slug"`
	ProjectID   string           `json:"projectID"`
	WorkspaceID string           `json:"workspaceID,omitempty"`
	Directory   string           `json:"directory"`
	Path        string           `json:"path"`
	ParentID    string           `json:"parentID,omitempty"`
	Summary     *SessionSummary  `json:"summary,omitempty"`
	Cost        float64          `json:"cost"`
	Tokens      Tokens           `json:"tokens"`
	Share       *SessionShare    `json:"share,omitempty"`
	Title       string           `json:"title"`
	Agent       string           `json:"agent,omitempty"`
	Model       *SessionModel    `json:"model,omitempty"`
	Version     string           `json:"version"`
	Metadata    map[string]any   `json:"metadata,omitempty"`
	Time        SessionTime      `json:"time"`
	Permission  []PermissionRule `json:"permission,omitempty"`
	Revert      *SessionRevert   `json:"revert,omitempty"`
}

// SessionSummary counts the file changes a session made.
type SessionSummary struct {
	Additions int        `json:"additions"`
	Deletions int        `json:"deletions"`
	Files     int        `json:"files"`
	Diffs     []FileDiff `json:"diffs,omitempty"`
}

// SessionShare is a session's read-only link, served by tandem itself at /s/{token}.
type SessionShare struct {
	URL string `json:"url"`
}

// SessionModel is the model a session was created with.
type SessionModel struct {
	ID         string `json:"id"`
	ProviderID string `json:"providerID"`
	Variant    string `json:"variant,omitempty"`
}

// SessionTime holds epoch-millisecond timestamps.
type SessionTime struct {
	Created    int64 `json:"created"`
	Updated    int64 `json:"updated"`
	Compacting int64 `json:"compacting,omitempty"`
	Archived   int64 `json:"archived,omitempty"`
}

// SessionRevert marks a reverted point in a session.
type SessionRevert struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID,omitempty"`
	Snapshot  string `json:"snapshot,omitempty"`
	Diff      string `json:"diff,omitempty"`
}

// Tokens counts model tokens.
type Tokens struct {
	Total     int64       `json:"total,omitempty"`
	Input     int64       `json:"input"`
	Output    int64       `json:"output"`
	Reasoning int64       `json:"reasoning"`
	Cache     TokensCache `json:"cache"`
}

// TokensCache counts prompt-cache tokens.
type TokensCache struct {
	Read  int64 `json:"read"`
	Write int64 `json:"write"`
}

// FileDiff is OpenCode's SnapshotFileDiff: one file a session changed, as a unified patch.
type FileDiff struct {
	File      string `json:"file"`
	Patch     string `json:"patch"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Status    string `json:"status,omitempty" enum:"added,deleted,modified"`
}

// Role says who wrote a message.
type Role string

// The two message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is OpenCode's Message union (UserMessage | AssistantMessage) in one struct; fields of the
// other role stay empty and are omitted.
type Message struct {
	ID        string      `json:"id"`
	SessionID string      `json:"sessionID"`
	Role      Role        `json:"role" enum:"user,assistant"`
	Time      MessageTime `json:"time"`
	Agent     string      `json:"agent"`

	// User messages.
	Model  *MessageModel   `json:"model,omitempty"`
	System string          `json:"system,omitempty"`
	Tools  map[string]bool `json:"tools,omitempty"`
	// Summary is the user message's {diffs} object; on an assistant message that summarises the
	// conversation before it (a compaction) it is OpenCode's boolean `true`.
	Summary *MessageSummary `json:"summary,omitempty"`

	// Assistant messages.
	ParentID   string          `json:"parentID,omitempty"`
	ModelID    string          `json:"modelID,omitempty"`
	ProviderID string          `json:"providerID,omitempty"`
	Mode       string          `json:"mode,omitempty"`
	Path       *MessagePath    `json:"path,omitempty"`
	Cost       *float64        `json:"cost,omitempty"`
	Tokens     *Tokens         `json:"tokens,omitempty"`
	Finish     string          `json:"finish,omitempty"`
	Error      *MessageError   `json:"error,omitempty"`
	Variant    string          `json:"variant,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
}

// MessageTime holds a message's timestamps.
type MessageTime struct {
	Created   int64 `json:"created"`
	Completed int64 `json:"completed,omitempty"`
}

// MessageModel is the model a user message asked for.
type MessageModel struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
	Variant    string `json:"variant,omitempty"`
}

// MessageSummary lists the files a user message's turn changed. On an assistant message it is only
// the mark of a compaction's summary, `true` on the wire.
type MessageSummary struct {
	Title string     `json:"title,omitempty"`
	Body  string     `json:"body,omitempty"`
	Diffs []FileDiff `json:"diffs"`
	// Compacted marks the assistant message that summarises the conversation before it.
	Compacted bool `json:"-"`
}

// MarshalJSON writes `true` for a compaction's summary, else the {diffs} object.
func (m MessageSummary) MarshalJSON() ([]byte, error) {
	if m.Compacted {
		return []byte("true"), nil
	}
	type plain MessageSummary
	if m.Diffs == nil {
		m.Diffs = []FileDiff{}
	}
	return json.Marshal(plain(m))
}

// UnmarshalJSON reads the boolean of an assistant message or the object of a user message.
func (m *MessageSummary) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*m = MessageSummary{Compacted: true}
		return nil
	case "false":
		*m = MessageSummary{}
		return nil
	}
	type plain MessageSummary
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = MessageSummary(v)
	return nil
}

// MessagePath is where an assistant message ran.
type MessagePath struct {
	Cwd  string `json:"cwd"`
	Root string `json:"root"`
}

// MessageError is OpenCode's assistant error union: {name, data:{message, ...}}.
type MessageError struct {
	Name string         `json:"name"`
	Data map[string]any `json:"data"`
}

// Part is OpenCode's Part union in one struct, discriminated by Type.
type Part struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type" enum:"text,reasoning,tool,step-start,step-finish,file,agent,subtask,retry,patch,snapshot,compaction"`

	// text, reasoning
	Text      *string        `json:"text,omitempty"`
	Synthetic bool           `json:"synthetic,omitempty"`
	Ignored   bool           `json:"ignored,omitempty"`
	Time      *PartTime      `json:"time,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`

	// tool
	CallID string     `json:"callID,omitempty"`
	Tool   string     `json:"tool,omitempty"`
	State  *ToolState `json:"state,omitempty"`

	// step-start, step-finish
	Snapshot string   `json:"snapshot,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Cost     *float64 `json:"cost,omitempty"`
	Tokens   *Tokens  `json:"tokens,omitempty"`

	// patch: the snapshot before the step and the files (absolute paths) the step changed
	Hash  string   `json:"hash,omitempty"`
	Files []string `json:"files,omitempty"`

	// file
	Mime     string `json:"mime,omitempty"`
	Filename string `json:"filename,omitempty"`
	URL      string `json:"url,omitempty"`
	// Source is where the file was mentioned in the prompt (OpenCode's FilePartSource), as the client sent it.
	Source json.RawMessage `json:"source,omitempty"`

	// agent, subtask
	Name string `json:"name,omitempty"`

	// compaction: Auto says the model's context filled up (else a person asked); TailStartID is
	// the first message kept after the summary as it was (none: the summary replaces everything).
	Auto        *bool  `json:"auto,omitempty"`
	Overflow    bool   `json:"overflow,omitempty"`
	TailStartID string `json:"tail_start_id,omitempty"`
}

// PartTime bounds a part's activity.
type PartTime struct {
	Start int64 `json:"start"`
	End   int64 `json:"end,omitempty"`
}

// ToolState is OpenCode's ToolState union (pending | running | completed | error).
type ToolState struct {
	Status   string          `json:"status" enum:"pending,running,completed,error"`
	Input    json.RawMessage `json:"input"`
	Raw      *string         `json:"raw,omitempty"`
	Output   *string         `json:"output,omitempty"`
	Title    string          `json:"title,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
	Error    string          `json:"error,omitempty"`
	Time     *PartTime       `json:"time,omitempty"`
}

// MessageWithParts is a message with its parts, the element of every message listing.
type MessageWithParts struct {
	Info  Message `json:"info"`
	Parts []Part  `json:"parts"`
}

// SessionStatus is a session's activity as GET /session/status reports it.
type SessionStatus struct {
	Type    string `json:"type" enum:"idle,busy,retry"`
	Attempt int    `json:"attempt,omitempty"`
	Message string `json:"message,omitempty"`
	Next    int64  `json:"next,omitempty"`
}
