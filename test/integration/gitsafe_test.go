package integration

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// hostileRepo builds testdata/hostile-repo.sh's repository in dir: every program its configuration
// names creates a file in marks when it runs. With lazy, HEAD also names a blob the repository
// lacks and a promisor remote whose transport is a command.
func hostileRepo(t *testing.T, dir, marks string, lazy bool) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	script, err := filepath.Abs("testdata/hostile-repo.sh")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{script, dir, marks}
	if lazy {
		args = append(args, "lazy")
	}
	if out, err := exec.Command("sh", args...).CombinedOutput(); err != nil {
		t.Fatalf("hostile-repo.sh: %v\n%s", err, out)
	}
}

// takeMarks names the programs that ran (the files in marks) and removes their marks, so that
// the next check starts clean.
func takeMarks(t *testing.T, marks string) []string {
	t.Helper()
	entries, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if err := os.Remove(filepath.Join(marks, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// plainGit runs the system's git as a user would, with the repository's programs, and returns
// what ran: the control that shows the fixture is live.
func plainGit(t *testing.T, dir, marks string, args ...string) []string {
	t.Helper()
	takeMarks(t, marks)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	_ = cmd.Run() // a program that fails may fail the command; what it marked is what counts
	return takeMarks(t, marks)
}

// TestARepositorysProgramsRunThroughNoRoute drives every route that runs git against a repository
// whose configuration names a program for each way git starts one (an untrusted project, read
// before any question): none runs, and each route still answers what git would.
func TestARepositorysProgramsRunThroughNoRoute(t *testing.T) {
	marks := t.TempDir()
	td := newTandem(t, setup{untrusted: true})
	writeTree(t, filepath.Join(td.env["XDG_CONFIG_HOME"], "tandem"), map[string]string{"tandem.json": `{"permission": {"edit": "allow"}}`})
	hostileRepo(t, td.project, marks, false)
	td.start(t)
	t.Cleanup(func() { td.stop(t) })

	for _, tc := range []struct {
		name, path string
		want       []string // in the body
	}{
		{"GET /find/file (the @ completion) lists the files git lists", "/find/file?query=new", []string{`"new.txt"`}},
		{"GET /api/fs/find lists them too", "/api/fs/find?query=tracked", []string{`"tracked.txt"`}},
		{"GET /file lists the directory with git's ignore rules", "/file?path=.", []string{`"other.md"`}},
		{"GET /api/fs/list lists it too", "/api/fs/list", []string{`"data.bin"`}},
		{"GET /file/status shows the modified and the new file", "/file/status",
			[]string{`"path":"tracked.txt","added":1,"removed":0,"status":"modified"`, `"path":"new.txt","added":1,"removed":0,"status":"added"`}},
		{"GET /file/content carries the file's diff against HEAD", "/file/content?path=tracked.txt", []string{`+changed`}},
		{"GET /vcs/status shows the changes", "/vcs/status", []string{`"file":"other.md"`}},
		{"GET /vcs/diff?mode=git shows the patches", "/vcs/diff?mode=git", []string{`"file":"tracked.txt"`, `+changed`, `"file":"new.txt"`}},
		{"GET /vcs/diff?mode=branch shows them against the default branch", "/vcs/diff?mode=branch", []string{`"file":"other.md"`}},
		{"GET /vcs/diff/raw is the patch git apply takes", "/vcs/diff/raw", []string{"+changed", "+++ b/new.txt"}},
		{"GET /find searches the text", "/find?pattern=changed", []string{`tracked.txt`}},
		{"GET /project/current names the project by its root commit", "/project/current", []string{`"id":"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := td.request(t, http.MethodGet, tc.path, "")
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("the answer lacks %s: %s", w, body)
				}
			}
			if ran := takeMarks(t, marks); len(ran) > 0 {
				t.Errorf("the repository's programs ran: %v", ran)
			}
		})
	}

	t.Run("the built-in /review reads git's status and diff with none of them", func(t *testing.T) {
		sid := td.newSession(t)
		status, body := td.request(t, http.MethodPost, "/session/"+sid+"/command", commandBody("review", ""))
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		var prompt string
		for _, m := range td.messages(t, sid) {
			if m.Info.Role == session.RoleUser {
				prompt = textOf(m)
			}
		}
		for _, w := range []string{" M tracked.txt", "?? new.txt", "+changed"} {
			if !strings.Contains(prompt, w) {
				t.Errorf("the review prompt lacks %q:\n%s", w, prompt)
			}
		}
		if ran := takeMarks(t, marks); len(ran) > 0 {
			t.Errorf("the repository's programs ran: %v", ran)
		}
	})

	t.Run("a snapshot is taken and restored with none of them", func(t *testing.T) {
		sid := td.newSession(t)
		td.prompt(t, sid, "write: tracked.txt\nby the agent\n")
		tracked := filepath.Join(td.project, "tracked.txt")
		if got, _ := readFile(t, tracked); got != "by the agent\n" {
			t.Fatalf("the agent did not write tracked.txt: %q", got)
		}
		var user string
		for _, m := range td.messages(t, sid) {
			if m.Info.Role == session.RoleUser {
				user = m.Info.ID
			}
		}
		td.call(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+user+`"}`, http.StatusOK, nil)
		if got, _ := readFile(t, tracked); got != "hello\nchanged\n" {
			t.Errorf("tracked.txt after the revert: %q", got)
		}
		if ran := takeMarks(t, marks); len(ran) > 0 {
			t.Errorf("the repository's programs ran: %v", ran)
		}
	})

	t.Run("a partial clone's missing object is not fetched through the remote's transport", func(t *testing.T) {
		lazy, lazyMarks := t.TempDir(), t.TempDir()
		hostileRepo(t, lazy, lazyMarks, true)
		in := "directory=" + url.QueryEscape(lazy)
		for _, path := range []string{"/file/status?" + in, "/file/content?path=lazy.txt&" + in, "/vcs/diff?mode=git&" + in, "/vcs/diff/raw?" + in} {
			// git cannot read the blob without the fetch; the route may fail, but runs nothing.
			td.request(t, http.MethodGet, path, "")
			if ran := takeMarks(t, lazyMarks); len(ran) > 0 {
				t.Errorf("GET %s ran the repository's programs: %v", path, ran)
			}
		}
		if ran := plainGit(t, lazy, lazyMarks, "diff", "--numstat", "HEAD", "--", "lazy.txt"); !slices.Contains(ran, "transport") {
			t.Errorf("plain git ran %v, not the transport: the fixture proves nothing", ran)
		}
	})

	// The same repository, read by git as a user would, runs each program: the fixture is live.
	for _, tc := range []struct {
		args []string
		ran  string
	}{
		{[]string{"status"}, "fsmonitor"},
		{[]string{"diff", "--numstat", "HEAD", "--", "sub"}, "submodule"},
		{[]string{"hash-object", "tracked.txt"}, "clean"},
		{[]string{"cat-file", "--filters", "HEAD:tracked.txt"}, "smudge"},
		{[]string{"hash-object", "data.bin"}, "process"},
		{[]string{"diff", "--no-ext-diff", "HEAD", "--", "tracked.txt"}, "textconv"},
		{[]string{"diff", "HEAD", "--", "tracked.txt"}, "command"},
		{[]string{"diff", "HEAD", "--", "other.md"}, "external"},
		{[]string{"update-ref", "refs/heads/x", "HEAD"}, "hook"},
	} {
		if ran := plainGit(t, td.project, marks, tc.args...); !slices.Contains(ran, tc.ran) {
			t.Errorf("plain git %v ran %v, not %s: the fixture proves nothing", tc.args, ran, tc.ran)
		}
	}
}

// TestAnUntrackedSymlinkShowsItsTargetsNameNotItsContent: a symlink to a file outside the project
// reads as git records it (the target's name), in the diffs as in the status; GET /file/content
// refuses it.
func TestAnUntrackedSymlinkShowsItsTargetsNameNotItsContent(t *testing.T) {
	td := newTandem(t, setup{untrusted: true})
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("the outside secret\nline two\nline three\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, td.project, "init", "-q")
	if err := os.Symlink(outside, filepath.Join(td.project, "link.txt")); err != nil {
		t.Fatal(err)
	}
	td.start(t)
	t.Cleanup(func() { td.stop(t) })

	var diff []struct {
		File, Patch, Status string
		Additions           int
	}
	td.call(t, http.MethodGet, "/vcs/diff?mode=git", "", http.StatusOK, &diff)
	if len(diff) != 1 || diff[0].File != "link.txt" || diff[0].Status != "added" || diff[0].Additions != 1 ||
		!strings.Contains(diff[0].Patch, "new file mode 120000\n") || !strings.Contains(diff[0].Patch, "\n+"+outside+"\n\\ No newline at end of file\n") {
		t.Errorf("GET /vcs/diff?mode=git: %+v", diff)
	}
	for _, path := range []string{"/vcs/diff?mode=git", "/vcs/diff/raw", "/file/status", "/vcs/status"} {
		status, body := td.request(t, http.MethodGet, path, "")
		if status != http.StatusOK || strings.Contains(string(body), "secret\n") || strings.Contains(string(body), "line two") {
			t.Errorf("GET %s (%d) shows the target's content: %s", path, status, body)
		}
	}
	var changes []struct {
		Path  string
		Added int
	}
	td.call(t, http.MethodGet, "/file/status", "", http.StatusOK, &changes)
	if len(changes) != 1 || changes[0].Added != 1 {
		t.Errorf("GET /file/status counts the target's lines: %+v", changes)
	}
	if status, body := td.request(t, http.MethodGet, "/file/content?path=link.txt", ""); status != http.StatusForbidden {
		t.Errorf("GET /file/content of the link: %d %s", status, body)
	}
}

// TestARepositorysCoreWorktreeCannotLeadOutside: a repository whose configuration names another
// directory as its work tree (core.worktree) is still read in the project: the routes never show
// that directory's files.
func TestARepositorysCoreWorktreeCannotLeadOutside(t *testing.T) {
	td := newTandem(t, setup{untrusted: true})
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "key"), []byte("the outside secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(td.project, "key"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, td.project, "init", "-q")
	gitIn(t, td.project, "add", "key")
	gitIn(t, td.project, "commit", "-qm", "start")
	gitIn(t, td.project, "config", "core.worktree", elsewhere)
	if out := gitIn(t, td.project, "diff", "HEAD"); !strings.Contains(out, "+the outside secret") {
		t.Fatalf("plain git does not follow core.worktree, the test proves nothing: %q", out)
	}
	td.start(t)
	t.Cleanup(func() { td.stop(t) })

	for _, tc := range []struct{ path, want string }{
		{"/vcs/diff?mode=git", "[]"},
		{"/vcs/diff/raw", ""},
		{"/file/status", "[]"},
		{"/vcs/status", "[]"},
		{"/file/content?path=key", `{"type":"text","content":""}`},
	} {
		status, body := td.request(t, http.MethodGet, tc.path, "")
		if status != http.StatusOK || strings.TrimSpace(string(body)) != tc.want {
			t.Errorf("GET %s (%d) reads the other directory: %s", tc.path, status, body)
		}
	}
	sid := td.newSession(t)
	if status, body := td.request(t, http.MethodPost, "/session/"+sid+"/command", commandBody("review", "")); status != http.StatusOK {
		t.Fatalf("/review: %d %s", status, body)
	}
	for _, m := range td.messages(t, sid) {
		if strings.Contains(textOf(m), "secret") {
			t.Errorf("/review sent the other directory's file to the model:\n%s", textOf(m))
		}
	}
}
