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
	// Node names this node and Store its kind of store ("sqlite", "postgresql"), for the health
	// check; Cluster, when several nodes share the store, reports this node's view of them.
	Node, Store string
	Cluster     func() *ClusterHealth
}

// Health is GET /global/health.
type Health struct {
	Healthy bool   `json:"healthy" const:"true"`
	Version string `json:"version"`
	// Node is this node's ID (several nodes) and Store the kind of store it runs on.
	Node  string `json:"node,omitempty"`
	Store string `json:"store,omitempty" enum:"sqlite,postgresql"`
	// Cluster is this node's view of the nodes sharing its store; absent on one node.
	Cluster *ClusterHealth `json:"cluster,omitempty"`
}

// ClusterHealth is a node's view of the nodes that share its database.
type ClusterHealth struct {
	ID        string `json:"id"`        // the database's cluster ID, the prefix of every event cursor
	Nodes     int    `json:"nodes"`     // live nodes at the last look, this one included
	Sessions  int    `json:"sessions"`  // sessions this node holds the lease of: it runs their turns
	Listening bool   `json:"listening"` // the doorbell is connected (else events arrive by polling, within a second)
	Delivered uint64 `json:"delivered"` // the newest event of the shared log this node has delivered
	Queued    int    `json:"queued"`    // events published here and not yet in the shared log
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
			func(c *Call, _ *struct{}) (Health, error) {
				h := Health{Healthy: true, Version: g.Version, Node: g.Node, Store: g.Store}
				if g.Cluster != nil {
					h.Cluster = g.Cluster()
				}
				return h, nil
			}).
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
