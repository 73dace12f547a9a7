package routes_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/door/routes"
)

// probeServer serves only the probed routes, scoped to dir the way the server middleware scopes them.
func probeServer(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	router := (&routes.API{Modules: []routes.Module{&routes.Probes{}}}).Router(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		router.ServeHTTP(w, r.WithContext(routes.WithDirectory(r.Context(), dir)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func probeGet(t *testing.T, url string) any {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
	return v
}

func probeWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestProbesAnswerEmptyWhereTandemHasNothing(t *testing.T) {
	srv := probeServer(t, t.TempDir())
	for _, tc := range []struct {
		path string
		want any
	}{
		{"/lsp", []any{}},
		{"/formatter", []any{}},
		{"/vcs", map[string]any{}},
		{"/experimental/capabilities", map[string]any{"backgroundSubagents": false}},
		{"/experimental/console", map[string]any{"consoleManagedProviders": []any{}, "switchableOrgCount": float64(0)}},
		{"/experimental/workspace", []any{}},
		{"/experimental/workspace/status", []any{}},
		{"/experimental/resource", map[string]any{}},
	} {
		t.Run(tc.path+" answers with nothing configured", func(t *testing.T) {
			if diff := cmp.Diff(tc.want, probeGet(t, srv.URL+tc.path)); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

func TestVcsReportsTheCheckedOutBranch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, tree string) (dir string)
		want  any
	}{
		{"a branch checked out in a git repository is named", func(t *testing.T, tree string) string {
			probeWriteFile(t, filepath.Join(tree, ".git", "HEAD"), "ref: refs/heads/feature/x\n")
			return filepath.Join(tree, "sub")
		}, map[string]any{"branch": "feature/x"}},
		{"a detached HEAD names no branch", func(t *testing.T, tree string) string {
			probeWriteFile(t, filepath.Join(tree, ".git", "HEAD"), "3f786850e387550fdab836ed7e6dc881de23001b\n")
			return tree
		}, map[string]any{}},
		{"a linked worktree is followed to its git directory", func(t *testing.T, tree string) string {
			probeWriteFile(t, filepath.Join(tree, "gitdirs", "wt", "HEAD"), "ref: refs/heads/linked\n")
			probeWriteFile(t, filepath.Join(tree, "wt", ".git"), "gitdir: ../gitdirs/wt\n")
			return filepath.Join(tree, "wt")
		}, map[string]any{"branch": "linked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t, t.TempDir())
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			srv := probeServer(t, dir)
			if diff := cmp.Diff(tc.want, probeGet(t, srv.URL+"/vcs")); diff != "" {
				t.Errorf("GET /vcs (-want +got):\n%s", diff)
			}
		})
	}
}
