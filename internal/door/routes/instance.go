package routes

import (
	"context"
	"net/http"
)

// Instance serves what OpenCode calls the instance of a directory: disposing it (its clients reload
// what they show) and the directories its project is known in.
type Instance struct {
	// Dispose reads the configuration of a directory again and applies it (providers, rules,
	// notification targets), then tells that directory's clients to reload.
	Dispose func(ctx context.Context, dir string) error
	// Directories lists the known directories of a project (as GET /project/current names it).
	Directories func(ctx context.Context, projectID string) ([]string, error)
}

// ProjectPath names a project in GET /project/{projectID}/directories.
type ProjectPath struct {
	ProjectID string `path:"projectID" json:"-"`
}

// ProjectDirectory is one entry of OpenCode's ProjectDirectories.
type ProjectDirectory struct {
	Directory string `json:"directory" description:"An absolute directory the project is known in."`
	Strategy  string `json:"strategy,omitempty"`
}

// Ops declares POST /instance/dispose and GET /project/{projectID}/directories.
func (in *Instance) Ops() []Op {
	return []Op{
		op(http.MethodPost, "/instance/dispose", "instance.dispose", "Dispose instance", func(c *Call, _ *struct{}) (bool, error) {
			if err := in.Dispose(c.Ctx(), c.Dir); err != nil {
				return false, err
			}
			return true, nil
		}).doc("Reads the configuration again (a provider added to tandem.json is listed by GET /provider from then on) and " +
			"publishes server.instance.disposed, on which OpenCode's clients reload what they show. Sessions, turns and pending requests are untouched."),
		op(http.MethodGet, "/project/{projectID}/directories", "project.directories", "List project directories",
			func(c *Call, p *ProjectPath) ([]ProjectDirectory, error) {
				dirs, err := in.Directories(c.Ctx(), p.ProjectID)
				if err != nil {
					return nil, err
				}
				out := make([]ProjectDirectory, 0, len(dirs))
				for _, d := range dirs {
					out = append(out, ProjectDirectory{Directory: d})
				}
				return out, nil
			}).doc("The directories the project's sessions work in, and the server's own when it belongs to the project; an unknown project has none."),
	}
}
