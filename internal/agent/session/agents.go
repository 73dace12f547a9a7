package session

import (
	"fmt"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/permission"
)

// AgentInfo is OpenCode's Agent document.
type AgentInfo = api.AgentInfo

// agent is one agent's whole definition: what GET /agent lists and what a turn applies. Its
// permission rules are applied after the session's (so plan's denials hold whatever a session
// allows), its tools are the only ones offered, and its prompt is added to the system prompt.
type agent struct {
	info   AgentInfo
	tools  map[string]bool // the only tools it is offered; nil offers every tool
	prompt string
}

// agents are build (every tool) and plan (read-only), as in OpenCode. A function, not a variable,
// so no caller can change a definition.
func agents() []agent {
	return []agent{
		{info: AgentInfo{Name: "build", Description: "The default agent: reads, edits and runs commands, asking where the rules say so.",
			Mode: "primary", Native: true, Permission: []permission.Rule{}, Options: map[string]any{}}},
		{info: AgentInfo{Name: "plan", Description: "Plans without changing anything: read-only tools; edits and commands are denied.",
			Mode: "primary", Native: true, Options: map[string]any{},
			Permission: []permission.Rule{
				{Permission: "edit", Pattern: "*", Action: permission.Deny},
				{Permission: "bash", Pattern: "*", Action: permission.Deny},
			}},
			tools:  map[string]bool{"read": true, "list": true, "glob": true, "grep": true, "todoread": true, "todowrite": true, "question": true},
			prompt: "You are in plan mode: you may read and search, but not edit files or run commands. Produce a plan.",
		},
	}
}

// Agents lists the agents a prompt can name.
func Agents() []AgentInfo {
	defs := agents()
	out := make([]AgentInfo, len(defs))
	for i, a := range defs {
		out[i] = a.info
	}
	return out
}

// agentNamed returns an agent's definition.
func agentNamed(name string) (agent, bool) {
	for _, a := range agents() {
		if a.info.Name == name {
			return a, true
		}
	}
	return agent{}, false
}

// offers reports whether the agent may be offered a tool at all.
func (a agent) offers(toolName string) bool { return a.tools == nil || a.tools[toolName] }

// system is the agent's system prompt in a project directory.
func (a agent) system(dir string) []string {
	p := fmt.Sprintf("You are tandem's %s agent, a coding assistant working in the project directory %s. "+
		"Use the tools to inspect and change files and to run commands; paths are relative to that directory. "+
		"Be concise. When a tool is refused, do not retry the same call: explain or take another approach.", a.info.Name, dir)
	if a.prompt != "" {
		p += " " + a.prompt
	}
	return []string{p}
}
