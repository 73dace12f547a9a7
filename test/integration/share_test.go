package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// anonymous sends a request with no credentials at all, as a stranger holding a link does.
func anonymous(t *testing.T, td *tandem, method, path string, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, td.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := td.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}

func TestASharedSessionIsReadableThroughItsLinkOnly(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	td.prompt(t, sid, "a shared hello")
	other := td.newSession(t)

	var shared session.Session
	td.call(t, http.MethodPost, "/session/"+sid+"/share", "", http.StatusOK, &shared)
	if shared.Share == nil || !strings.HasPrefix(shared.Share.URL, td.base+"/s/") {
		t.Fatalf("share = %+v", shared.Share)
	}
	token := strings.TrimPrefix(shared.Share.URL, td.base+"/s/")

	t.Run("the link reads the session and its messages without credentials, without the owner's details", func(t *testing.T) {
		code, body := anonymous(t, td, http.MethodGet, "/s/"+token+"/session")
		var got session.Session
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.ID != sid {
			t.Fatalf("GET /s/…/session: %d %s", code, body)
		}
		if got.Directory != "" || got.Permission != nil || got.Metadata != nil {
			t.Fatalf("the shared view shows the owner's details: %s", body)
		}
		code, body = anonymous(t, td, http.MethodGet, "/s/"+token+"/message")
		if code != http.StatusOK || !strings.Contains(string(body), "You said: a shared hello") {
			t.Fatalf("GET /s/…/message: %d %s", code, body)
		}
		if code, body := anonymous(t, td, http.MethodGet, "/s/"+token); code != http.StatusOK || !strings.Contains(string(body), "<html") {
			t.Fatalf("the link's page: %d %s", code, body)
		}
	})
	t.Run("the shared messages carry no absolute path of the project", func(t *testing.T) {
		file := filepath.Join(td.project, "notes.txt")
		if err := os.WriteFile(file, []byte("shared notes\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		td.prompt(t, sid, "read: "+file)
		code, body := anonymous(t, td, http.MethodGet, "/s/"+token+"/message")
		if code != http.StatusOK || !strings.Contains(string(body), "shared notes") {
			t.Fatalf("GET /s/…/message: %d %s", code, body)
		}
		real, err := filepath.EvalSymlinks(td.project)
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{td.project, real} {
			if strings.Contains(string(body), dir) {
				t.Fatalf("the shared messages show the project's path %s: %s", dir, body)
			}
		}
		var items []struct {
			Info map[string]json.RawMessage `json:"info"`
		}
		if err := json.Unmarshal(body, &items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if p, ok := it.Info["path"]; ok {
				t.Fatalf("a shared message has path %s", p)
			}
		}
		if !strings.Contains(string(body), `"notes.txt"`) {
			t.Fatalf("the read's file is not named relative to the project: %s", body)
		}
		// The owner still sees where each message ran.
		if _, own := td.request(t, http.MethodGet, "/session/"+sid+"/message", ""); !strings.Contains(string(own), `"cwd":`) {
			t.Fatalf("the owner's messages lost their path: %s", own)
		}
	})
	t.Run("a title that names a file of the project names it relative to it", func(t *testing.T) {
		file := filepath.Join(td.project, "titled.txt")
		if err := os.WriteFile(file, []byte("titled\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		titled := td.newSession(t)
		td.prompt(t, titled, "read: "+file) // the demo model titles it "Read /…/titled.txt"
		var own, link session.Session
		td.call(t, http.MethodGet, "/session/"+titled, "", http.StatusOK, &own)
		// Titles are cut at 50 characters: the owner's names the start of the project's path.
		start := td.project[:12]
		if !strings.Contains(own.Title, start) {
			t.Fatalf("the owner's title %q does not name %s: the test proves nothing", own.Title, start)
		}
		td.call(t, http.MethodPost, "/session/"+titled+"/share", "", http.StatusOK, &link)
		code, body := anonymous(t, td, http.MethodGet, "/s/"+strings.TrimPrefix(link.Share.URL, td.base+"/s/")+"/session")
		var got session.Session
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("GET /s/…/session: %d %s", code, body)
		}
		if strings.Contains(string(body), start) || !strings.HasPrefix(got.Title, "Read ") {
			t.Fatalf("the shared title is %q (the owner's %q): %s", got.Title, own.Title, body)
		}
	})
	t.Run("a wrong or malformed token is the same 404", func(t *testing.T) {
		wrong := strings.Repeat("A", 43)
		for _, tok := range []string{wrong, "short", token + "x"} {
			if code, body := anonymous(t, td, http.MethodGet, "/s/"+tok+"/session"); code != http.StatusNotFound || !strings.Contains(string(body), "does not exist or was revoked") {
				t.Errorf("token %q: %d %s", tok, code, body)
			}
		}
	})
	t.Run("sharing again keeps the link; revoking closes it at once", func(t *testing.T) {
		var again session.Session
		td.call(t, http.MethodPost, "/session/"+sid+"/share", "", http.StatusOK, &again)
		if again.Share == nil || again.Share.URL != shared.Share.URL {
			t.Fatalf("second share: %+v", again.Share)
		}
		var revoked session.Session
		td.call(t, http.MethodDelete, "/session/"+sid+"/share", "", http.StatusOK, &revoked)
		if revoked.Share != nil {
			t.Fatalf("after revoking, share = %+v", revoked.Share)
		}
		if code, _ := anonymous(t, td, http.MethodGet, "/s/"+token+"/message"); code != http.StatusNotFound {
			t.Fatalf("a revoked link still reads messages: %d", code)
		}
	})
	t.Run("the link survives a restart and dies with its session", func(t *testing.T) {
		var s2 session.Session
		td.call(t, http.MethodPost, "/session/"+sid+"/share", "", http.StatusOK, &s2)
		tok := strings.TrimPrefix(s2.Share.URL, td.base+"/s/")
		td.restart(t)
		if code, _ := anonymous(t, td, http.MethodGet, "/s/"+tok+"/session"); code != http.StatusOK {
			t.Fatalf("after a restart: %d", code)
		}
		td.call(t, http.MethodDelete, "/session/"+sid, "", http.StatusOK, nil)
		if code, _ := anonymous(t, td, http.MethodGet, "/s/"+tok+"/session"); code != http.StatusNotFound {
			t.Fatalf("the link of a deleted session: %d", code)
		}
	})
	// Last: these failed logins make the server throttle the test's address for a moment.
	t.Run("the token opens nothing else", func(t *testing.T) {
		for _, path := range []string{"/session/" + sid, "/session/" + other + "/message", "/permission"} {
			if code, _ := anonymous(t, td, http.MethodGet, path, "Authorization", "Bearer "+token); code != http.StatusUnauthorized {
				t.Errorf("GET %s with the link's token as a Bearer: %d, want 401", path, code)
			}
			if code, _ := anonymous(t, td, http.MethodGet, path+"?auth_token="+token); code != http.StatusUnauthorized {
				t.Errorf("GET %s with the link's token as auth_token: %d, want 401", path, code)
			}
		}
	})
}
