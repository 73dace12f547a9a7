package routes

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// Global serves health, paths and the current project.
type Global struct {
	Version string
	// StateDir and ConfigDir are where tandem keeps its data and looks for user config.
	StateDir, ConfigDir string
	// ProjectID names the project of a directory.
	ProjectID func(ctx context.Context, dir string) string
	Started   time.Time
}

// Health is GET /global/health.
type Health struct {
	Healthy bool   `json:"healthy" const:"true"`
	Version string `json:"version"`
}

// Paths is OpenCode's Path document.
type Paths struct {
	Home      string `json:"home"`
	State     string `json:"state"`
	Config    string `json:"config"`
	Worktree  string `json:"worktree"`
	Directory string `json:"directory"`
}

// Project is OpenCode's Project document.
type Project struct {
	ID        string      `json:"id"`
	Worktree  string      `json:"worktree"`
	VCS       string      `json:"vcs,omitempty" enum:"git"`
	Name      string      `json:"name,omitempty"`
	Time      ProjectTime `json:"time"`
	Sandboxes []string    `json:"sandboxes"`
}

// ProjectTime holds a project's timestamps.
type ProjectTime struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

// Ops declares the global routes.
func (g *Global) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/global/health", "global.health", "Get health",
			func(c *Call, _ *struct{}) (Health, error) { return Health{Healthy: true, Version: g.Version}, nil }).
			public().doc("The only route served without credentials."),
		op(http.MethodGet, "/path", "path.get", "Get paths", func(c *Call, _ *struct{}) (Paths, error) {
			home, _ := os.UserHomeDir()
			return Paths{Home: home, State: g.StateDir, Config: g.ConfigDir, Worktree: session.Worktree(c.Dir), Directory: c.Dir}, nil
		}),
		op(http.MethodGet, "/project/current", "project.current", "Get current project", func(c *Call, _ *struct{}) (Project, error) {
			wt := session.Worktree(c.Dir)
			p := Project{ID: g.ProjectID(c.Ctx(), c.Dir), Worktree: wt, Name: filepath.Base(wt), Sandboxes: []string{},
				Time: ProjectTime{Created: g.Started.UnixMilli(), Updated: g.Started.UnixMilli()}}
			if p.ID != "global" {
				p.VCS = "git"
			}
			return p, nil
		}),
	}
}
