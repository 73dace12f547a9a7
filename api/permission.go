package api

// PermissionAction is what a rule says to do.
type PermissionAction string

// The three actions.
const (
	PermissionAllow PermissionAction = "allow"
	PermissionAsk   PermissionAction = "ask"
	PermissionDeny  PermissionAction = "deny"
)

// PermissionRule is OpenCode's PermissionRule: for requests of kind Permission whose pattern
// matches Pattern (a wildcard: * matches any run of characters), do Action.
type PermissionRule struct {
	Permission string           `json:"permission"`
	Pattern    string           `json:"pattern"`
	Action     PermissionAction `json:"action" enum:"allow,ask,deny"`
}

// PermissionReply is a client's answer to a permission request.
type PermissionReply string

// The three replies, exactly as OpenCode spells them.
const (
	PermissionOnce   PermissionReply = "once"
	PermissionAlways PermissionReply = "always"
	PermissionReject PermissionReply = "reject"
)

// PermissionRequest is OpenCode's PermissionRequest, plus its creation time and the answers it
// accepts: what GET /permission lists and permission.asked carries.
type PermissionRequest struct {
	ID         string             `json:"id"`
	SessionID  string             `json:"sessionID"`
	Permission string             `json:"permission"`
	Patterns   []string           `json:"patterns"`
	Metadata   map[string]any     `json:"metadata"`
	Always     []string           `json:"always"`
	Tool       *PermissionToolRef `json:"tool,omitempty"`
	// ParentSessionID and RootSessionID name the session a subagent's session was started from,
	// and the top of that line: a person looking at that session sees its subagents' requests
	// (tandem extension; absent for a session that is no subagent's).
	ParentSessionID string `json:"parentSessionID,omitempty"`
	RootSessionID   string `json:"rootSessionID,omitempty"`
	// Decisions are the answers valid for this request, in order (tandem extension).
	Decisions []PermissionChoice `json:"decisions"`
	Time      struct {
		Created int64 `json:"created"`
	} `json:"time"`
}

// PermissionToolRef names the tool call that asked.
type PermissionToolRef struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// PermissionChoice is one answer a pending request accepts (the request's "decisions", a tandem
// extension): its stable key, a label for a button and the patterns it allows or refuses.
type PermissionChoice struct {
	Key      string   `json:"key" enum:"once,session,always,reject,reject-with-message,deny-always"`
	Label    string   `json:"label"`
	Patterns []string `json:"patterns"`
	// Message says the reply must carry a message for the model (reject-with-message).
	Message bool `json:"message,omitempty"`
}
