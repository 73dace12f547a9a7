package api

import "encoding/json"

// MCPStatus is a server's state as GET /mcp reports it: OpenCode's MCPStatus union.
type MCPStatus struct {
	Status string `json:"status" required:"true" enum:"connected,disabled,failed,needs_auth,needs_client_registration"`
	Error  string `json:"error,omitempty" description:"Why the server failed."`
	// SessionID is tandem's extension: set for a server added for one session (POST /mcp with
	// sessionID), whose tools only that session's turns are offered.
	SessionID string `json:"sessionID,omitempty" description:"tandem: the one session this server was added for (POST /mcp with sessionID); only its turns are offered the server's tools, and the server goes when the session is deleted. Absent for the project's servers."`
}

// MCPSessionKey is the name under which a server added for one session is listed (GET /mcp):
// several sessions can each add a server of the same name.
func MCPSessionKey(name, sessionID string) string { return name + "@" + sessionID }

// Elicitation is a pending request from an MCP server for input from the person, as GET
// /mcp/elicitation lists it and mcp.elicitation.asked carries it, read by a client: the form it
// asks to fill in is kept as the server sent it.
type Elicitation struct {
	ID        string `json:"id"`
	Server    string `json:"server"`
	SessionID string `json:"sessionID,omitempty"`
	Tool      *struct {
		MessageID string `json:"messageID"`
		CallID    string `json:"callID"`
	} `json:"tool,omitempty"`
	// ParentSessionID and RootSessionID name the sessions a subagent's session descends from.
	ParentSessionID string          `json:"parentSessionID,omitempty"`
	RootSessionID   string          `json:"rootSessionID,omitempty"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	Domain          string          `json:"domain,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	Required        bool            `json:"required,omitempty"`
	Time            struct {
		Created int64 `json:"created"`
	} `json:"time"`
}
