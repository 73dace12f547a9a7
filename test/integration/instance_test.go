package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDisposeReadsTheConfigAgain: a provider written into tandem.json by hand (an editor, not PATCH
// /config) is listed after POST /instance/dispose, without a restart, and the directory's clients
// are told to reload; a config that no longer parses is refused and changes nothing.
func TestDisposeReadsTheConfigAgain(t *testing.T) {
	td := startTandem(t, setup{})
	file := filepath.Join(td.project, "tandem.json")
	listed := func() string {
		t.Helper()
		_, body := td.request(t, http.MethodGet, "/provider", "")
		return string(body)
	}
	if strings.Contains(listed(), `"local"`) {
		t.Fatal("the provider is listed before it is configured")
	}
	if err := os.WriteFile(file, []byte(`{"provider": {"local": {"options": {"baseURL": "http://127.0.0.1:1/v1"}, "models": {"qwen": {}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	events := td.subscribe(t)

	t.Run("the provider added by hand is listed after a dispose", func(t *testing.T) {
		var ok bool
		td.call(t, http.MethodPost, "/instance/dispose", "", http.StatusOK, &ok)
		if !ok {
			t.Fatal("POST /instance/dispose answered false")
		}
		if !strings.Contains(listed(), `"local"`) {
			t.Fatalf("GET /provider after the dispose: %s", listed())
		}
		events.waitFor(t, "server.instance.disposed", func(e event) bool { return e.Type == "server.instance.disposed" })
	})

	t.Run("a config that does not parse is refused and the providers stay", func(t *testing.T) {
		if err := os.WriteFile(file, []byte(`{"provider": `), 0o600); err != nil {
			t.Fatal(err)
		}
		status, body := td.request(t, http.MethodPost, "/instance/dispose", "")
		if status != http.StatusBadRequest || !strings.Contains(string(body), "tandem.json") {
			t.Fatalf("POST /instance/dispose with a broken file: %d %s", status, body)
		}
		if !strings.Contains(listed(), `"local"`) {
			t.Fatalf("GET /provider after the refused dispose: %s", listed())
		}
	})
}

func TestProjectDirectoriesListWhereTheProjectIsKnown(t *testing.T) {
	td := startTandem(t, setup{})
	var current struct {
		ID string `json:"id"`
	}
	td.call(t, http.MethodGet, "/project/current", "", http.StatusOK, &current)
	tests := []struct {
		name    string
		project string
		want    []string
	}{
		{"the current project is known in the server's directory", current.ID, []string{td.project}},
		{"an unknown project is known nowhere", "no-such-project", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []struct {
				Directory string `json:"directory"`
			}
			td.call(t, http.MethodGet, "/project/"+tt.project+"/directories", "", http.StatusOK, &got)
			dirs := []string{}
			for _, d := range got {
				dirs = append(dirs, d.Directory)
			}
			if strings.Join(dirs, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("directories %v, want %v", dirs, tt.want)
			}
		})
	}
}
