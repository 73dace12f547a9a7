package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
)

// listenWithSnapshot starts a real server whose fallback (where the UI's page is served) answers
// with the snapshot Server.Snapshot builds for the request, "null" when it builds none.
func listenWithSnapshot(t *testing.T, edit func(*server.Config)) *testServer {
	t.Helper()
	var srv atomic.Pointer[server.Server]
	s := listen(t, func(c *server.Config) {
		c.Fallback = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			snap := srv.Load().Snapshot(r)
			if snap == nil {
				snap = []byte("null")
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(snap)
		})
		if edit != nil {
			edit(c)
		}
	})
	srv.Store(s.srv)
	return s
}

func TestSnapshotCarriesTheInboxOnlyForAValidSessionCookie(t *testing.T) {
	s := listenWithSnapshot(t, nil)
	created, err := s.sessions.Create(context.Background(), s.dir, session.CreateInput{Title: "</script><script>alert(1)</script>"})
	if err != nil {
		t.Fatal(err)
	}
	cookie := s.auth.NewSession()
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	for _, tc := range []struct {
		name   string
		sign   func(*http.Request)
		wantIn bool
	}{
		{"a valid session cookie gets the session list and statuses", func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: routes.SessionCookie, Value: cookie})
		}, true},
		{"no credentials get nothing", func(*http.Request) {}, false},
		{"a forged cookie gets nothing", func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: routes.SessionCookie, Value: "forged"})
		}, false},
		{"the password without a cookie gets nothing: the page only ever carries a cookie's data", func(r *http.Request) {
			r.Header.Set("Authorization", basic)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := newReq(t, http.MethodGet, s.base+"/", "")
			tc.sign(req)
			code, _, body := do(t, req)
			if code != http.StatusOK {
				t.Fatalf("GET / = %d %s", code, body)
			}
			var snap map[string]json.RawMessage
			if err := json.Unmarshal([]byte(body), &snap); err != nil {
				t.Fatalf("snapshot %q: %v", body, err)
			}
			if !tc.wantIn {
				if snap != nil {
					t.Fatalf("snapshot = %s, want none", body)
				}
				return
			}
			var list []session.Session
			if err := json.Unmarshal(snap["/session"], &list); err != nil || len(list) != 1 || list[0].ID != created.ID || list[0].Title != created.Title {
				t.Errorf("/session in the snapshot = %s (%v), want the one session", snap["/session"], err)
			}
			if _, ok := snap["/session/status"]; !ok {
				t.Errorf("the snapshot lacks /session/status: %s", body)
			}
			if _, ok := snap["/permission"]; ok {
				t.Errorf("a path this server does not route (404) is in the snapshot: %s", body)
			}
		})
	}
}

func TestSnapshotNeedsNoCookieWhenTheServerHasNoPassword(t *testing.T) {
	s := listenWithSnapshot(t, func(c *server.Config) {
		c.Auth = auth.New(auth.Credentials{Disabled: true})
		c.PasswordSet = false
	})
	code, _, body := do(t, newReq(t, http.MethodGet, s.base+"/", ""))
	var snap map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &snap); code != http.StatusOK || err != nil || snap["/session"] == nil {
		t.Fatalf("GET / = %d %q (%v), want a snapshot with /session", code, body, err)
	}
}
