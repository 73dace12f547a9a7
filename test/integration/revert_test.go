package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// gitIn runs git in dir (the test's own calls, never the server's) and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testenv.Git(t, dir, args...)
}

func readFile(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// gitState is what the user's own repository looks like: its status, HEAD and object count.
func gitState(t *testing.T, dir string) string {
	t.Helper()
	return gitIn(t, dir, "status", "--porcelain", "--untracked-files=all") + gitIn(t, dir, "rev-parse", "HEAD") +
		gitIn(t, dir, "count-objects", "-v") + gitIn(t, dir, "stash", "list")
}

func TestRevertRestoresTheFilesAnAgentWrote(t *testing.T) {
	for _, tc := range []struct {
		name string
		git  bool
	}{
		{"in a git project, whose own repository is left untouched", true},
		{"in a directory outside git", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			td := newTandem(t, setup{config: `{"permission": {"edit": "allow"}}`})
			keep := filepath.Join(td.project, "keep.txt")
			if err := os.WriteFile(keep, []byte("original\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var before string
			if tc.git {
				gitIn(t, td.project, "init", "-q")
				gitIn(t, td.project, "add", ".")
				gitIn(t, td.project, "commit", "-qm", "start")
				before = gitState(t, td.project)
			}
			td.start(t)
			t.Cleanup(func() { td.stop(t) })
			sid := td.newSession(t)

			td.prompt(t, sid, "write: keep.txt\nchanged by the agent\n")
			td.prompt(t, sid, "write: fresh/new.txt\nnew file\n")
			if got, _ := readFile(t, keep); got != "changed by the agent\n" {
				t.Fatalf("the agent did not write keep.txt: %q", got)
			}
			msgs := td.messages(t, sid)
			// A step that writes has a snapshot on its step-start and step-finish, and a patch part
			// from the first; a step that only talks takes none.
			var patches []session.Part
			for _, m := range msgs {
				wrote := slices.ContainsFunc(m.Parts, func(p session.Part) bool { return p.Type == "tool" })
				var start session.Part
				for _, p := range m.Parts {
					if (p.Type == "step-start" || p.Type == "step-finish") && (p.Snapshot != "") != wrote {
						t.Errorf("a %s part with snapshot %q in a step that wrote: %v", p.Type, p.Snapshot, wrote)
					}
					if p.Type == "step-start" {
						start = p
					}
					if p.Type == "patch" {
						patches = append(patches, p)
						if p.Hash != start.Snapshot {
							t.Errorf("the patch's hash %s is not its step-start's snapshot %s", p.Hash, start.Snapshot)
						}
					}
				}
			}
			if len(patches) != 2 || len(patches[0].Files) != 1 || patches[0].Files[0] != keep || patches[0].Hash == "" ||
				len(patches[1].Files) != 1 || patches[1].Files[0] != filepath.Join(td.project, "fresh", "new.txt") {
				t.Fatalf("patch parts %+v", patches)
			}
			var users []string
			for _, m := range msgs {
				if m.Info.Role == session.RoleUser {
					users = append(users, m.Info.ID)
				}
			}
			if len(users) != 2 {
				t.Fatalf("%d user messages, want 2", len(users))
			}
			firstUser, secondUser, all := users[0], users[1], len(msgs)

			// Each answer is decoded into a fresh Session, so that an absent revert field reads as nil.
			var sess session.Session
			call := func(method, path, body string) {
				t.Helper()
				sess = session.Session{}
				td.call(t, method, path, body, http.StatusOK, &sess)
			}
			// Undo the second turn: the new file goes, keep.txt stays as the first turn left it.
			call(http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+secondUser+`"}`)
			if _, ok := readFile(t, filepath.Join(td.project, "fresh", "new.txt")); ok {
				t.Fatal("the file of the reverted turn is still there")
			}
			if got, _ := readFile(t, keep); got != "changed by the agent\n" {
				t.Fatalf("keep.txt after undoing the second turn: %q", got)
			}
			// Undo the first one too: keep.txt is the original again.
			call(http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+firstUser+`"}`)
			if got, _ := readFile(t, keep); got != "original\n" {
				t.Fatalf("keep.txt after revert: %q", got)
			}
			if sess.Revert == nil || sess.Revert.MessageID != firstUser || sess.Revert.Snapshot == "" ||
				!strings.Contains(sess.Revert.Diff, "-changed by the agent") || !strings.Contains(sess.Revert.Diff, "+original") {
				t.Fatalf("the session's revert field: %+v", sess.Revert)
			}
			call(http.MethodGet, "/session/"+sid, "")
			if sess.Revert == nil || sess.Revert.MessageID != firstUser {
				t.Fatalf("the stored revert field: %+v", sess.Revert)
			}

			// Redo one turn (the TUI's /redo moves the point to the next user message): the first
			// turn's change comes back, the second's stays undone.
			call(http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+secondUser+`"}`)
			if got, _ := readFile(t, keep); got != "changed by the agent\n" {
				t.Fatalf("keep.txt after moving the revert point forward: %q", got)
			}
			if _, ok := readFile(t, filepath.Join(td.project, "fresh", "new.txt")); ok {
				t.Fatal("the second turn's file came back with the first turn")
			}
			if sess.Revert == nil || sess.Revert.MessageID != secondUser {
				t.Fatalf("the moved revert field: %+v", sess.Revert)
			}
			// Redo all: everything comes back.
			call(http.MethodPost, "/session/"+sid+"/unrevert", "")
			if sess.Revert != nil {
				t.Fatalf("unrevert left %+v", sess.Revert)
			}
			if got, _ := readFile(t, keep); got != "changed by the agent\n" {
				t.Fatalf("keep.txt after unrevert: %q", got)
			}
			if got, _ := readFile(t, filepath.Join(td.project, "fresh", "new.txt")); got != "new file\n" {
				t.Fatalf("new.txt after unrevert: %q", got)
			}
			if n := len(td.messages(t, sid)); n != all {
				t.Fatalf("%d messages after unrevert, want all %d", n, all)
			}

			// Revert again, then prompt: the reverted turns are gone for good.
			call(http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+firstUser+`"}`)
			stream := td.subscribe(t)
			td.prompt(t, sid, "hello again")
			stream.waitFor(t, "message.removed of the reverted user message", func(e event) bool {
				return e.Type == "message.removed" && strings.Contains(string(e.Properties), firstUser)
			})
			msgs = td.messages(t, sid)
			if len(msgs) != 2 || msgs[0].Info.Role != session.RoleUser || textOf(msgs[1]) != "You said: hello again" {
				t.Fatalf("after a prompt, the reverted messages should be gone: %+v", msgs)
			}
			call(http.MethodGet, "/session/"+sid, "")
			if sess.Revert != nil {
				t.Fatalf("the prompt left the revert field: %+v", sess.Revert)
			}
			var diff []session.FileDiff
			td.call(t, http.MethodGet, "/session/"+sid+"/diff", "", http.StatusOK, &diff)
			if len(diff) != 0 {
				t.Fatalf("the session diff still lists the dropped turns' changes: %+v", diff)
			}
			if got, _ := readFile(t, keep); got != "original\n" {
				t.Fatalf("keep.txt after the prompt: %q", got)
			}
			if tc.git {
				if after := gitState(t, td.project); after != before {
					t.Fatalf("the project's own repository changed:\nbefore %s\nafter %s", before, after)
				}
			}
		})
	}
}

func TestRevertIsRefusedWhileTheSessionIsBusy(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "ask", "edit": "allow"}}`})
	sid := td.newSession(t)
	td.prompt(t, sid, "write: a.txt\nA\n")
	first := td.messages(t, sid)[0].Info.ID
	s := td.subscribe(t)
	td.promptAsync(t, sid, "run: true")
	asked := s.waitFor(t, "the bash approval", ofType("permission.asked", sid)).permission()

	for _, path := range []string{"/revert", "/unrevert"} {
		status, body := td.request(t, http.MethodPost, "/session/"+sid+path, `{"messageID":"`+first+`"}`)
		if status != http.StatusConflict || !strings.Contains(string(body), "SessionBusyError") {
			t.Fatalf("%s while busy: %d %s", path, status, body)
		}
	}
	td.reply(t, asked.ID, "reject", "")
	s.waitFor(t, "the turn's end", idle(sid))
	if got, _ := readFile(t, filepath.Join(td.project, "a.txt")); got != "A\n" {
		t.Fatalf("a refused revert changed a.txt: %q", got)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"an unknown message is not found", `{"messageID":"msg_0000000000001234567890abcd"}`, "MessageNotFoundError"},
		{"a malformed message ID is refused", `{"messageID":"nope"}`, "messageID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := td.request(t, http.MethodPost, "/session/"+sid+"/revert", tc.body)
			if status/100 != 4 || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s", status, body)
			}
		})
	}
}

func TestTheModelNeverSeesRevertedMessages(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_w", Name: "write", Arguments: `{"filePath":"secret.txt","content":"SECRET-CONTENT"}`}}},
		providertest.Turn{Text: []string{"wrote it"}},
		providertest.Turn{Text: []string{"fine"}},
	)
	env := openAIEnv(llm)
	td := startTandem(t, setup{config: `{"permission": {"edit": "allow"}}`, env: env})
	sid := td.newSession(t)
	td.prompt(t, sid, "REVERTED-PROMPT: write the secret")
	first := td.messages(t, sid)[0].Info.ID
	td.call(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+first+`"}`, http.StatusOK, nil)
	if _, ok := readFile(t, filepath.Join(td.project, "secret.txt")); ok {
		t.Fatal("the reverted write is still on disk")
	}
	td.prompt(t, sid, "a new start")
	reqs := llm.Requests()
	last := reqs[len(reqs)-1]
	if !requestContains(last, "a new start") || requestContains(last, "REVERTED-PROMPT") || requestContains(last, "SECRET-CONTENT") {
		t.Fatalf("the model was sent reverted messages: %s", last.Body)
	}
}

func TestRevertUndoesWhatAnAbortedStepChanged(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow", "edit": "allow"}}`})
	sid := td.newSession(t)
	file := filepath.Join(td.project, "half.txt")
	s := td.subscribe(t)
	td.promptAsync(t, sid, "run: echo half-done > half.txt; sleep 30")
	s.waitFor(t, "the command running", toolIn(sid, "running"))
	deadline := time.Now().Add(waitLimit)
	for {
		if got, _ := readFile(t, file); got == "half-done\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote half.txt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, nil)
	msgs := td.messages(t, sid)
	var patch *session.Part
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == "patch" {
				patch = &p
			}
		}
	}
	if patch == nil || len(patch.Files) != 1 || patch.Files[0] != file {
		t.Fatalf("the aborted step's patch part: %+v", patch)
	}
	td.call(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+msgs[0].Info.ID+`"}`, http.StatusOK, nil)
	if _, ok := readFile(t, file); ok {
		t.Fatal("the revert left the file the aborted step wrote")
	}
}

func TestRevertingFromAPartKeepsWhatCameBeforeIt(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"KEPT-TEXT before the write"}, ToolCalls: []providertest.ToolCall{{ID: "call_w", Name: "write", Arguments: `{"filePath":"part.txt","content":"from the tool"}`}}},
		providertest.Turn{Text: []string{"DROPPED-TEXT after the write"}},
		providertest.Turn{Text: []string{"fine"}},
	)
	td := startTandem(t, setup{config: `{"permission": {"edit": "allow"}}`, env: openAIEnv(llm)})
	sid := td.newSession(t)
	td.prompt(t, sid, "write part.txt")
	msgs := td.messages(t, sid)
	step := msgs[1]
	var toolPart string
	for _, p := range step.Parts {
		if p.Type == "tool" {
			toolPart = p.ID
		}
	}
	if toolPart == "" {
		t.Fatalf("no tool part in %+v", step.Parts)
	}
	var sess session.Session
	td.call(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+step.Info.ID+`","partID":"`+toolPart+`"}`, http.StatusOK, &sess)
	if sess.Revert == nil || sess.Revert.MessageID != step.Info.ID || sess.Revert.PartID != toolPart {
		t.Fatalf("revert field %+v; want the step's message and the tool part", sess.Revert)
	}
	if _, ok := readFile(t, filepath.Join(td.project, "part.txt")); ok {
		t.Fatal("the tool's file survived the revert")
	}
	td.prompt(t, sid, "go on")
	msgs = td.messages(t, sid)
	if len(msgs) != 4 || msgs[1].Info.ID != step.Info.ID || msgs[2].Info.Role != session.RoleUser {
		t.Fatalf("after the prompt: %d messages", len(msgs))
	}
	var kept []string
	for _, p := range msgs[1].Parts {
		kept = append(kept, p.Type)
	}
	if strings.Join(kept, ",") != "step-start,text" || textOf(msgs[1]) != "KEPT-TEXT before the write" {
		t.Fatalf("the reverted message kept %v (%q); want its parts before the tool", kept, textOf(msgs[1]))
	}
	last := llm.Requests()[len(llm.Requests())-1]
	if !requestContains(last, "KEPT-TEXT") || requestContains(last, "DROPPED-TEXT") || requestContains(last, "from the tool") {
		t.Fatalf("the model's history after the revert: %s", last.Body)
	}
}

func TestRevertWorksAfterARestart(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"edit": "allow"}}`})
	sid := td.newSession(t)
	td.prompt(t, sid, "write: kept.txt\nacross restarts\n")
	first := td.messages(t, sid)[0].Info.ID
	// The restart prunes snapshots older than a week from the shadow repository; this one stays.
	td.restart(t)
	td.call(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+first+`"}`, http.StatusOK, nil)
	if _, ok := readFile(t, filepath.Join(td.project, "kept.txt")); ok {
		t.Fatal("the revert after a restart left kept.txt")
	}
	td.restart(t)
	td.call(t, http.MethodPost, "/session/"+sid+"/unrevert", "", http.StatusOK, nil)
	if got, _ := readFile(t, filepath.Join(td.project, "kept.txt")); got != "across restarts\n" {
		t.Fatalf("kept.txt after unrevert across a restart: %q", got)
	}
}

// TestAShellCommandAfterARevertMakesItPermanent: `!cmd` after /undo drops the reverted turn and
// clears the revert, as a prompt does (OpenCode's shell cleans up the revert too).
func TestAShellCommandAfterARevertMakesItPermanent(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"edit": "allow"}}`})
	sid := td.newSession(t)
	td.prompt(t, sid, "write: kept.txt\nK\n")
	before := len(td.messages(t, sid))
	td.prompt(t, sid, "write: undone.txt\nU\n")
	second := td.messages(t, sid)[before].Info.ID
	var reverted session.Session
	td.call(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+second+`"}`, http.StatusOK, &reverted)
	if reverted.Revert == nil {
		t.Fatal("no revert recorded")
	}
	td.call(t, http.MethodPost, "/session/"+sid+"/shell", `{"agent":"build","command":"echo after-undo"}`, http.StatusOK, nil)
	var after session.Session
	td.call(t, http.MethodGet, "/session/"+sid, "", http.StatusOK, &after)
	if after.Revert != nil {
		t.Fatalf("the revert is still pending after a shell command: %+v", after.Revert)
	}
	msgs := td.messages(t, sid)
	for _, m := range msgs {
		if m.Info.ID == second {
			t.Fatal("the reverted turn is still stored")
		}
	}
	if len(msgs) != before+2 { // the kept turn, then the shell command's two messages
		t.Fatalf("%d messages after the shell command, want %d", len(msgs), before+2)
	}
	if _, ok := readFile(t, filepath.Join(td.project, "undone.txt")); ok {
		t.Fatal("the reverted file came back")
	}
}

// TestARevertThroughASwappedLinkIsRefusedClearly: after the agent wrote fresh/new.txt, the directory
// fresh is swapped for a symbolic link out of the project. The revert is a 409 that names the link and
// what to do, nothing outside changes, nothing is reverted, and once the link is gone it works.
func TestARevertThroughASwappedLinkIsRefusedClearly(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"edit": "allow"}}`})
	sid := td.newSession(t)
	if err := os.WriteFile(filepath.Join(td.project, "keep.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	td.prompt(t, sid, "write: keep.txt\nchanged\n")
	td.prompt(t, sid, "write: fresh/new.txt\nnew file\n")
	var firstUser string
	for _, m := range td.messages(t, sid) {
		if m.Info.Role == session.RoleUser {
			firstUser = m.Info.ID
			break
		}
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "new.txt"), []byte("someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(td.project, "fresh")
	if err := os.RemoveAll(fresh); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, fresh); err != nil {
		t.Fatal(err)
	}

	status, body := td.request(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+firstUser+`"}`)

	if status != http.StatusConflict || !strings.Contains(string(body), "RevertLinkError") ||
		!strings.Contains(string(body), "fresh is now a symbolic link") || !strings.Contains(string(body), "revert again") {
		t.Fatalf("revert through the link: %d %s", status, body)
	}
	if got, _ := readFile(t, filepath.Join(outside, "new.txt")); got != "someone else's\n" {
		t.Fatalf("the file outside the project is %q", got)
	}
	if got, _ := readFile(t, filepath.Join(td.project, "keep.txt")); got != "changed\n" {
		t.Fatalf("a refused revert changed keep.txt: %q", got)
	}
	var sess session.Session
	td.call(t, http.MethodGet, "/session/"+sid, "", http.StatusOK, &sess)
	if sess.Revert != nil {
		t.Fatalf("a refused revert was recorded: %+v", sess.Revert)
	}

	if err := os.Remove(fresh); err != nil {
		t.Fatal(err)
	}
	td.call(t, http.MethodPost, "/session/"+sid+"/revert", `{"messageID":"`+firstUser+`"}`, http.StatusOK, nil)
	if got, _ := readFile(t, filepath.Join(td.project, "keep.txt")); got != "original\n" {
		t.Fatalf("keep.txt after the revert: %q", got)
	}
}
