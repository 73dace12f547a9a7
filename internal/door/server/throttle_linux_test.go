//go:build linux

package server_test

import (
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestPasswordGuessingIsThrottledPerAddress: another user's process that guesses ten times is made
// to wait, right password or not; the server's own user, who can read the password anyway, and a
// signed-in browser's cookie still get in, so a local process cannot lock the person out.
func TestPasswordGuessingIsThrottledPerAddress(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: guesses are sent as another user (nobody), which only root can do")
	}
	curl := testenv.Program(t, "curl", "apt-get install curl")
	for _, door := range []struct {
		name  string
		guess func(s *testServer, pass string) []string // curl's arguments
		own   func(s *testServer, pass string) *http.Request
	}{
		{"HTTP Basic", func(s *testServer, pass string) []string {
			return []string{"-u", user + ":" + pass, s.base + "/session"}
		}, func(s *testServer, pass string) *http.Request {
			r := newReq(t, http.MethodGet, s.base+"/session", "")
			r.SetBasicAuth(user, pass)
			return r
		}},
		{"the login form", func(s *testServer, pass string) []string {
			return []string{"-H", "Content-Type: application/json", "-d", `{"password":"` + pass + `"}`, s.base + "/auth/login"}
		}, func(s *testServer, pass string) *http.Request {
			r := newReq(t, http.MethodPost, s.base+"/auth/login", `{"password":"`+pass+`"}`)
			r.Header.Set("Content-Type", "application/json")
			return r
		}},
	} {
		t.Run(door.name, func(t *testing.T) {
			s := listen(t, nil)
			// A browser signs in before the guessing starts.
			login := newReq(t, http.MethodPost, s.base+"/auth/login", `{"password":"`+password+`"}`)
			login.Header.Set("Content-Type", "application/json")
			status, h, body := do(t, login)
			cookie := h.Get("Set-Cookie")
			if status != http.StatusNoContent || cookie == "" {
				t.Fatalf("signing in: %d %s", status, body)
			}

			for i := range 10 {
				if status, _ := asNobody(t, curl, door.guess(s, "wrong-"+strconv.Itoa(i))...); status != http.StatusUnauthorized {
					t.Fatalf("guess %d: %d", i, status)
				}
			}
			t.Run("another user's right password waits too", func(t *testing.T) {
				status, retry := asNobody(t, curl, door.guess(s, password)...)
				if status != http.StatusTooManyRequests || retry == "" {
					t.Fatalf("after ten failures: %d (Retry-After %q)", status, retry)
				}
			})
			t.Run("the server's own user still gets in with the right password", func(t *testing.T) {
				if status, _, body := do(t, door.own(s, password)); status >= 300 {
					t.Fatalf("%d %s", status, body)
				}
				if status, _, body := do(t, door.own(s, "wrong")); status != http.StatusUnauthorized {
					t.Fatalf("a wrong password from the server's own user: %d %s, want 401", status, body)
				}
			})
			t.Run("the own user's success does not lift the other user's wait", func(t *testing.T) {
				if status, _ := asNobody(t, curl, door.guess(s, "wrong-after")...); status != http.StatusTooManyRequests {
					t.Fatalf("another user's guess after the own user signed in: %d, want 429", status)
				}
			})
			t.Run("a signed-in browser keeps working", func(t *testing.T) {
				r := newReq(t, http.MethodGet, s.base+"/session", "")
				r.Header.Set("Cookie", strings.Split(cookie, ";")[0])
				if status, _, body := do(t, r); status != http.StatusOK {
					t.Fatalf("%d %s", status, body)
				}
			})
		})
	}
}

// asNobody runs curl as the user nobody and returns the status and the Retry-After header.
func asNobody(t *testing.T, curl string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), curl, append([]string{"-sS", "-o", "/dev/null", "-D", "-", "-w", "%{http_code}"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as nobody: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	status, err := strconv.Atoi(strings.TrimSpace(lines[len(lines)-1]))
	if err != nil {
		t.Fatalf("curl said %q", out)
	}
	var retry string
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Retry-After") {
			retry = strings.TrimSpace(v)
		}
	}
	return status, retry
}
