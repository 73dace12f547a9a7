package files

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// gitRepo makes a git repository in a temp directory with files committed, then applies the
// uncommitted files on top.
func gitRepo(t *testing.T, committed, uncommitted map[string]string) string {
	t.Helper()
	testenv.Program(t, "git", "apt-get install git")
	dir := t.TempDir()
	writeTree(t, dir, committed)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	run("add", "-A")
	run("commit", "-q", "-m", "init")
	writeTree(t, dir, uncommitted)
	return dir
}

func TestAGitListingHasTrackedAndUntrackedFilesButNotIgnoredOrDeletedOnes(t *testing.T) {
	dir := gitRepo(t, map[string]string{
		".gitignore": "*.log\nbuild/\n",
		"main.go":    "package main\n",
		"gone.go":    "",
		"pkg/a.go":   "",
	}, map[string]string{
		"new.go":        "",
		"debug.log":     "",
		"build/out.bin": "",
	})
	if err := os.Remove(filepath.Join(dir, "gone.go")); err != nil {
		t.Fatal(err)
	}
	l, err := NewIndex().Listing(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Git {
		t.Error("the listing was not read from git")
	}
	if want := []string{".gitignore", "main.go", "new.go", "pkg/a.go"}; !slices.Equal(l.Files, want) {
		t.Errorf("files %q, want %q", l.Files, want)
	}
	if want := []string{"pkg/"}; !slices.Equal(l.Dirs, want) {
		t.Errorf("dirs %q, want %q", l.Dirs, want)
	}
}

func TestTheIndexNoticesANewFileAndKeepsAnUnchangedListing(t *testing.T) {
	for _, tc := range []struct {
		name string
		git  bool
	}{{"in a git work tree", true}, {"in a plain directory", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var dir string
			if tc.git {
				dir = gitRepo(t, map[string]string{"a/one.go": ""}, nil)
			} else {
				dir = t.TempDir()
				writeTree(t, dir, map[string]string{"a/one.go": ""})
			}
			ix := &Index{}
			ctx := context.Background()
			first, err := ix.Listing(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ix.Listing(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if again != first {
				t.Error("an unchanged tree was listed again instead of served from the index")
			}
			// A new file in an existing subdirectory changes only that directory's mtime.
			time.Sleep(10 * time.Millisecond)
			writeTree(t, dir, map[string]string{"a/two.go": ""})
			after, err := ix.Listing(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(after.Files, "a/two.go") {
				t.Errorf("after creating a/two.go the listing is %q", after.Files)
			}
		})
	}
}

func TestTheIndexTrustsAListingForRecheck(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"one.go": ""})
	ix := &Index{Recheck: time.Hour}
	ctx := context.Background()
	if _, err := ix.Listing(ctx, dir); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"two.go": ""})
	l, _ := ix.Listing(ctx, dir)
	if slices.Contains(l.Files, "two.go") {
		t.Error("the listing was checked again within Recheck")
	}
	ix.Invalidate(dir)
	l, _ = ix.Listing(ctx, dir)
	if !slices.Contains(l.Files, "two.go") {
		t.Error("Invalidate did not make the index read the tree again")
	}
}

func TestARepositoryInsideTheWorkTreeIsListedAsADirectory(t *testing.T) {
	dir := gitRepo(t, map[string]string{"main.go": ""}, nil)
	inner := filepath.Join(dir, "vendor", "lib")
	writeTree(t, inner, map[string]string{"lib.go": ""})
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = inner
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	l, err := NewIndex().Listing(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Files, []string{"main.go"}) || !slices.Equal(l.Dirs, []string{"vendor/", "vendor/lib/"}) {
		t.Errorf("files %q dirs %q", l.Files, l.Dirs)
	}
}

func TestAnImageWithoutExtensionIsRecognisedByItsSignature(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"logo": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "notes": "BMW and GIF89a are words here\n"})
	c, err := Read(context.Background(), dir, "logo")
	if err != nil {
		t.Fatal(err)
	}
	if c.MimeType != "image/png" || c.Encoding != "base64" {
		t.Errorf("logo: %+v", c)
	}
	c, err = Read(context.Background(), dir, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if c.Type != "text" || c.Encoding != "" || c.Content != "BMW and GIF89a are words here\n" {
		t.Errorf("notes: %+v", c)
	}
}

func TestTextSearchRespectsGitignoreOutsideGitToo(t *testing.T) {
	testenv.Program(t, "rg", "apt-get install ripgrep")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{".gitignore": "gen/\n", "gen/out.txt": "needle\n", "src/in.txt": "needle\n"})
	got, err := Grep(context.Background(), dir, "needle", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path.Text != "src/in.txt" {
		t.Errorf("matches %+v, want only src/in.txt", got)
	}
}
