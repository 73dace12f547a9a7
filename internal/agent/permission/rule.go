// Package permission decides whether the agent may do something: rules from config and sessions
// (allow, ask, deny, with wildcard patterns; the last matching rule wins, as OpenCode), pending
// approvals answered over REST, and "always" grants remembered per project across restarts.
package permission

import "github.com/tandem-dev/tandem/api"

// Action is what a rule says to do.
type Action = api.PermissionAction

// The three actions.
const (
	Allow = api.PermissionAllow
	Ask   = api.PermissionAsk
	Deny  = api.PermissionDeny
)

// Rule is OpenCode's PermissionRule: for requests of kind Permission whose pattern matches Pattern
// (a wildcard: * matches any run of characters), do Action.
type Rule = api.PermissionRule
