package files

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Node is OpenCode's FileNode: one entry of a directory listing.
type Node struct {
	Name     string `json:"name" required:"true"`
	Path     string `json:"path" required:"true" description:"Relative to the project directory."`
	Absolute string `json:"absolute" required:"true"`
	Type     string `json:"type" required:"true" enum:"file,directory"`
	Ignored  bool   `json:"ignored" required:"true" description:"An ignore rule (.gitignore, .ignore, git's info/exclude) excludes it."`
}

// List lists the directory rel (relative to dir, confined to it): directories first, then files,
// each group by name. .git is left out; ignored entries are listed with ignored set.
func List(ctx context.Context, dir, rel string) ([]Node, error) {
	t, err := Resolve(dir, rel)
	if err != nil {
		return nil, err
	}
	d, err := OpenInside(dir, t)
	if err != nil {
		return nil, errs.E(errs.NotFound, "Directory not found: %s", t.Rel)
	}
	defer d.Close()
	if fi, err := d.Stat(); err == nil && !fi.IsDir() {
		return nil, errs.E(errs.Invalid, "path: %s is a file, not a directory", t.Rel)
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, errs.E(errs.NotFound, "Directory %s cannot be read: %v", t.Rel, err)
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	rules := rulesFor(dir, t.Rel)
	nodes := make([]Node, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if name == ".git" || name == ".DS_Store" {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			isDir = isDirPath(filepath.Join(t.Abs, name))
		}
		relPath := name
		if t.Rel != "." {
			relPath = t.Rel + "/" + name
		}
		typ := "file"
		if isDir {
			typ = "directory"
		}
		nodes = append(nodes, Node{
			Name: name, Path: relPath, Absolute: filepath.Join(t.Abs, name), Type: typ,
			Ignored: rules.Ignored(relPath, isDir),
		})
	}
	slices.SortFunc(nodes, func(a, b Node) int {
		if a.Type != b.Type {
			if a.Type == "directory" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return nodes, nil
}

// rulesFor gathers the ignore rules that apply inside the directory rel under root: root's own
// (RootRules) and the ignore files of root and every directory down to rel.
func rulesFor(root, rel string) *Rules {
	rules := RootRules(root)
	cur, base := root, ""
	read := func() {
		for _, name := range ignoreFiles {
			if b, err := os.ReadFile(filepath.Join(cur, name)); err == nil {
				rules = rules.With(base, b)
			}
		}
	}
	read()
	if rel == "." || rel == "" {
		return rules
	}
	for _, seg := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, seg)
		if base == "" {
			base = seg
		} else {
			base += "/" + seg
		}
		read()
	}
	return rules
}

func isDirPath(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
