package deploy

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// busyboxBin makes a directory whose sh, wget, base64, tr and printf are
// BusyBox applets, the tools the Alpine image runs the healthcheck with.
// CI installs busybox, so there (CI=true) its absence fails the test.
func busyboxBin(t *testing.T) string {
	t.Helper()
	busybox := testenv.Program(t, "busybox", "apt-get install busybox")
	dir := t.TempDir()
	for _, applet := range []string{"sh", "wget", "base64", "tr", "printf"} {
		if err := os.Symlink(busybox, filepath.Join(dir, applet)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestHealthcheckScript(t *testing.T) {
	bin := busyboxBin(t)
	const password = `pa:ss w"ord$with!symbols-and-a-length-that-base64-wraps-past-seventy-six-columns`
	var healthy atomic.Bool
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		switch {
		case !ok || user != "tandem" || pass != password:
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path != "/global/health":
			w.WriteHeader(http.StatusNotFound)
		case !healthy.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Write([]byte(`{"healthy":true,"version":"test"}`))
		}
	}))
	defer server.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := []struct {
		name     string
		url      string
		password string
		healthy  bool
		wantOK   bool
	}{
		{"a healthy server with the container's password passes", server.URL + "/global/health", password, true, true},
		{"a wrong password fails", server.URL + "/global/health", "wrong", true, false},
		{"an unhealthy server fails", server.URL + "/global/health", password, false, false},
		{"a server that is not listening fails", closed.URL + "/global/health", password, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			healthy.Store(tt.healthy)
			cmd := exec.Command(filepath.Join(bin, "sh"), "healthcheck.sh")
			cmd.Env = []string{"PATH=" + bin, "TANDEM_HEALTH_URL=" + tt.url, "TANDEM_SERVER_PASSWORD=" + tt.password}
			out, err := cmd.CombinedOutput()
			if ok := err == nil; ok != tt.wantOK {
				t.Errorf("healthcheck.sh succeeded=%v (%v, output %q), want %v", ok, err, out, tt.wantOK)
			}
		})
	}
}
