package api

import "encoding/json"

// The events of the /event and /global/event streams, by name. Each arrives as
// {"id", "type", "properties"} with the payload type named beside its constant as the properties;
// OpenCode's clients know the same names and shapes.
const (
	// The stream's own events.
	EventServerConnected   = "server.connected"         // ServerConnected, first on every stream
	EventServerHeartbeat   = "server.heartbeat"         // Heartbeat
	EventServerShutdown    = "server.shutdown"          // ServerShutdown, last before the server stops
	EventInstanceDisposed  = "server.instance.disposed" // InstanceDisposed: reload what you know of the directory
	EventSessionCreated    = "session.created"          // SessionInfo
	EventSessionUpdated    = "session.updated"          // SessionInfo
	EventSessionDeleted    = "session.deleted"          // SessionInfo
	EventSessionStatus     = "session.status"           // SessionStatusChanged
	EventSessionIdle       = "session.idle"             // SessionIdle
	EventSessionError      = "session.error"            // SessionError
	EventSessionCompacted  = "session.compacted"        // SessionCompacted
	EventSessionDiff       = "session.diff"             // SessionDiff
	EventMessageUpdated    = "message.updated"          // MessageUpdated
	EventMessageRemoved    = "message.removed"          // MessageRemoved
	EventPartUpdated       = "message.part.updated"     // PartUpdated
	EventPartDelta         = "message.part.delta"       // PartDelta
	EventPartRemoved       = "message.part.removed"     // PartRemoved
	EventTodoUpdated       = "todo.updated"             // TodoUpdated
	EventCommandExecuted   = "command.executed"         // CommandExecuted
	EventPermissionAsked   = "permission.asked"         // PermissionRequest
	EventPermissionReplied = "permission.replied"       // PermissionReplied
	EventQuestionAsked     = "question.asked"           // QuestionRequest
	EventQuestionReplied   = "question.replied"         // QuestionReplied
	EventQuestionRejected  = "question.rejected"        // QuestionRejected
	EventElicitationAsked  = "mcp.elicitation.asked"    // Elicitation
	// EventElicitationReplied ends an elicitation however it ended (answered, timed out, cancelled).
	EventElicitationReplied   = "mcp.elicitation.replied"   // ElicitationReplied
	EventElicitationCompleted = "mcp.elicitation.completed" // ElicitationCompleted
	EventMCPToolsChanged      = "mcp.tools.changed"         // MCPToolsChanged
	EventMCPStatusChanged     = "mcp.status.changed"        // MCPStatusChanged
	EventMCPServerRemoved     = "mcp.server.removed"        // MCPServerRemoved
	EventPtyCreated           = "pty.created"               // PtyChanged
	EventPtyUpdated           = "pty.updated"               // PtyChanged
	EventPtyExited            = "pty.exited"                // PtyExited
	EventPtyDeleted           = "pty.deleted"               // PtyDeleted
)

// The payloads. Fields are declared in the order of their JSON names where the events were first
// sent as maps (whose keys encoding/json sorts), so that the bytes on the wire stay the same.

// ServerConnected opens a stream. Resync says that events were missed and cannot be replayed: the
// client must reload its state.
type ServerConnected struct {
	Resync bool `json:"resync,omitempty"`
}

// Heartbeat keeps an idle stream open; it carries nothing.
type Heartbeat struct{}

// ServerShutdown says why the stream ends.
type ServerShutdown struct {
	Reason string `json:"reason"`
}

// InstanceDisposed says that what a client knows of a directory is stale (of every directory when
// Directory is empty: the user's configuration or a stored API key changed).
type InstanceDisposed struct {
	Directory string `json:"directory"`
}

// SessionInfo carries a session that was created, updated or deleted.
type SessionInfo struct {
	Info      Session `json:"info"`
	SessionID string  `json:"sessionID"`
}

// SessionStatusChanged carries a session's new activity.
type SessionStatusChanged struct {
	SessionID string        `json:"sessionID"`
	Status    SessionStatus `json:"status"`
}

// SessionIdle says that a session's turn ended and nothing more is queued.
type SessionIdle struct {
	SessionID string `json:"sessionID"`
}

// SessionError is a turn's failure.
type SessionError struct {
	Error     *MessageError `json:"error"`
	SessionID string        `json:"sessionID"`
}

// SessionCompacted says that a session's conversation was summarised.
type SessionCompacted struct {
	SessionID string `json:"sessionID"`
}

// SessionDiff is a session's changed files after a turn.
type SessionDiff struct {
	Diff      []FileDiff `json:"diff"`
	SessionID string     `json:"sessionID"`
}

// MessageUpdated carries a message that was added or changed.
type MessageUpdated struct {
	Info      Message `json:"info"`
	SessionID string  `json:"sessionID"`
}

// MessageRemoved names a message that is gone.
type MessageRemoved struct {
	MessageID string `json:"messageID"`
	SessionID string `json:"sessionID"`
}

// PartUpdated carries a part that was added or changed, at Time (epoch milliseconds).
type PartUpdated struct {
	Part      Part   `json:"part"`
	SessionID string `json:"sessionID"`
	Time      int64  `json:"time"`
}

// PartDelta is text appended to a streaming part's Field at Offset (in UTF-16 code units, as
// JavaScript counts). Field is "text" for a text or reasoning part, FieldLiveOutput for a running
// tool's output.
type PartDelta struct {
	Delta     string `json:"delta"`
	Field     string `json:"field"`
	MessageID string `json:"messageID"`
	Offset    int    `json:"offset"`
	PartID    string `json:"partID"`
	SessionID string `json:"sessionID"`
}

// FieldLiveOutput is the PartDelta field of a running tool's output, a path into the part: the
// delta grows state.metadata.output.
const FieldLiveOutput = "state.metadata.output"

// PartRemoved names a part that is gone.
type PartRemoved struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID"`
	SessionID string `json:"sessionID"`
}

// TodoUpdated carries a session's whole todo list.
type TodoUpdated struct {
	SessionID string `json:"sessionID"`
	Todos     []Todo `json:"todos"`
}

// CommandExecuted says that a slash command ran; MessageID is the prompt it made.
type CommandExecuted struct {
	Arguments string `json:"arguments"`
	MessageID string `json:"messageID"`
	Name      string `json:"name"`
	SessionID string `json:"sessionID"`
}

// PermissionReplied ends a permission request. Reply is what OpenCode's clients know (once, always,
// reject); Decision is the key that was chosen; Cause is reply, timeout or cancel; Client is who
// answered.
type PermissionReplied struct {
	Cause     string          `json:"cause"`
	Client    string          `json:"client"`
	Decision  string          `json:"decision"`
	Reply     PermissionReply `json:"reply"`
	RequestID string          `json:"requestID"`
	SessionID string          `json:"sessionID"`
}

// QuestionReplied carries the answers to a question set, one list of labels per question.
type QuestionReplied struct {
	SessionID string     `json:"sessionID"`
	RequestID string     `json:"requestID"`
	Answers   [][]string `json:"answers"`
	Client    string     `json:"client,omitempty"` // who answered (X-Tandem-Client or User-Agent; tandem extension)
}

// The causes of a question.rejected (tandem extension; OpenCode's event does not say).
const (
	QuestionDismissed = "reject"  // a person dismissed it
	QuestionTimedOut  = "timeout" // nobody answered in time
	QuestionCancelled = "cancel"  // the turn that asked ended
)

// QuestionRejected ends a question set without answers.
type QuestionRejected struct {
	SessionID string `json:"sessionID"`
	RequestID string `json:"requestID"`
	Client    string `json:"client,omitempty"` // who dismissed it; empty for timeouts and cancellations
	Cause     string `json:"cause"`
}

// ElicitationReplied ends an elicitation. Cause says why: reply (a person answered), timeout, or
// cancel (the server gave up, disconnected or crashed, or the turn was aborted).
type ElicitationReplied struct {
	ID        string `json:"id"`
	Server    string `json:"server"`
	SessionID string `json:"sessionID,omitempty"`
	Action    string `json:"action"`
	Cause     string `json:"cause"`
	Reason    string `json:"reason,omitempty"`
	// Client is who answered (X-Tandem-Client or User-Agent), for a reply.
	Client string `json:"client,omitempty"`
}

// ElicitationCompleted relays an MCP server's notice that the out-of-band step of a URL
// elicitation is done; ID is tandem's elicitation when one was waiting.
type ElicitationCompleted struct {
	ElicitationID string `json:"elicitationId"`
	ID            string `json:"id,omitempty"`
	Server        string `json:"server"`
	SessionID     string `json:"sessionID,omitempty"`
}

// MCPToolsChanged says that an MCP server's tools changed.
type MCPToolsChanged struct {
	Server string `json:"server"`
}

// MCPStatusChanged carries an MCP server's new status.
type MCPStatusChanged struct {
	Server string `json:"server"`
	MCPStatus
}

// MCPServerRemoved names an MCP server that is gone.
type MCPServerRemoved struct {
	Server    string `json:"server"`
	SessionID string `json:"sessionID,omitempty"`
}

// PtyChanged carries a terminal that was created or changed.
type PtyChanged struct {
	Info PtyInfo `json:"info"`
}

// PtyExited says that a terminal's process ended with ExitCode.
type PtyExited struct {
	ExitCode int    `json:"exitCode"`
	ID       string `json:"id"`
}

// PtyDeleted names a terminal that is gone.
type PtyDeleted struct {
	ID string `json:"id"`
}

// Event is one event as a client reads it: its name and its payload, still encoded; Decode reads
// the payload into the type the catalogue names for it.
type Event struct {
	ID         string          // the cursor a reconnect resumes after
	Type       string          // one of the Event… names
	Properties json.RawMessage // the payload
}

// Decode reads the event's payload into v, a pointer to the payload type of its name.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Properties, v) }
