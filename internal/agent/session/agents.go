package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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
	off    map[string]bool // tools it is never offered (a configured agent's "tools": {"bash": false})
	prompt string
	model  *MessageModel // the model it runs on (a configured agent's "model"); nil: its caller's
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
		{info: AgentInfo{Name: "general", Description: "General-purpose agent for researching complex questions and executing multi-step tasks; it can run several units of work for you.",
			Mode: "subagent", Native: true, Permission: []permission.Rule{}, Options: map[string]any{}},
			off:    map[string]bool{"todowrite": true, "todoread": true},
			prompt: "You are a subagent started by another agent for one task. Do it, then answer with what you found or did: your last message is all the other agent sees.",
		},
		{info: AgentInfo{Name: "explore", Description: "Fast agent for exploring a codebase: finds files by pattern, searches code for keywords, and answers questions about it. Say how thorough it should be.",
			Mode: "subagent", Native: true, Options: map[string]any{},
			Permission: []permission.Rule{{Permission: "edit", Pattern: "*", Action: permission.Deny}}},
			tools: map[string]bool{"read": true, "list": true, "glob": true, "grep": true, "bash": true, "webfetch": true},
			prompt: "You are a file search specialist started by another agent: find files and code, read them, and answer precisely with paths and line numbers. " +
				"You do not change files. Your last message is all the other agent sees.",
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

// Agents lists the agents a prompt or a task can name: the built-in ones, then those the
// configuration defines (GET /agent).
func (s *Service) Agents() []AgentInfo {
	out := Agents()
	if s.agent == nil {
		return out
	}
	configs, ok := s.agent.Providers.(AgentConfigs)
	if !ok {
		return out
	}
	for _, c := range configs.ConfiguredAgents() {
		if a, ok := findAgent(*s.agent, c.Name); ok && !a.info.Native {
			out = append(out, a.info)
		}
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

// offers reports whether the agent may be offered a tool at all. A subagent is never offered task:
// subagents do not start subagents of their own.
func (a agent) offers(toolName string) bool {
	if toolName == "task" && a.info.Mode == "subagent" {
		return false
	}
	return (a.tools == nil || a.tools[toolName]) && !a.off[toolName]
}

// AgentConfigs is implemented by Providers that carry the configuration's agents ("agent" in
// tandem.json, as in OpenCode); their definitions are read at each use, so a changed
// configuration applies to the next turn.
type AgentConfigs interface {
	ConfiguredAgents() []AgentConfig
}

// AgentConfig is one agent the configuration defines, as OpenCode's config writes it.
type AgentConfig struct {
	Name        string
	Description string `json:"description"`
	Mode        string `json:"mode"` // subagent, primary or all (default all)
	Prompt      string `json:"prompt"`
	Model       string `json:"model"` // "providerID/modelID"; empty: the caller's model
	// Permission is OpenCode's permission config for this agent; its rules apply after the
	// configuration's, as a built-in agent's do.
	Permission json.RawMessage `json:"permission"`
	// Tools switches tools off ("bash": false); true changes nothing.
	Tools   map[string]bool `json:"tools"`
	Disable bool            `json:"disable"`

	rules []permission.Rule
}

// ParseAgentConfigs reads the configuration's "agent" entries. A problem names the agent and what
// is wrong, so the configuration can be refused before it applies.
func ParseAgentConfigs(raw map[string]json.RawMessage) ([]AgentConfig, error) {
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []AgentConfig
	for _, name := range names {
		var c AgentConfig
		if err := json.Unmarshal(raw[name], &c); err != nil {
			return nil, fmt.Errorf("agent.%s: %w", name, err)
		}
		c.Name = name
		switch c.Mode {
		case "":
			c.Mode = "all"
		case "subagent", "primary", "all":
		default:
			return nil, fmt.Errorf("agent.%s.mode: expected \"subagent\", \"primary\" or \"all\", got %q", name, c.Mode)
		}
		if c.Model != "" {
			if p, m, ok := strings.Cut(c.Model, "/"); !ok || p == "" || m == "" {
				return nil, fmt.Errorf("agent.%s.model: expected \"providerID/modelID\", got %q", name, c.Model)
			}
		}
		pc, err := permission.ParseConfig(c.Permission)
		if err != nil {
			return nil, fmt.Errorf("agent.%s.%w", name, err)
		}
		c.rules = pc.Rules
		if c.rules == nil {
			c.rules = []permission.Rule{}
		}
		out = append(out, c)
	}
	return out, nil
}

// findAgent returns the definition of a built-in agent, or of one the configuration defines.
func findAgent(ag Agent, name string) (agent, bool) {
	if a, ok := agentNamed(name); ok {
		return a, true
	}
	configs, ok := ag.Providers.(AgentConfigs)
	if !ok {
		return agent{}, false
	}
	for _, c := range configs.ConfiguredAgents() {
		if c.Name != name || c.Disable {
			continue
		}
		a := agent{info: AgentInfo{Name: c.Name, Description: c.Description, Mode: c.Mode, Permission: c.rules, Options: map[string]any{}},
			prompt: c.Prompt, off: map[string]bool{}}
		for tl, on := range c.Tools {
			if !on {
				a.off[tl] = true
			}
		}
		if p, m, ok := strings.Cut(c.Model, "/"); ok {
			a.model = &MessageModel{ProviderID: p, ModelID: m}
		}
		return a, true
	}
	return agent{}, false
}

// subagents lists the agents task may start: the built-in general and explore, and the
// configuration's whose mode is subagent or all.
func subagents(ag Agent) []agent {
	var out []agent
	for _, a := range agents() {
		if a.info.Mode == "subagent" {
			out = append(out, a)
		}
	}
	if configs, ok := ag.Providers.(AgentConfigs); ok {
		for _, c := range configs.ConfiguredAgents() {
			if c.Disable || c.Mode == "primary" {
				continue
			}
			if a, ok := findAgent(ag, c.Name); ok && !a.info.Native {
				out = append(out, a)
			}
		}
	}
	return out
}

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
