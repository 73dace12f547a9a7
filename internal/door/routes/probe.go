package routes

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// Probes serves the OpenCode routes that clients read at startup to fill in side panels and
// footers (LSP, formatters, VCS, workspaces, console). OpenCode's terminal UI asks for all of
// them when it attaches. Where tandem has no such feature the answer is the honest empty one, never
// invented data, so a client shows "nothing configured" instead of an error.
type Probes struct{}

// LSPStatus is OpenCode's LSPStatus: a language server and whether it is connected. tandem runs none.
type LSPStatus struct {
	ID     string `json:"id" required:"true"`
	Name   string `json:"name" required:"true"`
	Root   string `json:"root" required:"true"`
	Status string `json:"status" required:"true" enum:"connected,error"`
}

// FormatterStatus is OpenCode's FormatterStatus: a code formatter run after edits. tandem runs none.
type FormatterStatus struct {
	Name       string   `json:"name" required:"true"`
	Extensions []string `json:"extensions" required:"true"`
	Enabled    bool     `json:"enabled" required:"true"`
}

// VcsInfo is OpenCode's VcsInfo: the branch checked out in the project's git work tree.
type VcsInfo struct {
	Branch        string `json:"branch,omitempty" description:"The checked-out branch; absent outside git or on a detached HEAD."`
	DefaultBranch string `json:"default_branch,omitempty" description:"Never set: tandem does not ask a remote which branch is its default."`
}

// Capabilities is OpenCode's ExperimentalCapabilities.
type Capabilities struct {
	BackgroundSubagents bool `json:"backgroundSubagents" required:"true" description:"Always false: tandem runs no sub-agents in the background."`
}

// ConsoleState is OpenCode's ConsoleState: providers managed by an opencode.ai console account.
// tandem has no console account.
type ConsoleState struct {
	ConsoleManagedProviders []string `json:"consoleManagedProviders" required:"true"`
	ActiveOrgName           string   `json:"activeOrgName,omitempty"`
	SwitchableOrgCount      int      `json:"switchableOrgCount" required:"true" minimum:"0"`
}

// Workspace is OpenCode's Workspace: a remote or sandboxed copy of a project. tandem has none.
type Workspace struct {
	ID        string `json:"id" required:"true"`
	Type      string `json:"type" required:"true"`
	Name      string `json:"name" required:"true"`
	Directory string `json:"directory,omitempty"`
	ProjectID string `json:"projectID" required:"true"`
}

// WorkspaceStatus is OpenCode's WorkspaceEventConnectionStatus.
type WorkspaceStatus struct {
	WorkspaceID string `json:"workspaceID" required:"true"`
	Status      string `json:"status" required:"true" enum:"connected,connecting,disconnected,error"`
	Error       string `json:"error,omitempty"`
}

// MCPResource is OpenCode's McpResource: a resource an MCP server offers for attaching to a prompt.
// tandem's agent reads no MCP resources, so none are offered.
type MCPResource struct {
	Name        string `json:"name" required:"true"`
	URI         string `json:"uri" required:"true"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
	Client      string `json:"client" required:"true" description:"The MCP server offering it."`
}

// Ops declares the probed routes.
func (p *Probes) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/lsp", "lsp.status", "Get LSP status", func(c *Call, _ *struct{}) ([]LSPStatus, error) {
			return []LSPStatus{}, nil
		}).doc("Always empty: tandem runs no language servers."),
		op(http.MethodGet, "/formatter", "formatter.status", "Get formatter status", func(c *Call, _ *struct{}) ([]FormatterStatus, error) {
			return []FormatterStatus{}, nil
		}).doc("Always empty: tandem runs no formatters after edits."),
		op(http.MethodGet, "/vcs", "vcs.get", "Get VCS info", func(c *Call, _ *struct{}) (VcsInfo, error) {
			return VcsInfo{Branch: gitBranch(session.Worktree(c.Dir))}, nil
		}).doc("The branch checked out in the directory's git work tree, read from its HEAD; `{}` outside git."),
		op(http.MethodGet, "/experimental/capabilities", "experimental.capabilities.get", "Get capabilities", func(c *Call, _ *struct{}) (Capabilities, error) {
			return Capabilities{}, nil
		}),
		op(http.MethodGet, "/experimental/console", "experimental.console.get", "Get console state", func(c *Call, _ *struct{}) (ConsoleState, error) {
			return ConsoleState{ConsoleManagedProviders: []string{}}, nil
		}).doc("tandem has no opencode.ai console account: no managed providers, no organizations."),
		op(http.MethodGet, "/experimental/workspace", "experimental.workspace.list", "List workspaces", func(c *Call, _ *struct{}) ([]Workspace, error) {
			return []Workspace{}, nil
		}).doc("Always empty: tandem has no remote or sandboxed workspaces."),
		op(http.MethodGet, "/experimental/workspace/status", "experimental.workspace.status", "Get workspace status", func(c *Call, _ *struct{}) ([]WorkspaceStatus, error) {
			return []WorkspaceStatus{}, nil
		}).doc("Always empty: tandem has no workspaces to connect."),
		op(http.MethodGet, "/experimental/resource", "experimental.resource.list", "List MCP resources", func(c *Call, _ *struct{}) (map[string]MCPResource, error) {
			return map[string]MCPResource{}, nil
		}).doc("Always empty: tandem uses MCP servers' tools, not their resources, so there are none to attach to a prompt."),
	}
}

// gitBranch reads the branch a git work tree has checked out, following a linked worktree's `.git`
// file to its git directory. It is "" outside git and on a detached HEAD.
func gitBranch(tree string) string {
	gitDir := filepath.Join(tree, ".git")
	if b, err := os.ReadFile(gitDir); err == nil {
		target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return ""
		}
		gitDir = strings.TrimSpace(target)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(tree, gitDir)
		}
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	branch, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/")
	if !ok {
		return ""
	}
	return branch
}
