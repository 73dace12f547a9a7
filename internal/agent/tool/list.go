package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// listSkip are directories the list tool leaves out: generated, installed or cached trees that
// would use up the listing without telling the model anything about the project.
var listSkip = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "node_modules": true, "__pycache__": true, "dist": true,
	"build": true, "target": true, "vendor": true, "bin": true, "obj": true, ".idea": true, ".vscode": true,
	".zig-cache": true, "zig-out": true, ".coverage": true, "coverage": true, "tmp": true, "temp": true,
	".cache": true, "cache": true, "logs": true, ".venv": true, "venv": true, "env": true,
}

// List shows a directory tree.
type List struct{}

type listInput struct {
	Path   string   `json:"path"`
	Ignore []string `json:"ignore"`
}

func (List) Name() string { return "list" }

func (List) Description() string {
	return `Lists files under a directory as an indented tree (directories first), up to 100 files.

- path is absolute or relative to the project directory (default: the project directory).
- ignore holds extra glob patterns to leave out ("*.log", "docs/**").
- Files .gitignore or .ignore exclude are left out, and so are .git, node_modules, build outputs, caches and virtualenvs.
- Prefer glob and grep when you know what you are looking for.`
}

func (List) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The directory to list. Defaults to the project directory."},
    "ignore": {"type": "array", "items": {"type": "string"}, "description": "List of glob patterns to ignore"}
  },
  "additionalProperties": false
}`)
}

func (List) Run(ctx context.Context, call *Call) (Result, error) {
	var in listInput
	if err := decodeInput("list", call.Input, &in); err != nil {
		return Result{}, err
	}
	var ignores []func(string) bool
	for _, p := range in.Ignore {
		m, err := compileGlob(strings.TrimSuffix(p, "/"))
		if err != nil {
			return Result{}, err
		}
		ignores = append(ignores, m)
	}
	t, err := locate(ctx, call, in.Path, true)
	if err != nil {
		return Result{}, err
	}
	if err := call.Gate.Check(ctx, Ask{
		Permission: "list",
		Patterns:   []string{t.Rel},
		Always:     []string{"*"},
		Metadata:   map[string]any{"path": t.Abs},
	}); err != nil {
		return Result{}, err
	}
	if err := requireDir(t.Abs); err != nil {
		return Result{}, err
	}

	ignored := func(rel string) bool {
		for _, m := range ignores {
			if m(rel) {
				return true
			}
		}
		return false
	}
	var files []string
	truncated := false
	err = walkFiles(ctx, t.Abs, listSkip, func(_, rel string, _ fs.DirEntry) error {
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if ignored(dir) {
				return nil
			}
		}
		if ignored(rel) {
			return nil
		}
		if len(files) == searchLimit {
			truncated = true
			return fs.SkipAll
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(t.Abs, "/") + "/\n")
	renderTree(&b, files)
	if truncated {
		fmt.Fprintf(&b, "\n(Showing the first %d files. Use a more specific path or ignore patterns to see others.)\n", searchLimit)
	}
	return Result{
		Title:    t.Rel,
		Output:   b.String(),
		Metadata: map[string]any{"count": len(files), "truncated": truncated},
	}, nil
}

// renderTree writes files (slash-separated relative paths) as a tree indented two spaces a level,
// each directory's subdirectories before its files, both sorted.
func renderTree(b *strings.Builder, files []string) {
	children := map[string][]string{} // dir -> subdirectories
	leaves := map[string][]string{}   // dir -> file names
	known := map[string]bool{".": true}
	for _, f := range files {
		dir := path.Dir(f)
		leaves[dir] = append(leaves[dir], path.Base(f))
		for d := dir; !known[d]; d = path.Dir(d) {
			known[d] = true
			children[path.Dir(d)] = append(children[path.Dir(d)], d)
		}
	}
	var render func(dir string, depth int)
	render = func(dir string, depth int) {
		indent := strings.Repeat("  ", depth+1)
		subdirs := children[dir]
		slices.Sort(subdirs)
		for _, sub := range subdirs {
			b.WriteString(indent + path.Base(sub) + "/\n")
			render(sub, depth+1)
		}
		names := leaves[dir]
		slices.Sort(names)
		for _, name := range names {
			b.WriteString(indent + name + "\n")
		}
	}
	render(".", 0)
}
