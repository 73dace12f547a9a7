package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAGrantCoversOnlyWhatWasApprovedSmuggling grants "echo *" the way a person would ("always" on
// echo hi), and printf *, read * and test * too, and then tries every way of smuggling another
// action behind them. Each one must wait for a person at GET /permission; rejecting it must leave
// the file system untouched. The forms that only a shell other than the one tandem runs reads as
// two commands run, and write nothing.
func TestAGrantCoversOnlyWhatWasApprovedSmuggling(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)

	for command, family := range map[string]string{"echo hi": "echo *", "printf hi": "printf *", "read -r x </dev/null": "read *", "test -n x": "test *"} {
		asked := askFor(t, td, events, sid, command)
		if strings.Join(asked.Always, ",") != family {
			t.Fatalf("always patterns %q, want %s", asked.Always, family)
		}
		td.reply(t, asked.ID, "always", "")
		finalTool(t, td, events, sid)
	}

	// Read by bash, the shell tandem runs, these are an echo and a comparison: they run unasked.
	for _, command := range []string{
		`echo $'X\' ; touch H1 ; #'`,
		"echo hi; [[ x =~ a|touch${IFS}H2 ]]",
		"echo hi; [[ x || sh ]]",
		"echo hi && [[ x > H4 ]]",
	} {
		t.Run(command, func(t *testing.T) {
			before := events.mark()
			td.promptAsync(t, sid, "run: "+command)
			if status, detail := finalTool(t, td, events, sid); status != "completed" {
				t.Fatalf("%s: %s", status, detail)
			}
			for _, e := range events.since(before) {
				if e.Type == "permission.asked" {
					t.Fatalf("an echo with a comparison asked: %s", e.Properties)
				}
			}
		})
	}

	outside := t.TempDir()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	attempts := []string{
		"echo $(touch F1)",
		`echo "$(touch F2)"`,
		"echo `touch F3`",
		"echo x > " + filepath.Join(outside, "f"),
		"echo x > tandem.json",
		"echo x >> notes.txt",
		`echo $(eval "touch F4")`,
		`echo ${X:-$(touch F5)}`,
		"echo $(( $(touch F6) ))",
		"for j in 1; do touch F7; done",
		"env touch F8",
		"timeout 5 touch F9",
		"sh -c 'touch F10'",
		`find . -maxdepth 0 -exec touch F11 \;`,
		"echo hi; touch F12",
		"echo hi | tee F13",
		"echo hi # '\ntouch F14",
		`X='a[$(touch F15)]'; echo $((X))`,
		`$'\x74ouch' F16`,
		"{touch,F17}",
		// Issue 26's forms.
		"echo x >> /dev/fd/../../..$HOME/.bashrc",
		"echo x >> /dev/fd/../../.." + home + "/.bashrc",
		"echo x > /proc/self/cwd/F18",
		`printf -v 'a[$(touch F19)]' 1`,
		`read 'a[$(touch F20)]' <<< x`,
		`test -v 'a[$(touch F21)]'`,
		`[ -v 'a[$(touch F22)]' ]`,
		"((1>38))",
		"timeout -v 1 touch F23",
		"command time -v touch F24",
		"/usr/bin/env touch F25",
		"echo 'touch F26' >> .git/hooks/pre-commit",
		"echo x > F27",
		`echo "${x@P}"`,
	}
	for _, command := range attempts {
		t.Run(command, func(t *testing.T) {
			before := events.mark()
			td.promptAsync(t, sid, "run: "+command)
			req := events.waitFor(t, "a request for "+command, ofType("permission.asked", sid)).permission()
			if listed := td.pending(t, sid); len(listed) != 1 || listed[0].ID != req.ID {
				t.Fatalf("GET /permission lists %+v, want the request %s", listed, req.ID)
			}
			td.reply(t, req.ID, "reject", "")
			if status, _ := finalTool(t, td, events, sid); status != "error" {
				t.Fatalf("after reject the tool is %s\n%s", status, events.dump(before))
			}
		})
	}
	entries, err := os.ReadDir(td.project)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".tandem" {
			t.Errorf("a rejected command left %s in the project", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("a rejected redirection wrote outside the project")
	}
}

// TestAConfiguredDenyWinsOverAGrantSmuggling: "always" on one git push grants the git push family,
// but the user's own deny rule for pushing to origin still decides, also for a git named by a path.
func TestAConfiguredDenyWinsOverAGrantSmuggling(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": {"git push origin *": "deny"}}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "git push --dry-run upstream")
	if strings.Join(asked.Always, ",") != "git push *" {
		t.Fatalf("always patterns %q, want git push *", asked.Always)
	}
	td.reply(t, asked.ID, "always", "")
	finalTool(t, td, events, sid)

	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	// A git named by its path, or a program named git in the project, is still git to the rule.
	for _, command := range []string{"git -C . push origin main", git + " push origin main", "./git push origin main"} {
		before := events.mark()
		td.promptAsync(t, sid, "run: "+command)
		if status, detail := finalTool(t, td, events, sid); status != "error" || !strings.Contains(detail, "prevents you") {
			t.Fatalf("%s after the grant: %s %q", command, status, detail)
		}
		for _, e := range events.since(before) {
			if e.Type == "permission.asked" {
				t.Fatalf("a denied command asked: %s", e.Properties)
			}
		}
	}
}

// TestARedirectionIsOneRequestSmuggling: "echo v2 > f.txt" is one bash request that shows the write;
// one answer runs it. The user's edit rules still decide the write: a deny refuses the command
// unasked, an allow (with the command allowed) asks nothing. "always" remembers the command only.
func TestARedirectionIsOneRequestSmuggling(t *testing.T) {
	t.Run("one answer writes the file, and always does not cover the next write", func(t *testing.T) {
		td := startTandem(t, setup{})
		sid := td.newSession(t)
		events := td.subscribe(t)
		before := events.mark()
		asked := askFor(t, td, events, sid, "echo v2 > f.txt")
		writes, _ := asked.Metadata["writes"].([]any)
		if asked.Permission != "bash" || len(writes) != 1 || !strings.Contains(fmt.Sprint(writes[0]), "f.txt") {
			t.Fatalf("asked %s with writes %v, want bash naming f.txt", asked.Permission, asked.Metadata["writes"])
		}
		if strings.Join(asked.Always, ",") != "echo *" {
			t.Fatalf("always %q, want echo *", asked.Always)
		}
		td.reply(t, asked.ID, "always", "")
		if status, detail := finalTool(t, td, events, sid); status != "completed" {
			t.Fatalf("after one answer: %s %q\n%s", status, detail, events.dump(before))
		}
		asks := 0
		for _, e := range events.since(before) {
			if e.Type == "permission.asked" {
				asks++
			}
		}
		if b, err := os.ReadFile(filepath.Join(td.project, "f.txt")); err != nil || string(b) != "v2\n" || asks != 1 {
			t.Fatalf("f.txt = %q (%v) after %d requests, want v2 after one", b, err, asks)
		}
		// "echo *" is remembered; the write to another file is not.
		again := askFor(t, td, events, sid, "echo v3 > g.txt")
		td.reply(t, again.ID, "reject", "")
		finalTool(t, td, events, sid)
		if _, err := os.Stat(filepath.Join(td.project, "g.txt")); err == nil {
			t.Fatal("a rejected write happened")
		}
	})
	t.Run("an edit deny refuses the command", func(t *testing.T) {
		td := startTandem(t, setup{config: `{"permission": {"bash": "allow", "edit": {"*.txt": "deny"}}}`})
		sid := td.newSession(t)
		events := td.subscribe(t)
		before := events.mark()
		td.promptAsync(t, sid, "run: echo v2 > f.txt")
		if status, detail := finalTool(t, td, events, sid); status != "error" || !strings.Contains(detail, "edit f.txt") {
			t.Fatalf("%s %q, want the edit rule's refusal", status, detail)
		}
		for _, e := range events.since(before) {
			if e.Type == "permission.asked" {
				t.Fatalf("a denied write asked: %s", e.Properties)
			}
		}
		if _, err := os.Stat(filepath.Join(td.project, "f.txt")); err == nil {
			t.Fatal("the denied write happened")
		}
	})
	t.Run("an allowed edit asks nothing", func(t *testing.T) {
		td := startTandem(t, setup{config: `{"permission": {"bash": {"*": "ask", "echo *": "allow"}, "edit": "allow"}}`})
		sid := td.newSession(t)
		events := td.subscribe(t)
		before := events.mark()
		td.promptAsync(t, sid, "run: echo v2 > f.txt")
		if status, detail := finalTool(t, td, events, sid); status != "completed" {
			t.Fatalf("%s %q", status, detail)
		}
		for _, e := range events.since(before) {
			if e.Type == "permission.asked" {
				t.Fatalf("an allowed write asked: %s", e.Properties)
			}
		}
	})
}

// TestGrantsStayInTheirDirectory: two directories outside git used to share the project ID
// "global", so "always" in one applied in every other.
func TestGrantsStayInTheirDirectory(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	first := td.newSession(t)
	asked := askFor(t, td, events, first, "echo here")
	td.reply(t, asked.ID, "always", "")
	finalTool(t, td, events, first)

	other := t.TempDir()
	var s struct{ ID string }
	td.call(t, http.MethodPost, "/session?directory="+url.QueryEscape(other), "{}", http.StatusOK, &s)
	td.promptAsync(t, s.ID, "run: echo there")
	// That session's events go to its own directory's stream: watch its pending list and its tool.
	deadline := time.Now().Add(waitLimit)
	for {
		var waiting []permissionRequest
		td.call(t, http.MethodGet, "/permission?directory="+url.QueryEscape(other), "", http.StatusOK, &waiting)
		if len(waiting) == 1 {
			td.reply(t, waiting[0].ID, "reject", "")
			return
		}
		for _, p := range toolParts(td.messages(t, s.ID)) {
			if p.State.Status == "completed" {
				t.Fatal("the grant from another directory let echo run without asking")
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the command neither asked nor ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
