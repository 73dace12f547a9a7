package tool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// grepMaxLineChars cuts long matching lines (minified files) so one match cannot fill the output.
const grepMaxLineChars = 2000

// Grep searches file contents with a regular expression.
type Grep struct{}

type grepInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Include string `json:"include"`
}

func (Grep) Name() string { return "grep" }

func (Grep) Description() string {
	return `Searches file contents with a regular expression (Go RE2 syntax: no backreferences or lookaround).

- Returns matching lines as "path:line: text", up to 100 matches.
- path is the directory (or single file) to search (default: the project directory).
- include filters file names with a glob ("*.go", "*.{ts,tsx}", "src/**/*.js").
- Binary files, files .gitignore or .ignore exclude, .git and node_modules are skipped.`
}

func (Grep) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regex pattern to search for in file contents"},
    "path": {"type": "string", "description": "The directory to search in. Defaults to the project directory."},
    "include": {"type": "string", "description": "File pattern to include in the search (e.g. \"*.js\", \"*.{ts,tsx}\")"}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

func (Grep) Run(ctx context.Context, call *Call) (Result, error) {
	var in grepInput
	if err := decodeInput("grep", call.Input, &in); err != nil {
		return Result{}, err
	}
	if in.Pattern == "" {
		return Result{}, invalid("The grep tool needs a pattern.")
	}
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return Result{}, invalid("Invalid regular expression %q: %v. The pattern uses Go RE2 syntax.", in.Pattern, err)
	}
	include := func(string) bool { return true }
	if in.Include != "" {
		if include, err = compileGlob(in.Include); err != nil {
			return Result{}, err
		}
	}
	info, statErr := os.Stat(absPath(call.Dir, in.Path))
	single := statErr == nil && !info.IsDir()
	t, err := locate(ctx, call, in.Path, !single)
	if err != nil {
		return Result{}, err
	}
	if err := call.Gate.Check(ctx, Ask{
		Permission: "grep",
		Patterns:   []string{in.Pattern},
		Always:     []string{"*"},
		Metadata:   map[string]any{"pattern": in.Pattern, "path": t.Abs, "include": in.Include},
	}); err != nil {
		return Result{}, err
	}
	if statErr != nil {
		//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
		return Result{}, fmt.Errorf("Path not found: %s", t.Abs)
	}

	var matches []string
	truncated := false
	search := func(path string) error {
		more, err := grepFile(path, re, searchLimit-len(matches), &matches)
		if err != nil {
			return nil // unreadable files are skipped like binary ones
		}
		if more {
			truncated = true
			return fs.SkipAll
		}
		return nil
	}
	if single {
		err = search(t.Abs)
	} else {
		err = walkFiles(ctx, t.Abs, searchSkip, func(path, rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() || !include(rel) {
				return nil
			}
			return search(path)
		})
	}
	if err != nil && !errors.Is(err, fs.SkipAll) {
		return Result{}, err
	}
	var b strings.Builder
	if len(matches) == 0 {
		b.WriteString("No matches found")
	} else {
		fmt.Fprintf(&b, "Found %d matches\n%s", len(matches), strings.Join(matches, "\n"))
	}
	if truncated {
		fmt.Fprintf(&b, "\n\n(Results are truncated to the first %d matches. Consider using a more specific path, include filter or pattern.)", searchLimit)
	}
	return Result{
		Title:    in.Pattern,
		Output:   b.String(),
		Metadata: map[string]any{"matches": len(matches), "truncated": truncated},
	}, nil
}

// grepFile appends up to room "path:line: text" matches of re in one text file; more says whether
// the file had further matches beyond room. Binary files yield nothing.
func grepFile(path string, re *regexp.Regexp, room int, matches *[]string) (more bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64*1024)
	sample, _ := br.Peek(8 * 1024)
	if bytes.IndexByte(sample, 0) >= 0 {
		return false, nil
	}
	display := filepath.ToSlash(path)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if re.Match(line) {
				if room == 0 {
					return true, nil
				}
				text := string(line)
				if cut := utf8Prefix(text, grepMaxLineChars); cut < len(text) {
					text = text[:cut] + "..."
				}
				*matches = append(*matches, fmt.Sprintf("%s:%d: %s", display, n, text))
				room--
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
	}
}
