package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAGrantCoversOnlyWhatWasApproved grants "echo *" the way a person would ("always" on echo hi)
// and then tries every way of smuggling another action behind an echo. Each one must wait for a
// person at GET /permission; rejecting it must leave the file system untouched.
func TestAGrantCoversOnlyWhatWasApproved(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "echo hi")
	if strings.Join(asked.Always, ",") != "echo *" {
		t.Fatalf("always patterns %q, want echo *", asked.Always)
	}
	td.reply(t, asked.ID, "always", "")
	if status, _ := finalTool(t, td, events, sid); status != "completed" {
		t.Fatalf("echo hi after always: %s", status)
	}

	outside := t.TempDir()
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

// TestAConfiguredDenyWinsOverAGrant: "always" on one git push grants the git push family, but the
// user's own deny rule for pushing to origin still decides.
func TestAConfiguredDenyWinsOverAGrant(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": {"git push origin *": "deny"}}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "git push --dry-run upstream")
	if strings.Join(asked.Always, ",") != "git push *" {
		t.Fatalf("always patterns %q, want git push *", asked.Always)
	}
	td.reply(t, asked.ID, "always", "")
	finalTool(t, td, events, sid)

	before := events.mark()
	td.promptAsync(t, sid, "run: git -C . push origin main")
	if status, detail := finalTool(t, td, events, sid); status != "error" || !strings.Contains(detail, "prevents you") {
		t.Fatalf("git push origin after the grant: %s %q", status, detail)
	}
	for _, e := range events.since(before) {
		if e.Type == "permission.asked" {
			t.Fatalf("a denied command asked: %s", e.Properties)
		}
	}
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
