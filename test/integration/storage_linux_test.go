package integration

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// onSmallDisk mounts a 4 MiB tmpfs for the test (root only) and returns it; it is unmounted when
// the test ends, after everything registered later (the server) has stopped.
func onSmallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tandem-test", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("skipped: a full disk is made with a small tmpfs, which this user may not mount: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes to dir until its file system has no space left, and returns the filler's path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last partial blocks too, so that not even a page is left.
	for {
		if _, err := f.Write(block[:512]); err != nil {
			return path
		}
	}
}

// TestAFullDiskGetsAClearErrorAndLosesNothing: with tandem's data directory on a disk that fills up,
// creating a session, prompting, adding a grant and storing an API key each answer 507
// StorageFullError saying what to do, never 500; once space is freed the same requests succeed.
func TestAFullDiskGetsAClearErrorAndLosesNothing(t *testing.T) {
	disk := onSmallDisk(t)
	td := newTandem(t, setup{})
	td.data = disk
	td.start(t)
	t.Cleanup(func() { td.stop(t) })
	sid := td.newSession(t)

	requests := []struct {
		name, method, path, body string
	}{
		{"creating a session", http.MethodPost, "/session", `{"title":"on a full disk"}`},
		{"a prompt", http.MethodPost, "/session/" + sid + "/message", promptBody("hello")},
		{"a prompt sent asynchronously", http.MethodPost, "/session/" + sid + "/prompt_async", promptBody("hello again")},
		{"adding a grant", http.MethodPost, "/permission/grant", `{"permission":"bash","pattern":"ls *","action":"allow"}`},
		{"storing an API key", http.MethodPut, "/auth/openai", `{"type":"api","key":"sk-test-0123456789"}`},
	}
	filler := fill(t, disk)
	for _, r := range requests {
		t.Run(r.name+" on a full disk is 507 with what to do", func(t *testing.T) {
			status, body := td.request(t, r.method, r.path, r.body)
			if status != http.StatusInsufficientStorage || !strings.Contains(string(body), `"StorageFullError"`) ||
				!strings.Contains(string(body), "Free some space") {
				t.Fatalf("%s %s: %d %s", r.method, r.path, status, body)
			}
		})
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, r := range requests {
		t.Run(r.name+" succeeds once space is freed", func(t *testing.T) {
			if status, body := td.request(t, r.method, r.path, r.body); status >= 300 {
				t.Fatalf("%s %s: %d %s", r.method, r.path, status, body)
			}
		})
	}
	// Nothing the full disk refused was half-stored: the session holds the prompts that succeeded.
	var users int
	for _, m := range td.messages(t, sid) {
		if m.Info.Role == session.RoleUser {
			users++
		}
	}
	if users < 1 || users > 2 {
		t.Fatalf("%d user messages, want the ones sent after space was freed", users)
	}
}
