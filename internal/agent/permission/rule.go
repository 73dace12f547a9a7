// Package permission decides whether the agent may do something: rules from config and sessions
// (allow, ask, deny, with wildcard patterns; the last matching rule wins, as OpenCode), pending
// approvals answered over REST, and "always" grants remembered per project across restarts.
package permission

// Action is what a rule says to do.
type Action string

// The three actions.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// Rule is OpenCode's PermissionRule: for requests of kind Permission whose pattern matches Pattern
// (a wildcard: * matches any run of characters), do Action.
type Rule struct {
	Permission string `json:"permission"`
	Pattern    string `json:"pattern"`
	Action     Action `json:"action" enum:"allow,ask,deny"`
}
