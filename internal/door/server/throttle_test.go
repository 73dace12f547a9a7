package server_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestAuthenticationAnswersBeforeAnyDirectoryLookup(t *testing.T) {
	s := listen(t, nil)
	missing := filepath.Join(s.dir, "does-not-exist")
	for _, dir := range []string{s.dir, missing} {
		status, _, body := do(t, newReq(t, http.MethodGet, s.base+"/session?directory="+url.QueryEscape(dir), ""))
		if status != http.StatusUnauthorized {
			t.Errorf("GET /session?directory=%s without credentials: %d %s, want 401 whether it exists or not", dir, status, body)
		}
		status, _, body = do(t, newReq(t, http.MethodGet, s.base+"/global/health?directory="+url.QueryEscape(dir), ""))
		if status != http.StatusOK {
			t.Errorf("GET /global/health?directory=%s: %d %s, want 200 whether it exists or not", dir, status, body)
		}
	}
	req := newReq(t, http.MethodGet, s.base+"/session?directory="+url.QueryEscape(missing), "")
	req.SetBasicAuth(user, password)
	if status, _, _ := do(t, req); status != http.StatusBadRequest {
		t.Errorf("an authenticated request for a missing directory: %d, want 400", status)
	}
}

func TestASlowBodyIsCutOff(t *testing.T) {
	s := listen(t, func(c *server.Config) { c.BodyTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", s.host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /session HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ti", s.host)
	// The server answers or closes once the body's deadline passes; it never waits for the rest.
	_ = conn.SetReadDeadline(time.Now().Add(testenv.Patience))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the connection was not closed by the server: %v", err)
	}
}
