package store_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

// TestUnwritableDatabaseIsRefusedAtOpen needs a user that file permissions apply to: as root it
// re-runs itself as nobody.
func TestUnwritableDatabaseIsRefusedAtOpen(t *testing.T) {
	if dir := os.Getenv("TANDEM_UNWRITABLE_CASE_DIR"); dir != "" {
		openUnwritable(t, dir)
		return
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir string)
	}{
		{"a database file left read-only", func(t *testing.T, dir string) {
			db, err := store.Open(t.Context(), filepath.Join(dir, "tandem.db"))
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "tandem.db"), 0o444); err != nil {
				t.Fatal(err)
			}
		}},
		{"a data directory without write permission", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			c.prepare(t, dir)
			t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
			if os.Geteuid() != 0 {
				openUnwritable(t, dir)
				return
			}
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			// The test binary must be reachable by nobody too.
			self := filepath.Join(t.TempDir(), "store.test")
			if err := copyFile(exe, self); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{filepath.Dir(self), filepath.Dir(filepath.Dir(self))} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.CommandContext(t.Context(), self, "-test.run", "^TestUnwritableDatabaseIsRefusedAtOpen$", "-test.v")
			cmd.Env = append(os.Environ(), "TANDEM_UNWRITABLE_CASE_DIR="+dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "PASS") {
				t.Fatalf("as nobody: %v\n%s", err, out)
			}
		})
	}
	t.Run("a data directory that is a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		openUnwritable(t, file)
	})
}

func openUnwritable(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "tandem.db")
	db, err := store.Open(context.WithoutCancel(t.Context()), path)
	if err == nil {
		db.Close()
		t.Fatalf("opened %s, which cannot be written", path)
	}
	var ue *store.UnwritableError
	if !errors.As(err, &ue) || ue.Path != path || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v (%T), want an UnwritableError naming %s", err, err, path)
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}
