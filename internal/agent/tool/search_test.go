package tool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestListShowsATree(t *testing.T) {
	dir := fixtureDir(t)
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"the whole project, without .git and node_modules", map[string]any{},
			dir + "/\n  data/\n    blob.bin\n  docs/\n    guide.md\n  src/\n    util/\n      strings.go\n      strings_test.go\n    main.go\n  web/\n    app.ts\n    app.tsx\n  README.md\n"},
		{"a subdirectory", map[string]any{"path": "src"},
			dir + "/src/\n  util/\n    strings.go\n    strings_test.go\n  main.go\n"},
		{"ignore patterns leave out files and directories", map[string]any{"ignore": []string{"*_test.go", "web/", "data", "*.md"}},
			dir + "/\n  src/\n    util/\n      strings.go\n    main.go\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, gate := newCall(t, dir, tt.input)
			res := mustRun(t, List{}, call)
			if res.Output != tt.want {
				t.Fatalf("output:\n%s\nwant:\n%s", res.Output, tt.want)
			}
			ask := gate.askFor(t, "list")
			wantPattern := "."
			if p, ok := tt.input["path"].(string); ok {
				wantPattern = p
			}
			if !slices.Equal(ask.Patterns, []string{wantPattern}) {
				t.Fatalf("ask = %+v", ask)
			}
		})
	}
}

func TestListStopsAtOneHundredFiles(t *testing.T) {
	dir := projectDir(t)
	for i := range 120 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), "")
	}
	call, _ := newCall(t, dir, map[string]any{})
	res := mustRun(t, List{}, call)
	if res.Metadata["count"] != 100 || res.Metadata["truncated"] != true {
		t.Fatalf("metadata = %+v", res.Metadata)
	}
	if !strings.Contains(res.Output, "f099.txt") || strings.Contains(res.Output, "f100.txt") {
		t.Fatal("the listing is not the first 100 files")
	}
}

func TestGlobFindsFiles(t *testing.T) {
	dir := fixtureDir(t)
	tests := []struct {
		name  string
		input map[string]any
		want  []string // relative to dir; empty means "No files found"
	}{
		{"a bare pattern matches names at any depth", map[string]any{"pattern": "*.go"}, []string{"src/main.go", "src/util/strings.go", "src/util/strings_test.go"}},
		{"** spans directories", map[string]any{"pattern": "src/**/*.go"}, []string{"src/main.go", "src/util/strings.go", "src/util/strings_test.go"}},
		{"a single * stays within one directory", map[string]any{"pattern": "src/*.go"}, []string{"src/main.go"}},
		{"braces give alternatives", map[string]any{"pattern": "*.{ts,tsx}"}, []string{"web/app.ts", "web/app.tsx"}},
		{"character classes and ? work", map[string]any{"pattern": "app.t[s]?"}, []string{"web/app.tsx"}},
		{"the path narrows the search", map[string]any{"pattern": "*", "path": "docs"}, []string{"docs/guide.md"}},
		{".git and node_modules are skipped", map[string]any{"pattern": "{config,index.js}"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, gate := newCall(t, dir, tt.input)
			res := mustRun(t, Glob{}, call)
			var got []string
			if res.Output != "No files found" {
				for _, line := range strings.Split(res.Output, "\n") {
					got = append(got, strings.TrimPrefix(line, dir+"/"))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("found %q, want %q", got, tt.want)
			}
			if res.Metadata["count"] != len(tt.want) {
				t.Fatalf("count = %v", res.Metadata["count"])
			}
			if ask := gate.askFor(t, "glob"); !slices.Equal(ask.Patterns, []string{tt.input["pattern"].(string)}) {
				t.Fatalf("ask = %+v", ask)
			}
		})
	}
}

func TestGlobListsNewestFirst(t *testing.T) {
	dir := projectDir(t)
	now := time.Now()
	for i, name := range []string{"old.txt", "new.txt", "mid.txt"} {
		path := filepath.Join(dir, name)
		writeFile(t, path, "")
		age := map[int]time.Duration{0: 3 * time.Hour, 1: 0, 2: time.Hour}[i]
		if err := os.Chtimes(path, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	call, _ := newCall(t, dir, map[string]any{"pattern": "*.txt"})
	res := mustRun(t, Glob{}, call)
	want := strings.Join([]string{dir + "/new.txt", dir + "/mid.txt", dir + "/old.txt"}, "\n")
	if res.Output != want {
		t.Fatalf("output = %q, want %q", res.Output, want)
	}
}

func TestGlobErrors(t *testing.T) {
	dir := fixtureDir(t)
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"an empty pattern", map[string]any{"pattern": ""}, "needs a pattern"},
		{"an unclosed brace", map[string]any{"pattern": "*.{go"}, "Invalid glob pattern"},
		{"an unclosed bracket", map[string]any{"pattern": "[ab"}, "Invalid glob pattern"},
		{"a path that is a file", map[string]any{"pattern": "*", "path": "README.md"}, "is a file, not a directory"},
		{"a path that does not exist", map[string]any{"pattern": "*", "path": "nowhere"}, "Directory not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, dir, tt.input)
			_, err := Glob{}.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestGrepFindsLines(t *testing.T) {
	dir := fixtureDir(t)
	tests := []struct {
		name  string
		input map[string]any
		want  []string // "rel:line: text"; empty means no matches
	}{
		{"matches across the tree, skipping binary, .git and node_modules", map[string]any{"pattern": `func main|function main`},
			[]string{"src/main.go:5: func main() {", "web/app.ts:1: export function main(): string {"}},
		{"include filters by file name", map[string]any{"pattern": "main", "include": "*.{ts,tsx}"},
			[]string{"web/app.ts:1: export function main(): string {", "web/app.tsx:1: export const App = () => <div>main</div>;"}},
		{"the path narrows the search", map[string]any{"pattern": `\bReverse\(`, "path": "src/util"},
			[]string{"src/util/strings.go:4: func Reverse(s string) string {", `src/util/strings_test.go:6: 	if Reverse("ab") != "ba" {`}},
		{"a file path searches that file", map[string]any{"pattern": "^Run", "path": "docs/guide.md"},
			[]string{"docs/guide.md:4: Run main to start."}},
		{"no match says so", map[string]any{"pattern": "zebra"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, gate := newCall(t, dir, tt.input)
			res := mustRun(t, Grep{}, call)
			var got []string
			if res.Output != "No matches found" {
				lines := strings.Split(res.Output, "\n")
				if lines[0] != fmt.Sprintf("Found %d matches", len(lines)-1) {
					t.Fatalf("header = %q", lines[0])
				}
				for _, line := range lines[1:] {
					got = append(got, strings.TrimPrefix(line, dir+"/"))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("found %q, want %q", got, tt.want)
			}
			if ask := gate.askFor(t, "grep"); !slices.Equal(ask.Patterns, []string{tt.input["pattern"].(string)}) {
				t.Fatalf("ask = %+v", ask)
			}
		})
	}
}

func TestGrepCapsMatches(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "a.txt"), strings.Repeat("hit\n", 80))
	writeFile(t, filepath.Join(dir, "b.txt"), strings.Repeat("hit\n", 80))
	call, _ := newCall(t, dir, map[string]any{"pattern": "hit"})
	res := mustRun(t, Grep{}, call)
	if res.Metadata["matches"] != 100 || res.Metadata["truncated"] != true {
		t.Fatalf("metadata = %+v", res.Metadata)
	}
	if !strings.HasPrefix(res.Output, "Found 100 matches\n") || !strings.Contains(res.Output, "(Results are truncated") {
		t.Fatalf("output head/tail = %q / %q", res.Output[:30], res.Output[len(res.Output)-80:])
	}
}

func TestGrepErrors(t *testing.T) {
	dir := fixtureDir(t)
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"an invalid regular expression", map[string]any{"pattern": "(a"}, "Invalid regular expression"},
		{"a lookahead, which RE2 lacks", map[string]any{"pattern": "a(?=b)"}, "Go RE2 syntax"},
		{"an empty pattern", map[string]any{"pattern": ""}, "needs a pattern"},
		{"a path that does not exist", map[string]any{"pattern": "a", "path": "nowhere"}, "Path not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, dir, tt.input)
			_, err := Grep{}.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func BenchmarkGrepFixture(b *testing.B) {
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/tree")); err != nil {
		b.Fatal(err)
	}
	call := &Call{Dir: dir, Gate: allowAll{}, Input: []byte(`{"pattern":"Reverse"}`)}
	for b.Loop() {
		if _, err := (Grep{}).Run(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}

// allowAll lets everything through without recording, for benchmarks.
type allowAll struct{}

func (allowAll) Check(context.Context, Ask) error { return nil }

func TestSearchToolsLeaveOutWhatGitignoreExcludes(t *testing.T) {
	dir := fixtureDir(t)
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\nbuild/\n")
	writeFile(t, filepath.Join(dir, "build", "gen.go"), "package gen // func main\n")
	writeFile(t, filepath.Join(dir, "src", "trace.log"), "func main\n")
	writeFile(t, filepath.Join(dir, "src", ".gitignore"), "util/strings_test.go\n")
	tests := []struct {
		name  string
		tool  Tool
		input map[string]any
	}{
		{"list", List{}, map[string]any{}},
		{"glob", Glob{}, map[string]any{"pattern": "**"}},
		{"grep", Grep{}, map[string]any{"pattern": "func|package|main"}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" skips ignored files", func(t *testing.T) {
			call, _ := newCall(t, dir, tt.input)
			res := mustRun(t, tt.tool, call)
			for _, gone := range []string{"gen.go", "trace.log", "strings_test.go"} {
				if strings.Contains(res.Output, gone) {
					t.Errorf("%s is listed although ignored:\n%s", gone, res.Output)
				}
			}
			if tt.name != "grep" && !strings.Contains(res.Output, "strings.go") {
				t.Errorf("src/util/strings.go is missing:\n%s", res.Output)
			}
		})
	}
}

func TestAnIgnoredDirectoryNamedExplicitlyIsStillSearched(t *testing.T) {
	dir := fixtureDir(t)
	writeFile(t, filepath.Join(dir, ".gitignore"), "build/\n")
	writeFile(t, filepath.Join(dir, "build", "gen.go"), "package gen\n")
	call, _ := newCall(t, dir, map[string]any{"pattern": "*.go", "path": "build"})
	if res := mustRun(t, Glob{}, call); !strings.Contains(res.Output, "gen.go") {
		t.Errorf("glob in build/ found nothing:\n%s", res.Output)
	}
}
