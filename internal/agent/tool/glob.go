package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/files"
)

const searchLimit = 100

// searchSkip are directories glob and grep never descend into: version-control internals and
// installed dependencies, which would drown every result.
var searchSkip = map[string]bool{".git": true, ".hg": true, ".svn": true, "node_modules": true}

// Glob finds files by name pattern.
type Glob struct{}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func (Glob) Name() string { return "glob" }

func (Glob) Description() string {
	return `Finds files by glob pattern, newest first, up to 100.

- Patterns: * (within one path segment), ** (any number of directories), ?, [abc], {a,b}.
- A pattern without "/" matches file names at any depth ("*.go"); with "/" it matches the path relative to the search directory ("src/**/*.ts").
- path is the directory to search (default: the project directory).
- Files .gitignore or .ignore exclude are skipped, and so are .git and node_modules.`
}

func (Glob) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The glob pattern to match files against"},
    "path": {"type": "string", "description": "The directory to search in. Defaults to the project directory."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

func (Glob) Run(ctx context.Context, call *Call) (Result, error) {
	var in globInput
	if err := decodeInput("glob", call.Input, &in); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.Pattern) == "" {
		return Result{}, invalid("The glob tool needs a pattern.")
	}
	match, err := compileGlob(in.Pattern)
	if err != nil {
		return Result{}, err
	}
	t, err := locate(ctx, call, in.Path, true)
	if err != nil {
		return Result{}, err
	}
	if err := call.Gate.Check(ctx, Ask{
		Permission: "glob",
		Patterns:   []string{in.Pattern},
		Always:     []string{"*"},
		Metadata:   map[string]any{"pattern": in.Pattern, "path": t.Abs},
	}); err != nil {
		return Result{}, err
	}
	if err := requireDir(t.Abs); err != nil {
		return Result{}, err
	}

	type found struct {
		path string
		mod  time.Time
	}
	var files []found
	err = walkFiles(ctx, t.Abs, searchSkip, func(path, rel string, d fs.DirEntry) error {
		if !match(rel) {
			return nil
		}
		var mod time.Time
		if info, err := d.Info(); err == nil {
			mod = info.ModTime()
		}
		files = append(files, found{path, mod})
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	slices.SortStableFunc(files, func(a, b found) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	truncated := len(files) > searchLimit
	if truncated {
		files = files[:searchLimit]
	}
	var b strings.Builder
	if len(files) == 0 {
		b.WriteString("No files found")
	}
	for i, f := range files {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.path)
	}
	if truncated {
		fmt.Fprintf(&b, "\n\n(Results are truncated to the %d newest files. Consider using a more specific path or pattern.)", searchLimit)
	}
	return Result{
		Title:    t.Rel,
		Output:   b.String(),
		Metadata: map[string]any{"count": len(files), "truncated": truncated},
	}, nil
}

func requireDir(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
		return fmt.Errorf("Directory not found: %s", path)
	}
	if !info.IsDir() {
		return invalid("%s is a file, not a directory.", path)
	}
	return nil
}

// walkFiles calls visit for every regular file (and symlink) under root in lexical order, with its
// path relative to root in slash form. What .gitignore and .ignore files exclude is left out (the
// files package's walk, the one the file search routes use), and so are directories named in skip.
// Unreadable directories are skipped rather than failing the whole search; a cancelled context
// stops it.
func walkFiles(ctx context.Context, root string, skip map[string]bool, visit func(path, rel string, d fs.DirEntry) error) error {
	return files.Walk(ctx, root, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			if skip[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		return visit(filepath.Join(root, filepath.FromSlash(rel)), rel, d)
	})
}

// compileGlob turns a glob into a matcher of slash-separated relative paths. A pattern without a
// slash matches the last path element, as ripgrep's --glob does.
func compileGlob(pattern string) (func(rel string) bool, error) {
	pattern = strings.TrimPrefix(filepath.ToSlash(pattern), "./")
	re, err := globRegexp(pattern)
	if err != nil {
		return nil, invalid("Invalid glob pattern %q: %v", pattern, err)
	}
	if !strings.Contains(pattern, "/") {
		return func(rel string) bool { return re.MatchString(rel[strings.LastIndexByte(rel, '/')+1:]) }, nil
	}
	return re.MatchString, nil
}

func globRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	braces := 0
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '*':
			if i+1 < len(pattern) && pattern[i+1] == '*' {
				atStart := i == 0 || pattern[i-1] == '/'
				i++
				switch {
				case atStart && i+1 < len(pattern) && pattern[i+1] == '/':
					i++
					b.WriteString("(?:.*/)?")
				case atStart && i+1 == len(pattern):
					b.WriteString(".*")
				default:
					b.WriteString("[^/]*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [")
			}
			class := pattern[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		case '{':
			braces++
			b.WriteString("(?:")
		case '}':
			if braces == 0 {
				b.WriteString(`\}`)
				continue
			}
			braces--
			b.WriteString(")")
		case ',':
			if braces > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pattern[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if braces > 0 {
		return nil, fmt.Errorf("unclosed {")
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
