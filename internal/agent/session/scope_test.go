package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

func gitInDir(t *testing.T, dir string, args ...string) { t.Helper(); testenv.Git(t, dir, args...) }

// TestAGrantScopeIsTheDirectoryNotWhatTheRepositorySays: a clone of a project (the same root commit)
// whose configuration names the project as its work tree (core.worktree) still has a grant scope
// of its own, so the project's "always" grants do not apply in it.
func TestAGrantScopeIsTheDirectoryNotWhatTheRepositorySays(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s, _, _ := newService(t)
	project, hostile := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "a.txt"), []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitInDir(t, project, "init", "-q")
	gitInDir(t, project, "add", ".")
	gitInDir(t, project, "commit", "-qm", "start")
	gitInDir(t, hostile, "clone", "-q", project, ".")
	gitInDir(t, hostile, "config", "core.worktree", project)

	ctx := context.Background()
	if a, b := s.ProjectID(ctx, project), s.ProjectID(ctx, hostile); a != b || a == "global" {
		t.Fatalf("the clone's project id %q is not the project's %q: the test proves nothing", b, a)
	}
	if a, b := s.GrantScope(ctx, project), s.GrantScope(ctx, hostile); a == b {
		t.Errorf("the clone shares the project's grant scope %q", a)
	}
}
