package tool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tandem-dev/tandem/internal/base/atomicfile"
	"github.com/tandem-dev/tandem/internal/infra/files"
)

// target is a path a tool is about to touch.
type target struct {
	Abs  string // absolute and cleaned, as the model named it (symlinks not evaluated)
	Real string // Abs with every existing symlink evaluated: what the kernel will actually touch
	Rel  string // Abs relative to the session directory, slash-separated: the permission pattern
}

// locate resolves p against the call's directory and, when it lands outside that directory (after
// symlinks are followed), asks "external_directory" for the directory it lands in. isDir says whether
// p names a directory (list, glob, grep) or a file (read, write, edit): a directory is asked for
// itself, a file for its parent.
func locate(ctx context.Context, call *Call, p string, isDir bool) (target, error) {
	if call.Dir == "" || !filepath.IsAbs(call.Dir) {
		return target{}, invalid("the session has no absolute working directory (got %q)", call.Dir)
	}
	dir := filepath.Clean(call.Dir)
	abs := absPath(dir, p)

	realDir := evalExisting(dir)
	real := evalExisting(abs)
	t := target{Abs: abs, Real: real, Rel: relSlash(dir, abs)}
	if within(realDir, real) {
		return t, nil
	}
	outside := real
	if !isDir {
		outside = filepath.Dir(real)
	}
	pattern := filepath.ToSlash(filepath.Join(outside, "*"))
	err := call.Gate.Check(ctx, Ask{
		Permission: "external_directory",
		Patterns:   []string{pattern},
		Always:     []string{pattern},
		Metadata:   map[string]any{"filepath": abs, "parentDir": outside},
	})
	return t, err
}

// absPath resolves p against dir lexically; an empty p is dir itself.
func absPath(dir, p string) string {
	if p == "" {
		return filepath.Clean(dir)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// The path rules are the files package's, so the tools and the file routes confine paths alike.

func evalExisting(p string) string { return files.EvalExisting(p) }

func within(dir, p string) bool { return files.Within(dir, p) }

func relSlash(dir, p string) string { return files.RelSlash(dir, p) }

// readExisting returns a file's content and whether it existed; a missing file is not an error.
func readExisting(path string) (string, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(b), true, nil
}

// writeAtomicUnder replaces the content of rel, a path inside rootDir, in one rename (see
// atomicfile), so a crash or a concurrent reader never sees a half-written file. Every step goes
// through an os.Root opened on rootDir: a symlink swapped in while a person was deciding cannot
// lead the write out of it.
func writeAtomicUnder(rootDir, rel, content string) error {
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// The file keeps the mode it had (a script stays executable).
	return atomicfile.WriteIn(root, rel, []byte(content), atomicfile.PermIn(root, rel, 0o644))
}

// staged is new content written beside the file it will replace, not yet in place: the files of
// one change (apply_patch, multiedit) are all staged first and then renamed together, so that the
// change fails, if it fails, before any of them changed. (atomicfile writes and renames in one
// step, which a change of several files cannot use.)
type staged struct {
	root      *os.Root
	tmp, rel  string
	committed bool
}

// stage writes content to a synced temporary file beside rel (inside rootDir), with rel's mode
// when it exists. Nothing is visible at rel until commit.
func stage(rootDir, rel, content string) (*staged, error) {
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, err
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			_ = root.Close()
			return nil, err
		}
	}
	mode := atomicfile.PermIn(root, rel, 0o644)
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	s := &staged{root: root, rel: rel, tmp: filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tandem-"+hex.EncodeToString(suffix[:]))}
	tmp, err := root.OpenFile(s.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	err = func() error {
		if _, err := tmp.WriteString(content); err != nil {
			return err
		}
		if err := tmp.Sync(); err != nil {
			return err
		}
		return tmp.Chmod(mode)
	}()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// commit renames the staged content into place.
func (s *staged) commit() error {
	if err := s.root.Rename(s.tmp, s.rel); err != nil {
		return err
	}
	s.committed = true
	return nil
}

// discard removes the temporary file unless it was committed, and lets the root go; it may be
// called more than once.
func (s *staged) discard() {
	if s.root == nil {
		return
	}
	if !s.committed {
		_ = s.root.Remove(s.tmp)
	}
	_ = s.root.Close()
	s.root = nil
}
