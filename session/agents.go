package session

import "tandem/permission"

// AgentInfo is OpenCode's Agent document.
type AgentInfo struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Mode        string            `json:"mode" enum:"subagent,primary,all"`
	Native      bool              `json:"native"`
	Permission  []permission.Rule `json:"permission"`
	Options     map[string]any    `json:"options"`
	Tools       map[string]bool   `json:"tools,omitempty"`
}

// readOnlyTools are the only built-in tools the plan agent may call.
var readOnlyTools = map[string]bool{"read": true, "list": true, "glob": true, "grep": true, "todoread": true, "todowrite": true, "question": true}

// Agents lists the agents a prompt can name: build (every tool) and plan (read-only), as OpenCode.
func Agents() []AgentInfo {
	return []AgentInfo{
		{Name: "build", Description: "The default agent: reads, edits and runs commands, asking where the rules say so.",
			Mode: "primary", Native: true, Permission: []permission.Rule{}, Options: map[string]any{}},
		{Name: "plan", Description: "Plans without changing anything: read-only tools; edits and commands are denied.",
			Mode: "primary", Native: true, Options: map[string]any{},
			Permission: []permission.Rule{
				{Permission: "edit", Pattern: "*", Action: permission.Deny},
				{Permission: "bash", Pattern: "*", Action: permission.Deny},
			}},
	}
}

// AllowsTool reports whether an agent may be offered a tool at all.
func AllowsTool(agent, toolName string) bool {
	return agent != "plan" || readOnlyTools[toolName]
}
