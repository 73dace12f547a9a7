package routes_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/infra/files"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// filesServer is the real server (listener, middleware, auth, router) serving the file routes,
// with dir as its default project directory.
type filesServer struct {
	base string
	dir  string
}

func startFilesServer(tb testing.TB, dir string, ix *files.Index) *filesServer {
	tb.Helper()
	a := auth.New(auth.Credentials{Username: apiUser, Password: apiPassword})
	srv, err := server.Listen(server.Config{
		Port: testenv.UnusedPort(tb), Directory: dir, Auth: a, PasswordSet: true,
		API: &routes.API{Modules: []routes.Module{
			&routes.Files{Index: ix, ProjectID: func(context.Context, string) string { return "prj_test" }},
		}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	srv.Serve()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		testenv.Recv(tb, srv.Done(), "server shutdown")
	})
	return &filesServer{base: strings.TrimSuffix(srv.URL(), "/"), dir: dir}
}

// get sends an authenticated GET and returns the status and body.
func (s *filesServer) get(tb testing.TB, path string) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, s.base+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.SetBasicAuth(apiUser, apiPassword)
	ctx, cancel := context.WithTimeout(req.Context(), testenv.Patience)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return res.StatusCode, body
}

// makeRepo creates a git repository with committed files, then writes the uncommitted ones.
func makeRepo(t *testing.T, committed, uncommitted map[string]string) string {
	t.Helper()
	testenv.Program(t, "git", "apt-get install git")
	dir := t.TempDir()
	writeFiles(t, dir, committed)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@e", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	writeFiles(t, dir, uncommitted)
	return dir
}

func writeFiles(t *testing.T, root string, m map[string]string) {
	t.Helper()
	for name, content := range m {
		probeWriteFile(t, filepath.Join(root, filepath.FromSlash(name)), content)
	}
}

func TestTheSchemaCheckerRejectsWhatOpenCodeForbids(t *testing.T) {
	s := testenv.LoadSchemas(t, "testdata/opencode-file-schemas.json")
	for _, tc := range []struct{ op, body string }{
		{"file.status", `[{"path":"a","added":1,"removed":0,"status":"renamed"}]`},
		{"file.read", `{"type":"text","content":"x","before":"y"}`},
		{"find.files", `[1]`},
		{"v2.fs.find", `{"data":[]}`},
	} {
		if len(s.Problems(t, tc.op, []byte(tc.body))) == 0 {
			t.Errorf("%s accepted %s", tc.op, tc.body)
		}
	}
}

// projectFiles is the repository the route tests share: committed files, then work-tree changes.
var (
	committedFiles = map[string]string{
		".gitignore":           "*.log\nnode_modules/\n",
		"README.md":            "# demo\n",
		"cmd/app/main.go":      "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
		"internal/store/db.go": "package store\n\n// Open opens the database.\nfunc Open() {}\n",
		"docs/guide.md":        "line one\nline two\n",
		"old.txt":              "to be deleted\n",
	}
	workTreeFiles = map[string]string{
		"cmd/app/main.go":       "package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n",
		"notes/todo.md":         "one\ntwo\nthree\n",
		"debug.log":             "ignored\n",
		"node_modules/x/i.js":   "ignored\n",
		"assets/logo.png":       "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"internal/store/db.bin": "\x00\x01\x02binary",
	}
)

func sharedRepo(t *testing.T) string {
	t.Helper()
	dir := makeRepo(t, committedFiles, workTreeFiles)
	if err := os.Remove(filepath.Join(dir, "old.txt")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFileRoutesAnswerInOpenCodesShapes(t *testing.T) {
	testenv.Program(t, "rg", "apt-get install ripgrep") // GET /find is ripgrep
	dir := sharedRepo(t)
	s := startFilesServer(t, dir, files.NewIndex())
	schemas := testenv.LoadSchemas(t, "testdata/opencode-file-schemas.json")
	for _, tc := range []struct {
		name, path, op string
		check          func(t *testing.T, body []byte)
	}{
		{"fuzzy file search finds the file a name points at", "/find/file?query=main.go", "find.files", func(t *testing.T, body []byte) {
			var got []string
			_ = json.Unmarshal(body, &got)
			if len(got) == 0 || got[0] != "cmd/app/main.go" {
				t.Errorf("got %q, want cmd/app/main.go first", got)
			}
		}},
		{"fuzzy file search leaves ignored files out", "/find/file?query=log&limit=200", "find.files", func(t *testing.T, body []byte) {
			if strings.Contains(string(body), "debug.log") || strings.Contains(string(body), "node_modules") {
				t.Errorf("ignored files listed: %s", body)
			}
		}},
		{"fuzzy file search lists directories with a trailing slash", "/find/file?query=store&type=directory", "find.files", func(t *testing.T, body []byte) {
			var got []string
			_ = json.Unmarshal(body, &got)
			if !slices.Equal(got, []string{"internal/store/"}) {
				t.Errorf("got %q", got)
			}
		}},
		{"dirs=false leaves directories out", "/find/file?query=store&dirs=false", "find.files", func(t *testing.T, body []byte) {
			if strings.Contains(string(body), `store/"`) {
				t.Errorf("a directory in %s", body)
			}
		}},
		{"the v2 search the TUI calls answers with its location and typed entries", "/api/fs/find?query=todo&limit=20&location%5Bdirectory%5D=" + url.QueryEscape(dir), "v2.fs.find", func(t *testing.T, body []byte) {
			var got routes.FsFindResult
			_ = json.Unmarshal(body, &got)
			if got.Location.Directory != dir || len(got.Data) == 0 || got.Data[0] != (routes.FsEntry{Path: "notes/todo.md", Type: "file"}) {
				t.Errorf("got %s", body)
			}
		}},
		{"the v2 search types directories without a trailing slash", "/api/fs/find?query=internal&type=directory", "v2.fs.find", func(t *testing.T, body []byte) {
			var got routes.FsFindResult
			_ = json.Unmarshal(body, &got)
			if len(got.Data) == 0 || got.Data[0] != (routes.FsEntry{Path: "internal", Type: "directory"}) {
				t.Errorf("got %s", body)
			}
		}},
		{"the v2 listing answers a directory's children with its location", "/api/fs/list?path=internal&location%5Bdirectory%5D=" + url.QueryEscape(dir), "v2.fs.list", func(t *testing.T, body []byte) {
			var got routes.FsFindResult
			_ = json.Unmarshal(body, &got)
			if got.Location.Directory != dir || len(got.Data) != 1 || got.Data[0] != (routes.FsEntry{Path: "internal/store", Type: "directory"}) {
				t.Errorf("got %s", body)
			}
		}},
		{"text search answers ripgrep's matches", "/find?pattern=" + url.QueryEscape("func \\w+"), "find.text", func(t *testing.T, body []byte) {
			var got []files.TextMatch
			_ = json.Unmarshal(body, &got)
			paths := []string{}
			for _, m := range got {
				paths = append(paths, m.Path.Text)
				if len(m.Submatches) == 0 || !strings.HasPrefix(m.Submatches[0].Match.Text, "func ") {
					t.Errorf("submatches of %+v", m)
				}
			}
			sort.Strings(paths)
			if !slices.Equal(paths, []string{"cmd/app/main.go", "internal/store/db.go"}) {
				t.Errorf("matched %q", paths)
			}
		}},
		{"text search skips ignored files", "/find?pattern=ignored", "find.text", func(t *testing.T, body []byte) {
			if string(body) != "[]" {
				t.Errorf("got %s, want []", body)
			}
		}},
		{"symbol search is honestly empty", "/find/symbol?query=Open", "find.symbols", func(t *testing.T, body []byte) {
			if string(body) != "[]" {
				t.Errorf("got %s", body)
			}
		}},
		{"a directory lists directories first and flags ignored entries", "/file?path=", "file.list", func(t *testing.T, body []byte) {
			var got []files.Node
			_ = json.Unmarshal(body, &got)
			var names []string
			ignored := map[string]bool{}
			for _, n := range got {
				names = append(names, n.Name)
				ignored[n.Name] = n.Ignored
				if n.Absolute != filepath.Join(dir, n.Path) {
					t.Errorf("%s: absolute %s", n.Path, n.Absolute)
				}
			}
			want := []string{"assets", "cmd", "docs", "internal", "node_modules", "notes", ".gitignore", "README.md", "debug.log"}
			if !slices.Equal(names, want) {
				t.Errorf("names %q, want %q", names, want)
			}
			if !ignored["node_modules"] || !ignored["debug.log"] || ignored["cmd"] || ignored["README.md"] {
				t.Errorf("ignored flags %v", ignored)
			}
		}},
		{"a subdirectory lists with paths from the project directory", "/file?path=internal/store", "file.list", func(t *testing.T, body []byte) {
			if !strings.Contains(string(body), `"path":"internal/store/db.go"`) {
				t.Errorf("got %s", body)
			}
		}},
		{"a modified file comes with its diff against HEAD", "/file/content?path=cmd/app/main.go", "file.read", func(t *testing.T, body []byte) {
			var got files.Content
			_ = json.Unmarshal(body, &got)
			if got.Content != workTreeFiles["cmd/app/main.go"] || !strings.Contains(got.Diff, "+\tprintln(\"hello, world\")") {
				t.Errorf("got %s", body)
			}
			if got.Patch == nil || len(got.Patch.Hunks) != 1 || !slices.Contains(got.Patch.Hunks[0].Lines, "-\tprintln(\"hello\")") {
				t.Errorf("patch %+v", got.Patch)
			}
		}},
		{"an unchanged file has no diff", "/file/content?path=README.md", "file.read", func(t *testing.T, body []byte) {
			if string(body) != `{"type":"text","content":"# demo\n"}` {
				t.Errorf("got %s", body)
			}
		}},
		{"an image is base64 with its type", "/file/content?path=assets/logo.png", "file.read", func(t *testing.T, body []byte) {
			var got files.Content
			_ = json.Unmarshal(body, &got)
			if got.Encoding != "base64" || got.MimeType != "image/png" || got.Content == "" {
				t.Errorf("got %s", body)
			}
		}},
		{"a binary file has no content", "/file/content?path=internal/store/db.bin", "file.read", func(t *testing.T, body []byte) {
			var got files.Content
			_ = json.Unmarshal(body, &got)
			if got.Type != "binary" || got.Content != "" {
				t.Errorf("got %s", body)
			}
		}},
		{"a file deleted since HEAD reads as empty with its diff", "/file/content?path=old.txt", "file.read", func(t *testing.T, body []byte) {
			var got files.Content
			_ = json.Unmarshal(body, &got)
			if got.Content != "" || !strings.Contains(got.Diff, "-to be deleted") {
				t.Errorf("got %s", body)
			}
		}},
		{"status lists modified, added and deleted files with line counts", "/file/status", "file.status", func(t *testing.T, body []byte) {
			var got []files.Change
			_ = json.Unmarshal(body, &got)
			sort.Slice(got, func(i, j int) bool { return got[i].Path < got[j].Path })
			want := []files.Change{
				{Path: "assets/logo.png", Status: "added"},
				{Path: "cmd/app/main.go", Added: 1, Removed: 1, Status: "modified"},
				{Path: "internal/store/db.bin", Status: "added"},
				{Path: "notes/todo.md", Added: 3, Status: "added"},
				{Path: "old.txt", Removed: 1, Status: "deleted"},
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		}},
		{"the VCS status names the same changes without patches", "/vcs/status", "vcs.status", func(t *testing.T, body []byte) {
			var got []routes.VcsFileStatus
			_ = json.Unmarshal(body, &got)
			if !slices.Contains(got, routes.VcsFileStatus{File: "cmd/app/main.go", Additions: 1, Deletions: 1, Status: "modified"}) ||
				!slices.Contains(got, routes.VcsFileStatus{File: "old.txt", Deletions: 1, Status: "deleted"}) || len(got) != 5 {
				t.Errorf("got %s", body)
			}
		}},
		{"the working-tree diff has a patch per file", "/vcs/diff?mode=git", "vcs.diff", func(t *testing.T, body []byte) {
			var got []files.FileDiff
			_ = json.Unmarshal(body, &got)
			byFile := map[string]files.FileDiff{}
			for _, d := range got {
				byFile[d.File] = d
			}
			if d := byFile["cmd/app/main.go"]; d.Additions != 1 || d.Deletions != 1 || !strings.Contains(d.Patch, "@@") {
				t.Errorf("main.go: %+v", d)
			}
			if d := byFile["notes/todo.md"]; d.Additions != 3 || d.Status != "added" || !strings.Contains(d.Patch, "+three") {
				t.Errorf("todo.md: %+v", d)
			}
			if d := byFile["old.txt"]; d.Deletions != 1 || d.Status != "deleted" {
				t.Errorf("old.txt: %+v", d)
			}
		}},
		{"the branch diff compares with the default branch", "/vcs/diff?mode=branch&context=0", "vcs.diff", func(t *testing.T, body []byte) {
			if !strings.Contains(string(body), `"file":"cmd/app/main.go"`) {
				t.Errorf("got %s", body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := s.get(t, tc.path)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tc.path, status, body)
			}
			for _, p := range schemas.Problems(t, tc.op, body) {
				t.Errorf("%s does not match OpenCode's schema: %s", tc.op, p)
			}
			tc.check(t, body)
		})
	}
}

func TestPathsOutsideTheProjectAreRefused(t *testing.T) {
	outside := t.TempDir()
	probeWriteFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
	dir := t.TempDir()
	probeWriteFile(t, filepath.Join(dir, "inside.txt"), "fine\n")
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "secret-link")); err != nil {
		t.Fatal(err)
	}
	s := startFilesServer(t, dir, files.NewIndex())
	for _, tc := range []struct {
		name, path string
		want       int
	}{
		{"a dot-dot path", "/file/content?path=" + url.QueryEscape("../"+filepath.Base(outside)+"/secret.txt"), http.StatusForbidden},
		{"a dot-dot path hidden inside the tree", "/file/content?path=" + url.QueryEscape("a/../../x"), http.StatusForbidden},
		{"an absolute path elsewhere", "/file/content?path=" + url.QueryEscape(filepath.Join(outside, "secret.txt")), http.StatusForbidden},
		{"a symlinked directory leading out", "/file?path=escape", http.StatusForbidden},
		{"a file through a symlinked directory", "/file/content?path=escape/secret.txt", http.StatusForbidden},
		{"a symlinked file leading out", "/file/content?path=secret-link", http.StatusForbidden},
		{"listing the parent directory", "/file?path=..", http.StatusForbidden},
		{"a missing file", "/file/content?path=nope.txt", http.StatusNotFound},
		{"a file listed as a directory", "/file?path=inside.txt", http.StatusBadRequest},
		{"a file inside is served", "/file/content?path=inside.txt", http.StatusOK},
		{"an absolute path inside is served", "/file/content?path=" + url.QueryEscape(filepath.Join(dir, "inside.txt")), http.StatusOK},
	} {
		t.Run(tc.name+" answers "+http.StatusText(tc.want), func(t *testing.T) {
			status, body := s.get(t, tc.path)
			if status != tc.want {
				t.Fatalf("GET %s: %d %s, want %d", tc.path, status, body, tc.want)
			}
			if strings.Contains(string(body), "secret\\n") {
				t.Errorf("the secret leaked: %s", body)
			}
			if status != http.StatusOK && !strings.Contains(string(body), `"message"`) {
				t.Errorf("no error message: %s", body)
			}
		})
	}
}

func TestFileRoutesRefuseBadParameters(t *testing.T) {
	testenv.Program(t, "rg", "apt-get install ripgrep") // an invalid pattern is ripgrep's verdict
	s := startFilesServer(t, t.TempDir(), files.NewIndex())
	for _, path := range []string{
		"/find/file?query=x&limit=0",
		"/find/file?query=x&limit=201",
		"/find/file?query=x&type=socket",
		"/find/file?query=x&dirs=maybe",
		"/find?pattern=",
		"/find?pattern=" + url.QueryEscape("(unclosed"),
		"/vcs/diff?mode=svn",
		"/api/fs/find?query=x&limit=abc",
	} {
		t.Run(path+" is a bad request", func(t *testing.T) {
			status, body := s.get(t, path)
			if status != http.StatusBadRequest {
				t.Errorf("GET %s: %d %s, want 400", path, status, body)
			}
		})
	}
}

func TestFuzzySearchSeesAFileCreatedAfterTheFirstSearch(t *testing.T) {
	dir := makeRepo(t, map[string]string{"src/a.go": ""}, nil)
	s := startFilesServer(t, dir, &files.Index{}) // Recheck 0: every search checks the tree
	if _, body := s.get(t, "/find/file?query=fresh"); string(body) != "[]" {
		t.Fatalf("before: %s", body)
	}
	time.Sleep(10 * time.Millisecond)
	probeWriteFile(t, filepath.Join(dir, "src", "fresh.go"), "")
	if _, body := s.get(t, "/find/file?query=fresh"); !strings.Contains(string(body), "src/fresh.go") {
		t.Errorf("after creating src/fresh.go: %s", body)
	}
}

func TestTheRawDiffRebuildsTheWorkTreeOnACloneOfHEAD(t *testing.T) {
	dir := sharedRepo(t)
	s := startFilesServer(t, dir, files.NewIndex())
	status, patch := s.get(t, "/vcs/diff/raw")
	if status != http.StatusOK {
		t.Fatalf("GET /vcs/diff/raw: %d %s", status, patch)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	for _, args := range [][]string{{"clone", "-q", dir, clone}, {"-C", clone, "apply", "--whitespace=nowarn", "-"}} {
		cmd := exec.Command("git", args...)
		if args[0] == "-C" {
			cmd.Stdin = strings.NewReader(string(patch))
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s\npatch:\n%s", args, err, out, patch)
		}
	}
	for _, rel := range []string{"cmd/app/main.go", "notes/todo.md", "assets/logo.png", "internal/store/db.bin"} {
		want, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(clone, rel))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s after applying the raw diff: %q (%v), want %q", rel, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(clone, "old.txt")); err == nil {
		t.Error("old.txt, deleted in the work tree, survived the raw diff")
	}
	if strings.Contains(string(patch), "debug.log") {
		t.Error("an ignored file is in the raw diff")
	}
}
