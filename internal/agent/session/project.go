package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tandem-dev/tandem/internal/infra/gitcmd"
)

// Directories lists the known directories of the project projectID (ProjectID's names): those its
// sessions work in, and own (the server's directory) when it belongs to it. Sorted, absolute.
func (s *Service) Directories(ctx context.Context, projectID, own string) ([]string, error) {
	dirs, err := s.db.SessionDirectories(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, d := range append(dirs, own) {
		if filepath.IsAbs(d) && !slices.Contains(out, d) && s.ProjectID(ctx, d) == projectID {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ProjectID names the project a directory belongs to: the root commit of its git repository (as
// OpenCode), or "global" outside git.
func (s *Service) ProjectID(ctx context.Context, directory string) string {
	return s.projects.id(ctx, directory)
}

// GrantScope names where "always" grants apply: the project ID together with the directory the
// project lives in (the repository's top level, or the directory itself outside git). Two non-git
// directories share nothing, and a repository that copies another's root commit does not inherit
// its grants.
func (s *Service) GrantScope(ctx context.Context, directory string) string {
	return s.projects.grantScope(ctx, directory)
}

// projects remembers, per directory, the project it belongs to and the scope of its grants: each
// costs a git call the first time.
type projects struct {
	mu   sync.Mutex
	seen map[string]string // directory -> project ID; "grant-scope\x00" + directory -> grant scope
}

func (p *projects) lookup(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.seen[key]
	return v, ok
}

func (p *projects) keep(key, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]string{}
	}
	p.seen[key] = value
}

func (p *projects) id(ctx context.Context, directory string) string {
	if id, ok := p.lookup(directory); ok {
		return id
	}
	id := "global"
	if out, err := ownGit(ctx, directory, "rev-list", "--max-parents=0", "--all"); err == nil {
		if lines := strings.Fields(string(out)); len(lines) > 0 {
			id = lines[len(lines)-1]
		}
	}
	p.keep(directory, id)
	return id
}

func (p *projects) grantScope(ctx context.Context, directory string) string {
	key := "grant-scope\x00" + directory
	if scope, ok := p.lookup(key); ok {
		return scope
	}
	// The work tree is found by its .git, as the file routes and snapshots find it: git's own
	// --show-toplevel would follow a core.worktree the repository's configuration names, and so let
	// it claim another directory's grants.
	root := Worktree(directory)
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	scope := p.id(ctx, directory) + "@" + hex.EncodeToString(sum[:8])
	p.keep(key, scope)
	return scope
}

// ownGit runs one git command of tandem's own in directory, with no program of the repository's.
func ownGit(ctx context.Context, directory string, args ...string) ([]byte, error) {
	g, err := gitcmd.Open(ctx, gitcmd.Repo{Dir: directory})
	if err != nil {
		return nil, err
	}
	return g.Output(ctx, args...)
}
