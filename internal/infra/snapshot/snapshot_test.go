package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/snapshot"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func write(tb testing.TB, dir, name, content string) {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testenv.Git(t, dir, args...)
}

func newStore(t *testing.T, log *bytes.Buffer) *snapshot.Store {
	t.Helper()
	var lg *slog.Logger
	if log != nil {
		lg = slog.New(slog.NewTextHandler(log, nil))
	}
	s := snapshot.New(snapshot.Options{Dir: filepath.Join(t.TempDir(), "snapshot"), Logger: lg, Timeout: 20 * time.Second, FirstWait: time.Minute})
	t.Cleanup(s.Close)
	return s
}

func track(t *testing.T, s *snapshot.Store, dir string) string {
	t.Helper()
	h, err := s.Track(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if h == "" {
		t.Fatal("no snapshot taken")
	}
	return h
}

func TestSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name string
		git  bool
	}{{"a git project's files are recorded and restored without touching its .git", true}, {"a directory outside git is recorded and restored too", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			write(t, dir, "keep.txt", "one\ntwo\n")
			write(t, dir, ".gitignore", "build/\n")
			write(t, dir, "build/out.bin", "ignored")
			var status, head string
			if tc.git {
				git(t, dir, "init", "-q")
				git(t, dir, "add", ".")
				git(t, dir, "commit", "-qm", "first")
				status, head = git(t, dir, "status", "--porcelain"), git(t, dir, "rev-parse", "HEAD")
			}
			s := newStore(t, nil)
			before := track(t, s, dir)
			if again := track(t, s, dir); again != before {
				t.Fatalf("nothing changed, yet the snapshot did: %s → %s", before, again)
			}

			write(t, dir, "keep.txt", "one\n2\n")
			write(t, dir, "new/file.txt", "hello\n")
			write(t, dir, "build/out.bin", "changed, still ignored")
			after := track(t, s, dir)

			changed, err := s.Changed(ctx, dir, before, after)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(dir, "keep.txt"), filepath.Join(dir, "new/file.txt")}
			if strings.Join(changed, ",") != strings.Join(want, ",") {
				t.Fatalf("changed %v, want %v (build/ is ignored)", changed, want)
			}
			diff, err := s.Diff(ctx, dir, before, after)
			if err != nil {
				t.Fatal(err)
			}
			if len(diff) != 2 || diff[0].File != "keep.txt" || diff[0].Status != "modified" || diff[0].Additions != 1 || diff[0].Deletions != 1 ||
				!strings.Contains(diff[0].Patch, "-two\n+2\n") || diff[1].File != "new/file.txt" || diff[1].Status != "added" ||
				diff[1].Additions != 1 || !strings.Contains(diff[1].Patch, "+hello\n") {
				t.Fatalf("diff %+v", diff)
			}

			if err := s.Revert(ctx, dir, before, changed); err != nil {
				t.Fatal(err)
			}
			if got, _ := read(t, dir, "keep.txt"); got != "one\ntwo\n" {
				t.Fatalf("reverted keep.txt = %q", got)
			}
			if _, ok := read(t, dir, "new/file.txt"); ok {
				t.Fatal("a file created after the snapshot survived the revert")
			}
			if got, _ := read(t, dir, "build/out.bin"); got != "changed, still ignored" {
				t.Fatalf("an ignored file was touched: %q", got)
			}

			if err := s.Restore(ctx, dir, after); err != nil {
				t.Fatal(err)
			}
			if got, _ := read(t, dir, "keep.txt"); got != "one\n2\n" {
				t.Fatalf("restored keep.txt = %q", got)
			}
			if got, _ := read(t, dir, "new/file.txt"); got != "hello\n" {
				t.Fatalf("restored new/file.txt = %q", got)
			}
			if tc.git {
				write(t, dir, "keep.txt", "one\ntwo\n")
				if err := os.Remove(filepath.Join(dir, "new/file.txt")); err != nil {
					t.Fatal(err)
				}
				if s2, h2 := git(t, dir, "status", "--porcelain"), git(t, dir, "rev-parse", "HEAD"); s2 != status || h2 != head {
					t.Fatalf("the project's own git changed: status %q → %q, HEAD %q → %q", status, s2, head, h2)
				}
			}
		})
	}
}

func TestSnapshotsAreOffWhereTheyCannotWork(t *testing.T) {
	t.Run("without git every operation is a no-op, said once", func(t *testing.T) {
		var log bytes.Buffer
		s := snapshot.New(snapshot.Options{Dir: t.TempDir(), Git: "no-such-git-binary", Logger: slog.New(slog.NewTextHandler(&log, nil))})
		dir := t.TempDir()
		for range 2 {
			if h, err := s.Track(context.Background(), dir); h != "" || err != nil {
				t.Fatalf("Track = %q, %v", h, err)
			}
		}
		if n := strings.Count(log.String(), "snapshots are off"); n != 1 {
			t.Fatalf("logged %d times: %s", n, log.String())
		}
	})
	t.Run("a project larger than the bounds is not snapshotted, said once", func(t *testing.T) {
		for _, o := range []snapshot.Options{{MaxFiles: 2}, {MaxBytes: 100}} {
			var log bytes.Buffer
			o.Dir, o.Logger, o.FirstWait = t.TempDir(), slog.New(slog.NewTextHandler(&log, nil)), time.Minute
			s := snapshot.New(o)
			t.Cleanup(s.Close)
			dir := t.TempDir()
			write(t, dir, ".gitignore", "ignored/\n")
			write(t, dir, "a.txt", strings.Repeat("a", 60))
			write(t, dir, "b.txt", strings.Repeat("b", 60))
			for range 2 {
				if h, err := s.Track(context.Background(), dir); h != "" || err != nil {
					t.Fatalf("Track = %q, %v", h, err)
				}
			}
			if n := strings.Count(log.String(), "snapshots are off"); n != 1 || !strings.Contains(log.String(), "too large to snapshot") {
				t.Fatalf("log: %s", log.String())
			}
		}
		// What .gitignore excludes does not count.
		s := snapshot.New(snapshot.Options{Dir: t.TempDir(), MaxFiles: 3, FirstWait: time.Minute})
		t.Cleanup(s.Close)
		dir := t.TempDir()
		write(t, dir, ".gitignore", "ignored/\n")
		write(t, dir, "a.txt", "a")
		for i := range 10 {
			write(t, dir, filepath.Join("ignored", strings.Repeat("x", i+1)), "x")
		}
		if h, err := s.Track(context.Background(), dir); h == "" || err != nil {
			t.Fatalf("Track = %q, %v; the ignored files should not count", h, err)
		}
	})
	t.Run("a project that cannot be written is not snapshotted, said once", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes everywhere")
		}
		var log bytes.Buffer
		s := newStore(t, &log)
		dir := t.TempDir()
		write(t, dir, "a.txt", "a")
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		for range 2 {
			if h, err := s.Track(context.Background(), dir); h != "" || err != nil {
				t.Fatalf("Track = %q, %v", h, err)
			}
		}
		if n := strings.Count(log.String(), "snapshots are off"); n != 1 || !strings.Contains(log.String(), "not writable") {
			t.Fatalf("log: %s", log.String())
		}
	})
}

func TestASnapshotNoLongerKeptIsNamedSo(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "a")
	s := newStore(t, nil)
	track(t, s, dir)
	gone := strings.Repeat("0", 40)
	if err := s.Restore(context.Background(), dir, gone); !errors.Is(err, snapshot.ErrGone) {
		t.Errorf("Restore of a pruned snapshot: %v", err)
	}
	if err := s.Revert(context.Background(), dir, gone, []string{filepath.Join(dir, "a.txt")}); !errors.Is(err, snapshot.ErrGone) {
		t.Errorf("Revert to a pruned snapshot: %v", err)
	}
	if got, _ := read(t, dir, "a.txt"); got != "a" {
		t.Fatalf("a.txt = %q", got)
	}
}

func TestAProjectsFirstSnapshotNeverHoldsUpAStep(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "a")
	s := snapshot.New(snapshot.Options{Dir: filepath.Join(t.TempDir(), "snapshot"), FirstWait: time.Microsecond})
	t.Cleanup(s.Close)
	ctx := context.Background()
	// Starting git alone takes longer than a microsecond: the first Track returns at once, empty.
	if h, err := s.Track(ctx, dir); h != "" || err != nil {
		t.Fatalf("the first Track = %q, %v; want no snapshot yet", h, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := s.Track(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if h != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first snapshot never finished in the background")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRevertNeverLeavesTheWorkTreeNorTouchesGit(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "a")
	write(t, dir, ".git/config", "[core]\n")
	outside := t.TempDir()
	write(t, outside, "victim.txt", "keep me")
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, nil)
	h := track(t, s, dir)
	for _, tc := range []struct {
		name, hash, file string
	}{
		{"a file outside the work tree is refused", h, filepath.Join(outside, "victim.txt")},
		{"a file inside .git is refused", h, filepath.Join(dir, ".git", "config")},
		{"a file behind a symbolic link out of the work tree is not removed", h, filepath.Join(dir, "link", "victim.txt")},
		{"a hash that is not one is refused", "--orphan", filepath.Join(dir, "a.txt")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Revert(context.Background(), dir, tc.hash, []string{tc.file}); err == nil {
				t.Error("Revert succeeded")
			}
			if got, _ := read(t, outside, "victim.txt"); got != "keep me" {
				t.Fatalf("the file outside is %q", got)
			}
			if got, _ := read(t, dir, ".git/config"); got != "[core]\n" {
				t.Fatalf(".git/config is %q", got)
			}
		})
	}
}
