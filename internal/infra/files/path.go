// Package files answers questions about a project's files: which exist (a per-directory index that
// respects .gitignore), which match a fuzzy query or a text pattern, what one holds and how it differs
// from git's HEAD. Every path a client names is confined to the project directory here, with symlinks
// evaluated, so no caller has to remember to.
package files

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Target is a path inside a project directory.
type Target struct {
	Abs  string // absolute and cleaned, as the client named it (symlinks not evaluated)
	Real string // Abs with every existing symlink evaluated: what the kernel will touch
	Rel  string // Abs relative to the project directory, slash-separated ("." for the directory itself)
}

// Resolve resolves p (relative to root, or absolute) and refuses, with a Forbidden error, any path
// that leaves root lexically ("../x") or through a symlink.
func Resolve(root, p string) (Target, error) {
	root = filepath.Clean(root)
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, filepath.FromSlash(p))
	}
	abs = filepath.Clean(abs)
	if !Within(root, abs) {
		return Target{}, errs.Named(errs.Forbidden, "ForbiddenError", "Access denied: %q is outside the project directory %s", p, root)
	}
	real := EvalExisting(abs)
	if !Within(EvalExisting(root), real) {
		return Target{}, errs.Named(errs.Forbidden, "ForbiddenError", "Access denied: %q leads outside the project directory %s through a symbolic link", p, root)
	}
	return Target{Abs: abs, Real: real, Rel: RelSlash(root, abs)}, nil
}

// OpenInside opens t through an os.Root on the project directory, so a symlink swapped in after
// Resolve checked the path still cannot lead the open outside the directory.
func OpenInside(root string, t Target) (*os.File, error) {
	realRoot := EvalExisting(filepath.Clean(root))
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rel, err := filepath.Rel(realRoot, t.Real)
	if err != nil {
		return nil, err
	}
	return r.Open(rel)
}

// EvalExisting evaluates symlinks in the longest existing prefix of p and appends the rest, so a path
// that does not exist yet still resolves through a symlinked parent.
func EvalExisting(p string) string {
	rest := ""
	cur := p
	for {
		if resolved, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(resolved, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within reports whether p is dir or lies under it (both absolute and clean).
func Within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// RelSlash is p relative to dir in slash form, or p itself when it has no relative form.
func RelSlash(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}
