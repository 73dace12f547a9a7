//go:build linux

package integration

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// screen is one `tandem attach` running in its own tmux server, read with capture-pane.
type screen struct {
	t      *testing.T
	socket string
	name   string
	poll   time.Duration // how often waitFor reads the screen
}

// attachIn starts `tandem attach URL args...` in a new 120×40 tmux session; the password comes
// from the environment, and HOME is empty so no local state file is found.
func attachIn(t *testing.T, url, password string, args ...string) *screen {
	t.Helper()
	return attachWith(t, url, password, nil, args...)
}

// attachWith is attachIn with more of the UI's environment (NAME=value).
func attachWith(t *testing.T, url, password string, env []string, args ...string) *screen {
	t.Helper()
	s := startScreen(t, url, password, env, args...)
	s.waitFor("the status line says connected, in a session", func(sc string) bool {
		return strings.Contains(sc, "● connected") && !strings.Contains(sc, "│ no session │")
	})
	return s
}

// startScreen starts `tandem attach` in tmux without waiting for anything; env adds NAME=value
// pairs to its environment.
func startScreen(t *testing.T, url, password string, env []string, args ...string) *screen {
	t.Helper()
	testenv.Program(t, "tmux", "apt-get install tmux")
	bin := builtBinary(t)
	dir, err := os.MkdirTemp("", "tat") // a short path: a unix socket path has ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &screen{t: t, socket: filepath.Join(dir, "s"), name: "tui", poll: 50 * time.Millisecond}
	home := t.TempDir()
	command := fmt.Sprintf("env HOME=%s XDG_STATE_HOME=%s XDG_CONFIG_HOME=%s XDG_DATA_HOME=%s TERM=xterm-256color TANDEM_SERVER_PASSWORD=%s %s %s attach %s %s; sleep 600",
		home, home, home, home, password, strings.Join(env, " "), bin, url, strings.Join(args, " "))
	s.tmux("new-session", "-d", "-s", s.name, "-x", "120", "-y", "40", command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	return s
}

// on is the same screen reporting to t (a subtest's).
func (s *screen) on(t *testing.T) *screen {
	c := *s
	c.t = t
	return &c
}

func (s *screen) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// text is what the screen shows now.
func (s *screen) text() string { return s.tmux("capture-pane", "-p", "-t", s.name) }

// waitFor polls the screen until pred holds (waitLimit at most) and returns it.
func (s *screen) waitFor(what string, pred func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		sc := s.text()
		if pred(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waiting for %s; the screen:\n%s", what, sc)
		}
		time.Sleep(s.poll)
	}
}

// waitText waits until the screen shows every one of texts.
func (s *screen) waitText(texts ...string) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("%q on screen", texts), func(sc string) bool {
		for _, x := range texts {
			if !strings.Contains(sc, x) {
				return false
			}
		}
		return true
	})
}

// waitGone waits until the screen no longer shows text.
func (s *screen) waitGone(text string) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("%q gone", text), func(sc string) bool { return !strings.Contains(sc, text) })
}

// typeText types literally; keys sends tmux key names (Enter, Escape, C-w, 1, …).
func (s *screen) typeText(text string) { s.tmux("send-keys", "-t", s.name, "-l", text) }
func (s *screen) keys(keys ...string) {
	s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// prompt types a prompt and sends it.
func (s *screen) prompt(text string) {
	s.typeText(text)
	s.keys("Enter")
}

func TestAttachShowsAPromptsStreamedAnswer(t *testing.T) {
	td := startTandem(t, setup{})
	sc := attachIn(t, td.base, testPassword)

	first := sc.text()
	if !strings.Contains(first, strings.TrimPrefix(td.base, "http://")) || !strings.Contains(first, "build") || !strings.Contains(first, "demo/") {
		t.Fatalf("the status line names the server, agent and model; the screen:\n%s", first)
	}
	sc.prompt("slow: streamed *word* by word")
	sc.waitText("┃ slow: streamed *word* by word", "streamed word by word")
	if got := strings.Count(sc.text(), "streamed word by word"); got != 1 {
		t.Fatalf("the answer shows %d times:\n%s", got, sc.text())
	}
}

func TestAttachAnswersApprovals(t *testing.T) {
	td := startTandem(t, setup{})
	sc := attachIn(t, td.base, testPassword)

	t.Run("allow once runs the command and its output shows", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("run: echo once-$((20+22))")
		sc.waitText("Permission: bash", "$ echo once-$((20+22))", "[1] Allow once")
		sc.keys("1")
		sc.waitText("✓ bash $ echo once-$((20+22))", "once-42")
		sc.waitGone("Permission: bash")
	})
	t.Run("always allow remembers the command family and the next one runs unasked", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("run: printf always-%s one")
		sc.waitText("Permission: bash", "$ printf always-%s one")
		sc.keys("Right", "Right", "Enter") // the third decision: Always allow in this project
		sc.waitText("always-one")
		var grants []permission.Grant
		td.call(t, http.MethodGet, "/permission/grant", "", http.StatusOK, &grants)
		if len(grants) != 1 || grants[0].Action != permission.Allow {
			t.Fatalf("grants after always: %+v", grants)
		}
		sc.prompt("run: printf always-%s two")
		sc.waitText("always-two")
		if strings.Contains(sc.text(), "Permission: bash") {
			t.Fatalf("a granted command asked again:\n%s", sc.text())
		}
	})
	t.Run("reject with a message tells the agent and nothing runs", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("run: touch made-by-attach")
		sc.waitText("Permission: bash", "$ touch made-by-attach")
		sc.keys("5")
		sc.waitText("tell the agent why")
		sc.typeText("not in this repository")
		sc.keys("Enter")
		sc.waitText("✗ bash $ touch made-by-attach", "not in this repository")
		if _, err := os.Stat(filepath.Join(td.project, "made-by-attach")); !os.IsNotExist(err) {
			t.Fatalf("the rejected command ran: %v", err)
		}
	})
}

func TestAttachAnswersAQuestionWithItsOwnText(t *testing.T) {
	td := startTandem(t, setup{})
	sc := attachIn(t, td.base, testPassword)

	sc.prompt("ask: Which database? | Postgres | SQLite")
	sc.waitText("Question: Which database", "1.   Postgres", "3. Type your own answer")
	sc.keys("3")
	sc.typeText("DuckDB, embedded")
	sc.keys("Enter")
	sc.waitText(`"Which database?"="DuckDB, embedded"`)
	sc.waitGone("Type your own answer")
}

func TestAttachFillsInAnMCPFormFromServerEverything(t *testing.T) {
	td := startWithEverything(t)
	sc := attachIn(t, td.base, testPassword)

	sc.prompt("mcp: everything trigger-elicitation-request {}")
	sc.waitText("Permission: everything_trigger-elicitation-request")
	sc.keys("1")
	form := sc.waitText("MCP server everything asks")
	if !strings.Contains(form, "(integer)") || !strings.Contains(form, "(boolean)") {
		t.Fatalf("the form shows its fields with their types:\n%s", form)
	}
	// The first field (the name) takes the text; then the integer gets a value the schema refuses.
	sc.typeText("Ada Lovelace")
	fields := formFields(form)
	at := slices.IndexFunc(fields, func(l string) bool { return strings.HasSuffix(l, "(integer)") })
	if at < 0 {
		t.Fatalf("no integer field in %q", fields)
	}
	for range at {
		sc.keys("Tab")
	}
	sc.waitText("▸ Integer: › 42")
	sc.keys("BSpace", "BSpace")
	sc.typeText("500")
	sc.keys("C-s")
	sc.waitText("✗ must be at most 100") // the server's 400, shown at the field
	if strings.Contains(sc.text(), "✓ everything_trigger-elicitation-request") {
		t.Fatal("an invalid answer completed the tool")
	}
	sc.keys("BSpace", "BSpace", "BSpace")
	sc.typeText("7")
	sc.keys("C-s")
	// The demo model answers with the tool's result once the tool has completed; the answer keeps its
	// lines, so the tool's own line may have scrolled above it.
	sc.waitText("everything_trigger-elicitation-request returned:", "Name: Ada Lovelace", "Favorite Integer: 7")
	sc.waitGone("MCP server everything asks")
}

var formField = regexp.MustCompile(`^(▸ )?[^ ].*: .*\((string|boolean|integer|number|enum|multi)(, [a-z-]+)?\)$`)

// formFields are the form's field lines on screen, in order.
func formFields(screen string) []string {
	var out []string
	for _, line := range strings.Split(screen, "\n") {
		l := strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "│"))
		if formField.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

func TestAttachClosesADialogAnsweredElsewhere(t *testing.T) {
	td := startTandem(t, setup{})
	sc := attachIn(t, td.base, testPassword)

	sc.prompt("run: echo answered-over-rest")
	sc.waitText("Permission: bash")
	var pending []permission.Request
	td.call(t, http.MethodGet, "/permission", "", http.StatusOK, &pending)
	if len(pending) != 1 {
		t.Fatalf("pending: %+v", pending)
	}
	td.answerAs(t, "curl/8.0", "/permission/"+pending[0].ID+"/reply", `{"reply":"once"}`)
	sc.waitText("answered by curl (once)", "✓ bash $ echo answered-over-rest")
	sc.waitGone("Permission: bash")
}

func TestAttachTwoScreensShareTheInbox(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	a := attachIn(t, td.base, testPassword, "--session", sid)
	b := attachIn(t, td.base, testPassword, "--session", sid)

	a.prompt("run: echo seen-by-both")
	a.waitText("Permission: bash")
	b.waitText("Permission: bash", "┃ run: echo seen-by-both")
	b.keys("1")
	a.waitText("answered by tandem attach (once)", "✓ bash $ echo seen-by-both")
	b.waitText("✓ bash $ echo seen-by-both")
	if strings.Contains(b.text(), "answered by") {
		t.Fatalf("the screen that answered says another client did:\n%s", b.text())
	}

	t.Run("a request in another session shows as a badge", func(t *testing.T) {
		a := a.on(t)
		other := td.newSession(t)
		td.promptAsync(t, other, "run: echo elsewhere")
		a.waitText("⚑ 1 waiting (1 in other sessions)")
		a.keys("C-w")
		a.waitText("Waiting for you", "approve bash: echo elsewhere")
		a.keys("Enter")
		a.waitText("Permission: bash", "$ echo elsewhere")
		a.keys("1")
		a.waitText("✓ bash $ echo elsewhere")
	})
}

// serveProcess is `tandem serve` from the built binary on a fixed port, so that it can be killed
// and started again at the same address.
type serveProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startServe(t *testing.T, data, project string, port int) *serveProcess {
	t.Helper()
	cmd := exec.Command(builtBinary(t), "serve", "--port", strconv.Itoa(port), "--data-dir", data, "--dir", project)
	cmd.Env = append(os.Environ(), "TANDEM_SERVER_PASSWORD="+testPassword, "XDG_STATE_HOME="+data, "XDG_CONFIG_HOME="+data, "HOME="+data)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, done: make(chan struct{})}
	listening := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), " listening on ") {
				close(listening)
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(p.kill)
	select {
	case <-listening:
	case <-time.After(waitLimit):
		t.Fatal("tandem serve did not start listening")
	}
	return p
}

// kill ends the server at once (SIGKILL: no graceful shutdown) and waits for it.
func (p *serveProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func TestAttachCarriesOnAcrossAServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	data, project := t.TempDir(), t.TempDir()
	port := testenv.UnusedPort(t)
	srv := startServe(t, data, project, port)
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	sc := attachIn(t, url, testPassword)

	sc.prompt("before the restart")
	sc.waitText("You said: before the restart")
	srv.kill()
	sc.waitText("○ reconnecting")
	startServe(t, data, project, port)
	sc.waitText("● connected")
	sc.prompt("after the restart")
	sc.waitText("You said: after the restart")
	screen := sc.text()
	for _, s := range []string{"You said: before the restart", "You said: after the restart", "┃ before the restart", "┃ after the restart"} {
		if n := strings.Count(screen, s); n != 1 {
			t.Fatalf("%q shows %d times, want once:\n%s", s, n, screen)
		}
	}
}

// TestAttachLatency measures what a person waits for: from starting `tandem attach` to its first
// full frame, and from a key press to the key on screen while a 5,000-line command streams its
// output into the same screen. It measures, it asserts nothing about speed; set
// TANDEM_ATTACH_BENCH=1 to run it (the numbers are in the README's Benchmarks).
func TestAttachLatency(t *testing.T) {
	if os.Getenv("TANDEM_ATTACH_BENCH") == "" {
		t.Skip("set TANDEM_ATTACH_BENCH=1 to measure")
	}
	td := startTandem(t, setup{})
	builtBinary(t) // built before the clock starts
	var starts []time.Duration
	for range 5 {
		begin := time.Now()
		sc := startScreen(t, td.base, testPassword, nil)
		sc.poll = time.Millisecond
		sc.waitFor("the first connected frame", func(screen string) bool { return strings.Contains(screen, "● connected") })
		starts = append(starts, time.Since(begin))
		sc.tmux("kill-server")
	}
	t.Logf("attach start to first connected frame over %d runs: %s", len(starts), spread(starts))

	sc := attachIn(t, td.base, testPassword)
	sc.poll = time.Millisecond
	t.Logf("keystroke to screen with nothing streaming, 20 keys: %s", spread(keyLatency(sc, 20, nil)))
	sc.keys("C-u")
	sc.waitFor("an empty prompt", func(screen string) bool { return strings.Contains(screen, "Ask anything") })
	sc.prompt("run: for i in $(seq 1 5000); do echo line $i; sleep 0.001; done")
	sc.waitText("Permission: bash")
	sc.keys("1")
	sc.waitText("│ line 10")
	lat := keyLatency(sc, 40, func(i int) {
		if strings.Contains(sc.text(), "✓ bash") {
			t.Fatalf("the command ended after %d keys: measure with a longer one", i+1)
		}
	})
	t.Logf("keystroke to screen while the output streams, %d keys: %s (tmux capture-pane polled every 1 ms)", len(lat), spread(lat))
}

// keyLatency types n letters one at a time and measures each one's way to the screen; after is
// called after each.
func keyLatency(sc *screen, n int, after func(i int)) []time.Duration {
	typed := ""
	var lat []time.Duration
	for i := range n {
		c := string(rune('a' + i%26))
		typed += c
		begin := time.Now()
		sc.typeText(c)
		sc.waitFor("the key on screen", func(screen string) bool { return strings.Contains(promptLine(screen), typed) })
		lat = append(lat, time.Since(begin))
		if after != nil {
			after(i)
		}
	}
	return lat
}

// promptLine is the prompt's first line on screen.
func promptLine(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "› ") {
			return l
		}
	}
	return ""
}

func spread(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	return fmt.Sprintf("min %v, median %v, p90 %v, max %v", s[0].Round(time.Millisecond), s[len(s)/2].Round(time.Millisecond),
		s[len(s)*9/10].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

func TestAttachManagesSessions(t *testing.T) {
	td := startTandem(t, setup{})
	sc := attachIn(t, td.base, testPassword)
	sc.prompt("First session")
	sc.waitText("You said: First session")

	t.Run("ctrl+n starts a session and ! runs a shell command in it", func(t *testing.T) {
		sc := sc.on(t)
		sc.keys("C-n")
		sc.waitText("│ New session - ")
		sc.prompt("!echo shell-$((6*7))")
		sc.waitText("✓ bash $ echo shell-$((6*7))", "shell-42")
	})
	t.Run("the session list searches, renames, forks and deletes", func(t *testing.T) {
		sc := sc.on(t)
		sc.keys("C-s")
		sc.waitText("Sessions", "First session") // the demo model's title of the first prompt
		sc.typeText("First")
		sc.waitFor("only the matching session", func(s string) bool {
			return strings.Contains(s, "▸ First session") && !strings.Contains(s, "\n  New session - ")
		})
		sc.keys("C-r", "C-u")
		sc.typeText("renamed one")
		sc.keys("Enter")
		sc.waitText("renamed to renamed one")
		var got session.Session
		sessions := func() []session.Session {
			var list []session.Session
			td.call(t, http.MethodGet, "/session", "", http.StatusOK, &list)
			return list
		}
		for _, s := range sessions() {
			if s.Title == "renamed one" {
				got = s
			}
		}
		if got.ID == "" {
			t.Fatalf("no renamed session in %+v", sessions())
		}
		sc.keys("Escape")
		sc.waitGone("Sessions  type to search")
		sc.keys("C-s")
		sc.waitText("Sessions  type to search")
		sc.typeText("renamed")
		sc.waitText("▸ renamed one")
		sc.keys("C-f")
		sc.waitText("│ renamed one (fork #1) │", "You said: First session")
		if n := len(sessions()); n != 3 {
			t.Fatalf("%d sessions after a fork, want 3", n)
		}
		sc.keys("C-s")
		sc.waitText("▸ renamed one (fork #1)")
		sc.keys("C-d")
		sc.waitText(`delete "renamed one (fork #1)"?`)
		sc.keys("y")
		testenv.Eventually(t, "the fork is deleted", func() bool { return len(sessions()) == 2 })
		sc.waitGone("(fork #1) │")
	})
}

func TestAttachUndoesRedoesAndSwitchesAgents(t *testing.T) {
	td := startTandem(t, setup{})
	sc := attachIn(t, td.base, testPassword)
	sc.prompt("first prompt")
	sc.waitText("You said: first prompt")
	sc.prompt("second prompt")
	sc.waitText("You said: second prompt")

	sc.keys("C-z")
	sc.waitText("⟲ 1 prompt(s) undone")
	sc.waitFor("the undone prompt back in the editor", func(s string) bool { return strings.Contains(promptLine(s), "second prompt") })
	if strings.Contains(sc.text(), "You said: second prompt") {
		t.Fatalf("the undone turn still shows:\n%s", sc.text())
	}
	sc.keys("C-y")
	sc.waitText("You said: second prompt")
	sc.waitGone("undone —")

	sc.keys("Tab")
	sc.waitText("│ plan │")
	sc.prompt("run: touch planned-file")
	sc.waitText("I would call the bash tool, but it is not available") // plan is offered no bash
	if _, err := os.Stat(filepath.Join(td.project, "planned-file")); !os.IsNotExist(err) {
		t.Fatalf("the plan agent ran a command: %v", err)
	}
}

func TestAttachStopsATurnWithEscEsc(t *testing.T) {
	td := startTandem(t, setup{})
	sc := attachIn(t, td.base, testPassword)
	sc.prompt("run: sleep 120")
	sc.waitText("Permission: bash")
	sc.keys("1")
	sc.waitText("● bash $ sleep 120", "working (Esc Esc stops)")
	sc.keys("Escape")
	sc.waitText("press Esc again to stop the turn")
	sc.keys("Escape")
	sc.waitGone("working (Esc Esc stops)")
	sc.waitText("✗ bash $ sleep 120")
}

// TestAttachSendsMentionedFilesToTheModel has a scripted model answer two prompts: the first
// @-mentions a file completed with Tab, the second a file typed in full and a file that does not
// exist. What only the files hold reaches the model; the missing one stays text.
func TestAttachSendsMentionedFilesToTheModel(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"the notes say kumquat"}},
		providertest.Turn{Text: []string{"one of them is missing"}},
		providertest.Turn{Text: []string{"src holds notes"}})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	for name, content := range map[string]string{
		"src/notes.txt": "the password is kumquat-7731\n",
		"other.txt":     "the colour is vermilion-4412\n",
	} {
		path := filepath.Join(td.project, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc := attachIn(t, td.base, testPassword)
	lastRequest := func(t *testing.T, n int) providertest.Request {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for len(llm.Requests()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("the model got %d requests, want %d", len(llm.Requests()), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return llm.Requests()[n-1]
	}

	t.Run("a completed @path goes to the model with its content", func(t *testing.T) {
		sc := sc.on(t)
		sc.typeText("what do @src/not")
		sc.waitText("src/notes.txt   (Tab completes the first)")
		sc.keys("Tab")
		sc.waitText("@src/notes.txt")
		sc.prompt("say?")
		sc.waitText("┃ what do @src/notes.txt say?", "📎 src/notes.txt", "the notes say kumquat")
		r := lastRequest(t, 1)
		if !requestContains(r, "the password is kumquat-7731") || !requestContains(r, "what do @src/notes.txt say?") {
			t.Fatalf("the model's request lacks the file's content or the mention:\n%s", r.Body)
		}
		var sessions []session.Session
		td.call(t, http.MethodGet, "/session", "", http.StatusOK, &sessions)
		if len(sessions) != 1 {
			t.Fatalf("%d sessions, want 1", len(sessions))
		}
		var file *session.Part
		for _, m := range td.messages(t, sessions[0].ID) {
			for i, p := range m.Parts {
				if m.Info.Role == session.RoleUser && p.Type == "file" {
					file = &m.Parts[i]
				}
			}
		}
		const want = `{"type":"file","path":"src/notes.txt","text":{"value":"@src/notes.txt","start":8,"end":22}}`
		if file == nil || file.URL != "file://"+filepath.Join(sessions[0].Directory, "src/notes.txt") || file.Mime != "text/plain" || string(file.Source) != want {
			t.Fatalf("the stored file part is %+v (source %s), want file://…/src/notes.txt with source %s", file, fileSource(file), want)
		}
	})
	t.Run("a typed @path is sent too and a missing file stays text", func(t *testing.T) {
		sc := sc.on(t)
		// Words after the last mention: with the cursor in an @word, Enter takes the first completion
		// (once the candidates have arrived, which under load is a race with the key).
		sc.prompt("compare @other.txt with @src/missing.txt please")
		sc.waitText("📎 other.txt", "one of them is missing")
		if strings.Contains(sc.text(), "📎 src/missing.txt") {
			t.Fatalf("the missing file shows as attached:\n%s", sc.text())
		}
		r := lastRequest(t, 2)
		if !requestContains(r, "the colour is vermilion-4412") || !requestContains(r, "compare @other.txt with @src/missing.txt") {
			t.Fatalf("the model's request lacks the typed file's content or the text:\n%s", r.Body)
		}
		if requestContains(r, "attached file: src/missing.txt") || requestContains(r, "Contents of src/missing.txt") {
			t.Fatalf("the missing file was sent as a file:\n%s", r.Body)
		}
	})
	t.Run("a directory goes with its listing", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("what is in @src/ today")
		sc.waitText("📎 src/", "src holds notes")
		r := lastRequest(t, 3)
		if !requestContains(r, "Contents of src/ (attached with @src/):\nnotes.txt") {
			t.Fatalf("the model's request lacks the directory's listing:\n%s", r.Body)
		}
	})
}

func fileSource(p *session.Part) string {
	if p == nil {
		return "none"
	}
	return string(p.Source)
}
