package gitcmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		repo Repo
		args []string
		want []string
	}{
		{"a diff gets no external diff, no textconv and no git inside submodules", Repo{}, []string{"diff", "--numstat", "HEAD"},
			[]string{"--no-pager", "diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--numstat", "HEAD"}},
		{"a status starts no git inside submodules", Repo{}, []string{"status", "--short"},
			[]string{"--no-pager", "status", "--ignore-submodules=dirty", "--short"}},
		{"log and show get no external diff and no textconv", Repo{}, []string{"show", "HEAD"},
			[]string{"--no-pager", "show", "--no-ext-diff", "--no-textconv", "HEAD"}},
		{"the diff plumbing gets no external diff and no textconv", Repo{}, []string{"diff-tree", "-p", "a", "b"},
			[]string{"--no-pager", "diff-tree", "--no-ext-diff", "--no-textconv", "-p", "a", "b"}},
		{"a command without diff machinery is left as it is", Repo{}, []string{"ls-files", "-z"},
			[]string{"--no-pager", "ls-files", "-z"}},
		{"a repository apart from its work tree is named before the subcommand", Repo{GitDir: "/d/shadow", WorkTree: "/w"}, []string{"write-tree"},
			[]string{"--no-pager", "--git-dir=/d/shadow", "--work-tree=/w", "write-tree"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Args(tc.repo, tc.args); !slices.Equal(got, tc.want) {
				t.Errorf("Args(%q)\n got %q\nwant %q", tc.args, got, tc.want)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	base := slices.Clone(safety)
	for _, tc := range []struct {
		name string
		repo Repo
		keys []string
		want []Setting // after the safety settings
	}{
		{"nothing configured leaves the safety settings alone", Repo{}, nil, nil},
		{"a filter driver gets empty commands and is no longer required", Repo{},
			[]string{"filter.lfs.clean", "filter.lfs.smudge", "filter.lfs.required"},
			[]Setting{{"filter.lfs.clean", ""}, {"filter.lfs.smudge", ""}, {"filter.lfs.process", ""}, {"filter.lfs.required", "false"}}},
		{"a driver whose name holds dots, = and capitals keeps its name", Repo{}, []string{"filter.A.b=c.process"},
			[]Setting{{"filter.A.b=c.clean", ""}, {"filter.A.b=c.smudge", ""}, {"filter.A.b=c.process", ""}, {"filter.A.b=c.required", "false"}}},
		{"a configured transport is never allowed", Repo{}, []string{"protocol.ext.allow", "protocol.allow"},
			[]Setting{{"protocol.ext.allow", "never"}}},
		{"other sections are not touched", Repo{}, []string{"filter.clean", "core.pager"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := append(slices.Clone(base), tc.want...)
			if got := settings(tc.repo, tc.keys); !slices.Equal(got, want) {
				t.Errorf("settings(%q)\n got %q\nwant %q", tc.keys, got, want)
			}
		})
	}
	t.Run("the caller's settings come first, so the safety settings win over them", func(t *testing.T) {
		got := settings(Repo{Config: []string{"core.hooksPath=.githooks"}}, nil)
		if got[0] != (Setting{"core.hooksPath", ".githooks"}) || !slices.Contains(got[1:], Setting{"core.hooksPath", "/dev/null"}) {
			t.Errorf("settings: %q", got)
		}
	})
}

func TestEnv(t *testing.T) {
	environ := []string{"HOME=/home/u", "GIT_DIR=/elsewhere/.git", "GIT_CONFIG_PARAMETERS='core.pager'='x'",
		"GIT_EXTERNAL_DIFF=evil", "GIT_CONFIG_COUNT=1", "LC_ALL=de_DE.UTF-8", "PATH=/usr/bin"}
	got := Env(environ, Repo{NoSystemConfig: true}, []Setting{{"core.fsmonitor", "false"}, {"filter.a=b.clean", ""}})
	want := []string{"HOME=/home/u", "PATH=/usr/bin", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_LAZY_FETCH=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=false", "GIT_CONFIG_KEY_1=filter.a=b.clean", "GIT_CONFIG_VALUE_1="}
	if !slices.Equal(got, want) {
		t.Errorf("Env\n got %q\nwant %q", got, want)
	}
}

func TestConfiguredKeys(t *testing.T) {
	out := []byte("filter.x.clean\ntouch m; cat\x00filter.x.required\x00protocol.ext.allow\nalways\x00")
	if got, want := configuredKeys(out), []string{"filter.x.clean", "filter.x.required", "protocol.ext.allow"}; !slices.Equal(got, want) {
		t.Errorf("configuredKeys: %q, want %q", got, want)
	}
}

// gitIn runs the test's own git (not gitcmd's) in dir.
func gitIn(t *testing.T, dir string, args ...string) { t.Helper(); testenv.Git(t, dir, args...) }

// TestOpenFindsEveryDriverGitWouldRun builds a repository whose filter drivers are configured
// directly (one with "=" in its name, which git -c could not override), through include.path and
// through includeIf, and checks with the real git that none of
// their programs runs while the file they filter still reads as modified.
func TestOpenFindsEveryDriverGitWouldRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo, marks := t.TempDir(), t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	files := map[string]string{
		".gitattributes": "a.txt filter=direct\nb.txt filter=included\nc.txt filter=conditional\nd.txt filter=eq=ual\n",
		"a.txt":          "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-qm", "start")
	mark := func(name string) string { return "touch " + filepath.Join(marks, name) + "; cat" }
	gitIn(t, repo, "config", "filter.direct.clean", mark("direct"))
	gitIn(t, repo, "config", "filter.direct.required", "true")
	gitIn(t, repo, "config", "filter.eq=ual.clean", mark("eq"))
	included := "[filter \"included\"]\n\tclean = " + mark("included") + "\n\trequired = true\n"
	conditional := "[filter \"conditional\"]\n\tprocess = " + mark("conditional") + "\n"
	for name, content := range map[string]string{"included.config": included, "conditional.config": conditional} {
		if err := os.WriteFile(filepath.Join(repo, ".git", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, repo, "config", "include.path", "included.config")
	gitIn(t, repo, "config", "includeIf.onbranch:main.path", "conditional.config")
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte("changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx := context.Background()
	g, err := Open(ctx, Repo{Dir: repo})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "--porcelain"}, {"diff", "HEAD"}, {"add", "--dry-run", "."}, {"hash-object", "a.txt", "b.txt", "c.txt", "d.txt"}} {
		if _, err := g.Output(ctx, args...); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	out, err := g.Output(ctx, "diff", "--name-only", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{"a.txt", "b.txt", "c.txt", "d.txt"}) {
		t.Errorf("changed files: %q", got)
	}
	if ran, _ := os.ReadDir(marks); len(ran) != 0 {
		t.Errorf("a driver ran: %v", ran)
	}
	// The same repository, read by git as it is, runs each of them: the fixture is live.
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		cmd := exec.Command("git", "hash-object", name)
		cmd.Dir = repo
		_ = cmd.Run() // a required driver that fails fails the command; the mark is what counts
	}
	for _, name := range []string{"direct", "included", "conditional", "eq"} {
		if _, err := os.Stat(filepath.Join(marks, name)); err != nil {
			t.Errorf("plain git did not run the %s driver: the fixture proves nothing", name)
		}
	}
}
