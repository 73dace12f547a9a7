package tool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// TestMain lets this test binary serve as the sandbox helper, as the tandem binary does.
func TestMain(m *testing.M) {
	sandbox.Main()
	goleak.VerifyTestMain(m)
}

// tableGate records every Ask and answers from a table keyed by permission: a key present in
// refuse is refused with that error, everything else is allowed.
type tableGate struct {
	mu     sync.Mutex
	asks   []Ask
	refuse map[string]error
}

func (g *tableGate) Check(_ context.Context, ask Ask) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asks = append(g.asks, ask)
	return g.refuse[ask.Permission]
}

func (g *tableGate) asked() []Ask {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.asks)
}

// askFor returns the first recorded ask with that permission.
func (g *tableGate) askFor(t *testing.T, permission string) Ask {
	t.Helper()
	for _, a := range g.asked() {
		if a.Permission == permission {
			return a
		}
	}
	t.Fatalf("no %q ask among %+v", permission, g.asked())
	return Ask{}
}

//lint:ignore ST1005 mirrors the production refusal text the model sees
var errRefused = errors.New("The user rejected permission to use this specific tool call.")

// projectDir returns a fresh temporary directory with symlinks evaluated, so paths the tools
// report can be compared with it directly.
func projectDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fixtureDir copies testdata/tree into a fresh directory and adds a .git directory (which git
// cannot store inside a fixture) holding text that every search would otherwise find.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := projectDir(t)
	if err := os.CopyFS(dir, os.DirFS("testdata/tree")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".git", "config"), "func main in git internals\n")
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newCall(t *testing.T, dir string, input any) (*Call, *tableGate) {
	t.Helper()
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	gate := &tableGate{refuse: map[string]error{}}
	return &Call{
		ID:        "call_1",
		SessionID: "ses_test",
		MessageID: "msg_test",
		Agent:     "build",
		Dir:       dir,
		Input:     json.RawMessage(raw),
		Gate:      gate,
	}, gate
}

func mustRun(t *testing.T, tl Tool, call *Call) Result {
	t.Helper()
	res, err := tl.Run(context.Background(), call)
	if err != nil {
		t.Fatalf("%s: %v", tl.Name(), err)
	}
	return res
}

func TestBuiltinsHoldsEveryToolInOrder(t *testing.T) {
	set := Builtins(Options{})
	var names []string
	for _, tl := range set.All() {
		names = append(names, tl.Name())
		var schema map[string]any
		if err := json.Unmarshal(tl.Parameters(), &schema); err != nil {
			t.Errorf("%s: parameters are not JSON: %v", tl.Name(), err)
		} else if schema["type"] != "object" {
			t.Errorf("%s: parameters type = %v, want object", tl.Name(), schema["type"])
		}
		if tl.Description() == "" {
			t.Errorf("%s has no description", tl.Name())
		}
		if got, ok := set.Get(tl.Name()); !ok || got != tl {
			t.Errorf("Get(%q) = %v, %v", tl.Name(), got, ok)
		}
	}
	want := []string{"bash", "read", "write", "edit", "multiedit", "apply_patch", "list", "glob", "grep", "webfetch", "todowrite", "todoread"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if _, ok := set.Get("nope"); ok {
		t.Fatal("Get found a tool that does not exist")
	}
}

func TestSetAddReplacesInPlaceAndAppendsNewTools(t *testing.T) {
	set := NewSet(Read{}, Write{})
	set.Add(Glob{})
	set.Add(Read{})
	var names []string
	for _, tl := range set.All() {
		names = append(names, tl.Name())
	}
	if want := []string{"read", "write", "glob"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
}

func TestExternalPaths(t *testing.T) {
	dir := projectDir(t)
	outside := projectDir(t)
	writeFile(t, filepath.Join(outside, "secret.txt"), "top secret\n")
	writeFile(t, filepath.Join(dir, "inside.txt"), "fine\n")
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		tool        Tool
		input       any
		wantPattern string // "" means no external_directory ask
		sideEffect  string // a path that must not exist after a refusal
	}{
		{"a relative path inside the directory asks nothing extra", Read{}, map[string]any{"filePath": "inside.txt"}, "", ""},
		{"an absolute path outside asks for its parent directory", Read{}, map[string]any{"filePath": filepath.Join(outside, "secret.txt")}, outside + "/*", ""},
		{"a dot-dot path is cleaned and asked for", Read{}, map[string]any{"filePath": "../" + filepath.Base(outside) + "/secret.txt"}, outside + "/*", ""},
		{"a symlink that leaves the directory is asked for", Read{}, map[string]any{"filePath": "escape/secret.txt"}, outside + "/*", ""},
		{"writing through a symlink that leaves the directory is asked for", Write{}, map[string]any{"filePath": "escape/new/file.txt", "content": "x"}, outside + "/new/*", filepath.Join(outside, "new")},
		{"editing outside is asked for", Edit{}, map[string]any{"filePath": filepath.Join(outside, "secret.txt"), "oldString": "top", "newString": "bottom"}, outside + "/*", ""},
		{"listing outside asks for that directory itself", List{}, map[string]any{"path": outside}, outside + "/*", ""},
		{"globbing outside asks for that directory", Glob{}, map[string]any{"pattern": "*.txt", "path": outside}, outside + "/*", ""},
		{"grepping outside asks for that directory", Grep{}, map[string]any{"pattern": "secret", "path": outside}, outside + "/*", ""},
		{"a bash workdir outside asks for it", &Bash{}, map[string]any{"command": "touch made-by-bash", "workdir": outside}, outside + "/*", filepath.Join(outside, "made-by-bash")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, gate := newCall(t, dir, tt.input)
			gate.refuse["external_directory"] = errRefused
			_, err := tt.tool.Run(context.Background(), call)
			if tt.wantPattern == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				for _, a := range gate.asked() {
					if a.Permission == "external_directory" {
						t.Fatalf("unexpected external_directory ask %+v", a)
					}
				}
				return
			}
			if err != errRefused {
				t.Fatalf("Run error = %v, want the gate's refusal unchanged", err)
			}
			asks := gate.asked()
			if len(asks) != 1 {
				t.Fatalf("asks = %+v, want only the external_directory one", asks)
			}
			if asks[0].Permission != "external_directory" || !slices.Equal(asks[0].Patterns, []string{tt.wantPattern}) || !slices.Equal(asks[0].Always, []string{tt.wantPattern}) {
				t.Fatalf("ask = %+v, want external_directory %q", asks[0], tt.wantPattern)
			}
			if tt.sideEffect != "" {
				if _, err := os.Stat(tt.sideEffect); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s exists after a refusal (stat error %v)", tt.sideEffect, err)
				}
			}
			if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "top secret\n" {
				t.Fatalf("secret.txt changed to %q", got)
			}
		})
	}

	t.Run("an allowed external read goes ahead", func(t *testing.T) {
		call, gate := newCall(t, dir, map[string]any{"filePath": filepath.Join(outside, "secret.txt")})
		res := mustRun(t, Read{}, call)
		if !strings.Contains(res.Output, "1: top secret") {
			t.Fatalf("output = %q", res.Output)
		}
		if got := gate.asked(); len(got) != 2 || got[0].Permission != "external_directory" || got[1].Permission != "read" {
			t.Fatalf("asks = %+v, want external_directory then read", got)
		}
	})
}

func TestToolsNeedAnAbsoluteSessionDirectory(t *testing.T) {
	for _, dir := range []string{"", "relative/dir"} {
		call, gate := newCall(t, dir, map[string]any{"filePath": "x.txt"})
		_, err := Read{}.Run(context.Background(), call)
		if err == nil || !strings.Contains(err.Error(), "no absolute working directory") {
			t.Fatalf("Dir %q: err = %v", dir, err)
		}
		if len(gate.asked()) != 0 {
			t.Fatalf("Dir %q reached the gate", dir)
		}
	}
}
