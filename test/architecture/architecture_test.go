// Package architecture holds the tests that keep the house in the shape ARCHITECTURE.md draws: imports
// run one way between the layers, and the root stays small enough to read at a glance.
package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

const module = "github.com/tandem-dev/tandem"

// layers ranks the folders: a package may import its own layer and those below it, never one above.
// api/ is the wire types everyone shares, so it sits below everything; client/ is the public Go client
// that doors (the TUI, the ACP and Codex bridges) drive tandem through.
var layers = []struct {
	prefix string
	rank   int
}{
	{"api", 0},
	{"internal/base/", 1},
	{"internal/infra/", 2},
	{"internal/agent/", 3},
	{"client", 4},
	{"internal/door/", 5},
	{"internal/app", 6},
	{"cmd/", 7},
}

// rank is the layer of a package path relative to the module, or -1 when it is in none (web/, deploy/,
// test suites, internal/testenv), which the layer rule does not cover.
func rank(rel string) int {
	for _, l := range layers {
		if rel == strings.TrimSuffix(l.prefix, "/") || strings.HasPrefix(rel, l.prefix) ||
			(!strings.HasSuffix(l.prefix, "/") && strings.HasPrefix(rel, l.prefix+"/")) {
			return l.rank
		}
	}
	return -1
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// modulePackages lists every package of the module with its non-test imports, as `go list` sees them.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = testenv.ModuleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
	}
	return pkgs
}

func TestImportsRunOneWay(t *testing.T) {
	for _, p := range modulePackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		from := rank(rel)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			impRel := strings.TrimPrefix(imp, module+"/")
			if impRel == "internal/testenv" {
				t.Errorf("%s imports internal/testenv outside its tests", rel)
				continue
			}
			if from < 0 {
				continue
			}
			if to := rank(impRel); to > from {
				t.Errorf("%s imports %s, a layer above it", rel, impRel)
			}
		}
	}
}

func TestTheRootStaysSmall(t *testing.T) {
	entries, err := os.ReadDir(testenv.ModuleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || ignoredBuildOutput(e.Name()) {
			continue
		}
		names = append(names, e.Name())
	}
	if len(names) > 16 {
		t.Errorf("the root holds %d entries (%s); keep it at 16 or fewer so the architecture shows", len(names), strings.Join(names, ", "))
	}
}

// ignoredBuildOutput is what .gitignore keeps out of the repository at the root: a local build.
func ignoredBuildOutput(name string) bool {
	return name == "bin" || name == "tandem" || filepath.Ext(name) == ".test"
}

// TestMainHoldsOnlyTheCommands keeps package main what a newcomer reads first and quickly: the cobra
// commands, which parse flags and call into internal/. The wiring lives in internal/app, the doors in
// internal/door, and the tests that drive the real binary in test/integration, so no test file of
// package main grows into a suite of its own.
func TestMainHoldsOnlyTheCommands(t *testing.T) {
	const maxCode, maxTest = 600, 300
	root := testenv.ModuleRoot(t)
	code := 0
	err := filepath.WalkDir(filepath.Join(root, "cmd"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".go" {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		if f.Name.Name != "main" {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		lines := bytes.Count(src, []byte("\n"))
		if strings.HasSuffix(path, "_test.go") {
			if lines > maxTest {
				t.Errorf("%s is a package main test of %d lines; keep it at %d or fewer (tests of the real binary belong in test/integration)", rel, lines, maxTest)
			}
			return nil
		}
		if filepath.Dir(rel) == filepath.Join("cmd", "tandem") {
			code += lines
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if code == 0 {
		t.Fatal("found no code in cmd/tandem")
	}
	if code > maxCode {
		t.Errorf("cmd/tandem holds %d lines of non-test code; keep it at %d or fewer: move logic into internal/app or a door", code, maxCode)
	}
}
