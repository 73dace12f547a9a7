package files

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestIgnoreRulesFollowGitignoreSemantics(t *testing.T) {
	tests := []struct {
		name    string
		rules   string
		path    string
		dir     bool
		ignored bool
	}{
		{"a name matches at any depth", "*.log", "a/b/x.log", false, true},
		{"a star does not cross a slash", "a/*.log", "a/b/x.log", false, false},
		{"a star matches within one segment", "a/*.log", "a/x.log", false, true},
		{"a leading slash anchors to the ignore file's directory", "/build", "sub/build", true, false},
		{"an anchored pattern matches at its own level", "/build", "build", true, true},
		{"a slash in the middle anchors too", "doc/frotz", "a/doc/frotz", false, false},
		{"a trailing slash matches directories only", "out/", "out", false, false},
		{"a trailing slash matches a directory", "out/", "a/out", true, true},
		{"a leading ** matches in every directory", "**/foo", "x/y/foo", false, true},
		{"a leading ** matches at the top", "**/foo", "foo", false, true},
		{"a trailing ** matches everything inside", "abc/**", "abc/d/e", false, true},
		{"a trailing ** does not match the directory itself", "abc/**", "abc", true, false},
		{"a middle ** matches zero directories", "a/**/b", "a/b", false, true},
		{"a middle ** matches several directories", "a/**/b", "a/x/y/b", false, true},
		{"a later negation re-includes", "*.log\n!keep.log", "keep.log", false, false},
		{"the last matching rule wins", "!keep.log\n*.log", "keep.log", false, true},
		{"a comment is no rule", "# *.go", "main.go", false, false},
		{"an escaped hash is a literal", `\#x`, "#x", false, true},
		{"an escaped bang is a literal", `\!x`, "!x", false, true},
		{"trailing spaces are dropped", "x.tmp   ", "x.tmp", false, true},
		{"an escaped trailing space is kept", `x\ `, "x ", false, true},
		{"a question mark is one character", "?.c", "ab.c", false, false},
		{"a class matches one of its characters", "[ab].c", "b.c", false, true},
		{"a negated class excludes its characters", "[!ab].c", "b.c", false, false},
		{"a range matches", "file[0-9]", "file7", false, true},
		{"a class never matches a slash", "a[/]b", "a/b", false, false},
		{"CRLF line endings are accepted", "*.o\r\n", "x.o", false, true},
		{"a dot is literal", "a.c", "abc", false, false},
		{"regex characters are literal", "a+(b)", "a+(b)", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := (&Rules{}).With("", []byte(tt.rules))
			if got := r.Match(tt.path, tt.dir); got != tt.ignored {
				t.Errorf("rules %q, path %q (dir %v): ignored = %v, want %v", tt.rules, tt.path, tt.dir, got, tt.ignored)
			}
		})
	}
}

func TestRulesOfASubdirectoryApplyBelowItOnly(t *testing.T) {
	r := (&Rules{}).With("sub", []byte("/gen\n*.tmp"))
	for _, tc := range []struct {
		path string
		want bool
	}{{"sub/gen", true}, {"gen", false}, {"sub/x/gen", false}, {"sub/x/a.tmp", true}, {"a.tmp", false}} {
		if got := r.Match(tc.path, true); got != tc.want {
			t.Errorf("%s: ignored = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestAFileUnderAnIgnoredDirectoryCannotBeReincluded(t *testing.T) {
	r := (&Rules{}).With("", []byte("build/\n!build/keep.txt"))
	if !r.Ignored("build/keep.txt", false) {
		t.Error("build/keep.txt is re-included although its directory is ignored (git does not)")
	}
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWalkLeavesOutWhatIgnoreFilesExclude(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".gitignore":          "*.log\nnode_modules/\n/dist\n",
		"main.go":             "",
		"debug.log":           "",
		"node_modules/x/a.js": "",
		"dist/bundle.js":      "",
		"src/dist/keep.go":    "",
		"src/.gitignore":      "gen/\n!important.log\n",
		"src/gen/out.go":      "",
		"src/important.log":   "",
		"src/other.log":       "",
		"docs/.ignore":        "draft.md\n",
		"docs/draft.md":       "",
		"docs/final.md":       "",
		".git/config":         "",
	})
	var got []string
	err := Walk(context.Background(), root, func(rel string, d fs.DirEntry) error {
		if !d.IsDir() {
			got = append(got, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".gitignore", "docs/.ignore", "docs/final.md", "main.go", "src/.gitignore", "src/dist/keep.go", "src/important.log"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("walk found %q\nwant %q", got, want)
	}
}

func TestAWalkBelowTheWorkTreeTopHonoursTheIgnoreFilesAbove(t *testing.T) {
	top := t.TempDir()
	writeTree(t, top, map[string]string{
		".git/info/exclude": "secret.txt\n",
		".gitignore":        "*.bak\npkg/vendor/\n",
		"pkg/a.go":          "",
		"pkg/a.bak":         "",
		"pkg/secret.txt":    "",
		"pkg/vendor/v.go":   "",
	})
	var got []string
	err := Walk(context.Background(), filepath.Join(top, "pkg"), func(rel string, d fs.DirEntry) error {
		if !d.IsDir() {
			got = append(got, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"a.go"}) {
		t.Errorf("walk of pkg found %q, want only a.go", got)
	}
}

// TestTheWalkAgreesWithGit builds one tree under many ignore rules, nested ignore files included,
// and compares what the walk keeps with what git itself lists as not ignored.
func TestTheWalkAgreesWithGit(t *testing.T) {
	gitPath := testenv.Program(t, "git", "apt-get install git")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		".gitignore": strings.Join([]string{
			"# build outputs", "*.o", "/bin", "out/", "!out/keep.txt", "**/gen/*.go", "docs/**/draft-*.md",
			"a/**/b", "[Tt]emp*", "?.tmp", "logs/*", "!logs/important.log", `\#hash`, "trailing   ", "sub/deep/", "*.bak/",
		}, "\n"),
		"main.o": "", "src/x.o": "", "bin/tool": "", "pkg/bin/tool": "", "out/a": "", "out/keep.txt": "",
		"gen/a.go": "", "x/gen/b.go": "", "x/gen/b.txt": "", "docs/draft-1.md": "", "docs/v1/draft-2.md": "", "docs/final.md": "",
		"a/b": "", "a/x/y/b": "", "a/c": "", "Temp1": "", "temporary": "", "TempDir/f": "", "x.tmp": "", "xy.tmp": "",
		"logs/a.log": "", "logs/important.log": "", "#hash": "", "trailing": "", "sub/deep/f": "", "deep/f": "",
		"old.bak/f": "", "file.bak": "",
		"nested/.gitignore": "*.txt\n!keep.txt\n/only-here\n", "nested/a.txt": "", "nested/keep.txt": "",
		"nested/only-here": "", "nested/inner/only-here": "", "nested/inner/b.txt": "",
		"kept/plain.go": "",
	})
	cmd := exec.Command(gitPath, "init", "-q")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	cmd = exec.Command(gitPath, "ls-files", "--others", "--exclude-standard")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(out))
	slices.Sort(want)
	var got []string
	if err := Walk(context.Background(), dir, func(rel string, d fs.DirEntry) error {
		if !d.IsDir() {
			got = append(got, rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the walk and git disagree\nwalk: %q\ngit:  %q", got, want)
	}
}
