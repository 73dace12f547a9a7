package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/process"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit only bounds how long a broken test hangs; no test asserts on time.
const waitLimit = 15 * time.Second

type fixture struct {
	m   *Manager
	bus *bus.Bus
	dir string
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	b := bus.New(bus.Options{})
	o.Bus = b
	m := NewManager(o)
	t.Cleanup(func() {
		m.Close()
		b.Close()
	})
	return &fixture{m: m, bus: b, dir: t.TempDir()}
}

func (f *fixture) create(t *testing.T, command string, args ...string) Info {
	t.Helper()
	info, err := f.m.Create(context.Background(), CreateInput{Command: command, Args: args, Directory: f.dir})
	if err != nil {
		t.Fatalf("Create(%s %q): %v", command, args, err)
	}
	return info
}

func (f *fixture) attach(t *testing.T, ptyID string, cursor int64) (*Viewer, Replay) {
	t.Helper()
	v, r, err := f.m.Attach(ptyID, cursor)
	if err != nil {
		t.Fatalf("Attach(%s, %d): %v", ptyID, cursor, err)
	}
	t.Cleanup(v.Close)
	return v, r
}

func (f *fixture) write(t *testing.T, ptyID, input string) {
	t.Helper()
	if err := f.m.Write(context.Background(), ptyID, []byte(input)); err != nil {
		t.Fatalf("Write(%q): %v", input, err)
	}
}

// readUntil reads the viewer's output until it contains want and returns everything read.
func readUntil(t *testing.T, v *Viewer, want string) string {
	t.Helper()
	return readUntilAfter(t, v, Replay{}, want)
}

// readUntilAfter is readUntil for output that may already be in the viewer's replay.
func readUntilAfter(t *testing.T, v *Viewer, r Replay, want string) string {
	t.Helper()
	var got bytes.Buffer
	got.Write(r.Data)
	timeout := time.After(waitLimit)
	for !strings.Contains(got.String(), want) {
		select {
		case chunk, ok := <-v.Output():
			if !ok {
				t.Fatalf("viewer ended (%v) before %q arrived; got %q", v.Err(), want, got.String())
			}
			got.Write(chunk)
		case <-timeout:
			t.Fatalf("%q did not arrive; got %q", want, got.String())
		}
	}
	return got.String()
}

// drain reads the viewer until it ends and returns what it read.
func drain(t *testing.T, v *Viewer) string {
	t.Helper()
	var got bytes.Buffer
	timeout := time.After(waitLimit)
	for {
		select {
		case chunk, ok := <-v.Output():
			if !ok {
				return got.String()
			}
			got.Write(chunk)
		case <-timeout:
			t.Fatalf("viewer did not end; got %q", got.String())
		}
	}
}

func waitExited(t *testing.T, m *Manager, ptyID string) Info {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		info, err := m.Get(ptyID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if info.Status == Exited {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("PTY %s still %s", ptyID, info.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// processAlive reports whether pid is a live process (a zombie awaiting a reaper counts as dead).
func processAlive(pid int) bool { return process.Alive(pid) }

type event struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	directory  string
}

func subscribe(t *testing.T, b *bus.Bus) *bus.Subscription {
	t.Helper()
	sub, _, err := b.Subscribe("", func(ev *bus.Event) bool { return strings.HasPrefix(ev.Type, "pty.") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

func nextEvent(t *testing.T, sub *bus.Subscription) event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	ev, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("no event arrived: %v", err)
	}
	var e event
	if err := json.Unmarshal(ev.Payload, &e); err != nil {
		t.Fatal(err)
	}
	e.directory = ev.Directory
	return e
}

func TestTyping(t *testing.T) {
	f := newFixture(t, Options{})
	info := f.create(t, "/bin/sh")
	v, _ := f.attach(t, info.ID, 0)
	// The expansion makes the answer differ from the echoed command line.
	f.write(t, info.ID, "echo h$((0))i-$((40+2))\n")
	readUntil(t, v, "h0i-42")
}

func TestResizeChangesTheRealWindowSize(t *testing.T) {
	f := newFixture(t, Options{})
	info := f.create(t, "/bin/sh")
	v, _ := f.attach(t, info.ID, 0)
	f.write(t, info.ID, "stty size; echo =$((1))=\n")
	if out := readUntil(t, v, "=1="); !strings.Contains(out, "24 80") {
		t.Fatalf("initial size is not 24x80: %q", out)
	}

	title := "renamed"
	got, err := f.m.Update(info.ID, UpdateInput{Title: &title, Size: &Size{Rows: 40, Cols: 120}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "renamed" {
		t.Errorf("title = %q", got.Title)
	}
	f.write(t, info.ID, "stty size\n")
	readUntil(t, v, "40 120")
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"a clean exit reports 0", "exit 0", 0},
		{"an exit status is reported as is", "exit 3", 3},
		{"death by a signal reports 128 plus the signal", "kill -TERM $$", 128 + 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			sub := subscribe(t, f.bus)
			info := f.create(t, "/bin/sh", "-c", tt.script)
			if e := nextEvent(t, sub); e.Type != "pty.created" {
				t.Fatalf("first event %s", e.Type)
			}
			e := nextEvent(t, sub)
			var props struct {
				ID       string `json:"id"`
				ExitCode int    `json:"exitCode"`
			}
			_ = json.Unmarshal(e.Properties, &props)
			if e.Type != "pty.exited" || props.ID != info.ID || props.ExitCode != tt.want {
				t.Errorf("event %s %s", e.Type, e.Properties)
			}
			got := waitExited(t, f.m, info.ID)
			if got.ExitCode == nil || *got.ExitCode != tt.want {
				t.Errorf("exitCode = %v, want %d", got.ExitCode, tt.want)
			}
		})
	}
}

func TestRemoveKillsEveryProcessOfTheTerminal(t *testing.T) {
	f := newFixture(t, Options{})
	sub := subscribe(t, f.bus)
	// One child in the shell's own process group, one in a job-control group of its own.
	info := f.create(t, "/bin/sh", "-c", `sleep 300 & echo "same=$!"; set -m; sleep 300 & echo "own=$!"; wait`)
	v, r := f.attach(t, info.ID, 0)
	out := readUntilAfter(t, v, r, "own=")
	for !regexp.MustCompile(`own=\d+\r?\n`).MatchString(out) {
		out += readUntil(t, v, "\n")
	}
	var pids []int
	for _, m := range regexp.MustCompile(`(?:same|own)=(\d+)`).FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("children not reported: %q", out)
	}
	pids = append(pids, info.Pid)
	for _, pid := range pids {
		if !processAlive(pid) {
			t.Fatalf("process %d not running before Remove", pid)
		}
	}

	if err := f.m.Remove(info.ID); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("process %d survived Remove", pid)
		}
	}
	drain(t, v)
	if !errors.Is(v.Err(), ErrExited) {
		t.Errorf("viewer ended with %v", v.Err())
	}
	var types []string
	for range 3 {
		e := nextEvent(t, sub)
		types = append(types, e.Type)
		if e.directory != f.dir {
			t.Errorf("%s has directory %q, want %q", e.Type, e.directory, f.dir)
		}
		if e.Type == "pty.exited" && !strings.Contains(string(e.Properties), `"exitCode":137`) {
			t.Errorf("exited %s, want SIGKILL's 137", e.Properties)
		}
	}
	if strings.Join(types, ",") != "pty.created,pty.exited,pty.deleted" {
		t.Errorf("events %v", types)
	}
	if _, err := f.m.Get(info.ID); !errs.Is(err, errs.NotFound) {
		t.Errorf("Get after Remove: %v", err)
	}
}

func TestRemoveAfterExitOnlyDeletes(t *testing.T) {
	f := newFixture(t, Options{})
	sub := subscribe(t, f.bus)
	info := f.create(t, "/bin/sh", "-c", "exit 5")
	waitExited(t, f.m, info.ID)
	if err := f.m.Remove(info.ID); err != nil {
		t.Fatal(err)
	}
	var types []string
	for range 3 {
		types = append(types, nextEvent(t, sub).Type)
	}
	if strings.Join(types, ",") != "pty.created,pty.exited,pty.deleted" {
		t.Errorf("events %v", types)
	}
	if err := f.m.Remove(info.ID); !errs.Is(err, errs.NotFound) {
		t.Errorf("second Remove: %v", err)
	}
}

func TestScrollbackWrapsAndCursorsStayAbsolute(t *testing.T) {
	f := newFixture(t, Options{Scrollback: 64})
	// 300 bytes, no newline (so no CR is added), then the process exits.
	payload := strings.Repeat("0123456789", 30)
	info := f.create(t, "/bin/sh", "-c", "printf %s "+payload)
	waitExited(t, f.m, info.ID)

	tests := []struct {
		name          string
		cursor        int64
		want          string
		wantTruncated bool
	}{
		{"a cursor older than the scrollback gets the ring and is told so", 0, payload[300-64:], true},
		{"a cursor inside the scrollback gets exactly what follows it", 290, payload[290:], false},
		{"a cursor at the end gets nothing", 300, "", false},
		{"a cursor beyond the end gets nothing", 1000, "", false},
		{"cursor -1 skips the replay", FromEnd, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, r := f.attach(t, info.ID, tt.cursor)
			if string(r.Data) != tt.want || r.Truncated != tt.wantTruncated || r.Cursor != 300 {
				t.Errorf("replay %q truncated=%v cursor=%d; want %q truncated=%v cursor=300", r.Data, r.Truncated, r.Cursor, tt.want, tt.wantTruncated)
			}
			if r.From+int64(len(r.Data)) != r.Cursor {
				t.Errorf("from %d + %d bytes != cursor %d", r.From, len(r.Data), r.Cursor)
			}
			if _, ok := testenv.Recv(t, v.Output(), "the viewer ending"); ok || !errors.Is(v.Err(), ErrExited) {
				t.Errorf("a viewer of an exited PTY must be ended with ErrExited, got %v", v.Err())
			}
		})
	}
	if _, _, err := f.m.Attach(info.ID, -2); !errs.Is(err, errs.Invalid) {
		t.Errorf("cursor -2: %v", err)
	}
}

func TestReplayNeverStartsInsideACharacter(t *testing.T) {
	f := newFixture(t, Options{Scrollback: 10})
	// "€" is 3 bytes; 4 of them are 12 bytes, so a 10-byte ring starts inside the first one.
	info := f.create(t, "/bin/sh", "-c", `printf '\342\202\254\342\202\254\342\202\254\342\202\254'`)
	waitExited(t, f.m, info.ID)
	_, r := f.attach(t, info.ID, 0)
	if string(r.Data) != "€€€" || r.From != 3 || r.Cursor != 12 {
		t.Errorf("replay %q from %d cursor %d", r.Data, r.From, r.Cursor)
	}
}

func TestReconnectWithACursorGetsOnlyWhatWasMissed(t *testing.T) {
	f := newFixture(t, Options{})
	info := f.create(t, "/bin/sh")
	v, r := f.attach(t, info.ID, 0)
	f.write(t, info.ID, "echo one-$((1))\n")
	first := readUntilAfter(t, v, r, "one-1")
	cursor := r.Cursor + int64(len(first)-len(r.Data))
	v.Close()

	f.write(t, info.ID, "echo two-$((2))\n")
	v2, r2 := f.attach(t, info.ID, cursor)
	second := readUntilAfter(t, v2, r2, "two-2")
	if strings.Contains(second, "one-1") {
		t.Errorf("resumed output repeats what was seen: %q", second)
	}
	// Everything seen, in order, is exactly the scrollback.
	v3, all := f.attach(t, info.ID, 0)
	v3.Close()
	if seen := first + second; !strings.HasPrefix(string(all.Data), seen) {
		t.Errorf("first+second = %q is not a prefix of the scrollback %q", seen, all.Data)
	}
}

func TestViewers(t *testing.T) {
	t.Run("two viewers see the same output", func(t *testing.T) {
		f := newFixture(t, Options{})
		info := f.create(t, "/bin/sh")
		a, ra := f.attach(t, info.ID, 0)
		b, rb := f.attach(t, info.ID, 0)
		f.write(t, info.ID, "echo both-$((7*6))\n")
		outA := readUntilAfter(t, a, ra, "both-42")
		outB := readUntilAfter(t, b, rb, "both-42")
		if !strings.HasPrefix(outA, outB) && !strings.HasPrefix(outB, outA) {
			t.Errorf("viewers disagree:\n%q\n%q", outA, outB)
		}
	})
	t.Run("a viewer that falls behind is dropped and the others carry on", func(t *testing.T) {
		// Every round makes at least one chunk, so the viewer that never reads overflows its queue of
		// 16; the one that reads has at most a few chunks waiting at any time.
		f := newFixture(t, Options{ViewerQueue: 16})
		info := f.create(t, "/bin/sh")
		slow, _ := f.attach(t, info.ID, FromEnd)
		fast, _ := f.attach(t, info.ID, FromEnd)
		for i := range 40 {
			marker := "round-" + strconv.Itoa(i)
			f.write(t, info.ID, "echo round-$(("+strconv.Itoa(i)+"))\n")
			readUntil(t, fast, marker)
		}
		drain(t, slow)
		if !errors.Is(slow.Err(), ErrSlow) {
			t.Errorf("slow viewer ended with %v, want ErrSlow", slow.Err())
		}
		f.write(t, info.ID, "echo still-$((1))\n")
		readUntil(t, fast, "still-1")
	})
}

func TestLargePasteArrivesIntact(t *testing.T) {
	f := newFixture(t, Options{})
	out := filepath.Join(t.TempDir(), "paste")
	var paste strings.Builder
	for i := 0; paste.Len() < 1<<20; i++ {
		paste.WriteString("line " + strconv.Itoa(i) + " ünïcødé ✓ the quick brown fox\n")
	}
	data := paste.String()[:1<<20]
	info := f.create(t, "/bin/sh", "-c", `stty raw -echo -iexten; echo ready; head -c `+strconv.Itoa(len(data))+` > "$0"; echo done`, out)
	v, r := f.attach(t, info.ID, 0)
	readUntilAfter(t, v, r, "ready")
	f.write(t, info.ID, data)
	readUntil(t, v, "done")
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(data)) {
		t.Errorf("received %d bytes, want %d identical bytes", len(got), len(data))
	}
}

func TestWriteHonoursContext(t *testing.T) {
	f := newFixture(t, Options{})
	// Nothing reads the terminal until SIGUSR1, so a big write fills its input queue and must wait.
	info := f.create(t, "/bin/sh", "-c", `trap 'cat >/dev/null' USR1; stty raw -echo; echo ready; while :; do sleep 0.05; done`)
	v, r := f.attach(t, info.ID, 0)
	readUntilAfter(t, v, r, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := f.m.Write(ctx, info.ID, bytes.Repeat([]byte("x"), 4<<20))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write = %v, want the context's error", err)
	}
	// The terminal is still usable afterwards, once something reads it.
	if err := syscall.Kill(info.Pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Write(context.Background(), info.ID, []byte("y")); err != nil {
		t.Errorf("Write after a cancelled one: %v", err)
	}
}

func TestEnvironment(t *testing.T) {
	f := newFixture(t, Options{})
	info, err := f.m.Create(context.Background(), CreateInput{
		Command: "/bin/sh", Args: []string{"-c", `echo "[$TERM] [$GREETING] [$PWD]"`},
		Env: map[string]string{"GREETING": "hello there"}, Directory: f.dir, Cwd: ".",
	})
	if err != nil {
		t.Fatal(err)
	}
	waitExited(t, f.m, info.ID)
	_, r := f.attach(t, info.ID, 0)
	want := "[xterm-256color] [hello there] [" + f.dir + "]"
	if !strings.Contains(string(r.Data), want) {
		t.Errorf("output %q lacks %q", r.Data, want)
	}
	if info.Cwd != f.dir || info.Command != "/bin/sh" || len(info.Args) != 2 || info.Status != Running || info.Pid <= 0 {
		t.Errorf("info %+v", info)
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	f := newFixture(t, Options{})
	file := filepath.Join(f.dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   CreateInput
		want string
	}{
		{"a command that does not exist", CreateInput{Command: "/no/such/shell", Directory: f.dir}, "command not found"},
		{"a blank command", CreateInput{Command: "  ", Directory: f.dir}, "blank"},
		{"a cwd that does not exist", CreateInput{Command: "/bin/sh", Cwd: filepath.Join(f.dir, "missing"), Directory: f.dir}, "does not exist"},
		{"a cwd that is a file", CreateInput{Command: "/bin/sh", Cwd: file, Directory: f.dir}, "not a directory"},
		{"a relative cwd without a project", CreateInput{Command: "/bin/sh", Cwd: "sub"}, "absolute"},
		{"an environment name with '='", CreateInput{Command: "/bin/sh", Directory: f.dir, Env: map[string]string{"A=B": "c"}}, "invalid environment"},
		{"a zero window size", CreateInput{Command: "/bin/sh", Directory: f.dir, Size: &Size{Rows: 0, Cols: 80}}, "rows and cols"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.m.Create(context.Background(), tt.in)
			if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want Invalid mentioning %q", err, tt.want)
			}
		})
	}
	if n := len(f.m.List()); n != 0 {
		t.Errorf("%d PTYs left after failed creates", n)
	}
}

func TestUnknownPTY(t *testing.T) {
	f := newFixture(t, Options{})
	const missing = "pty_doesnotexist"
	title := "x"
	checks := map[string]error{
		"Get":         func() error { _, err := f.m.Get(missing); return err }(),
		"Update":      func() error { _, err := f.m.Update(missing, UpdateInput{Title: &title}); return err }(),
		"Remove":      f.m.Remove(missing),
		"Write":       f.m.Write(context.Background(), missing, []byte("x")),
		"Attach":      func() error { _, _, err := f.m.Attach(missing, 0); return err }(),
		"IssueTicket": func() error { _, err := f.m.IssueTicket(missing); return err }(),
	}
	for name, err := range checks {
		t.Run(name+" reports NotFound", func(t *testing.T) {
			var e *errs.Error
			if !errors.As(err, &e) || e.Kind != errs.NotFound || e.Name != "PtyNotFoundError" || e.Data["ptyID"] != missing {
				t.Errorf("err = %#v", err)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	f := newFixture(t, Options{})
	sub := subscribe(t, f.bus)
	info := f.create(t, "/bin/sh")
	nextEvent(t, sub)
	if _, err := f.m.Update(info.ID, UpdateInput{Size: &Size{Rows: 10, Cols: 70000}}); !errs.Is(err, errs.Invalid) {
		t.Errorf("oversized cols: %v", err)
	}
	title := "build"
	if _, err := f.m.Update(info.ID, UpdateInput{Title: &title}); err != nil {
		t.Fatal(err)
	}
	e := nextEvent(t, sub)
	if e.Type != "pty.updated" || !strings.Contains(string(e.Properties), `"title":"build"`) {
		t.Errorf("event %s %s", e.Type, e.Properties)
	}
	if got, _ := f.m.Get(info.ID); got.Title != "build" {
		t.Errorf("title %q", got.Title)
	}
}

func TestListIsInCreationOrder(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.create(t, "/bin/sh")
	b := f.create(t, "/bin/sh")
	list := f.m.List()
	if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Errorf("list %+v", list)
	}
}

func TestTickets(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	f := newFixture(t, Options{Now: clock})
	a := f.create(t, "/bin/sh")
	b := f.create(t, "/bin/sh")

	t.Run("a ticket works once", func(t *testing.T) {
		tk, err := f.m.IssueTicket(a.ID)
		if err != nil || tk.ExpiresIn != 60 || len(tk.Value) < 32 {
			t.Fatalf("ticket %+v, %v", tk, err)
		}
		if !f.m.RedeemTicket(a.ID, tk.Value) {
			t.Error("a fresh ticket was refused")
		}
		if f.m.RedeemTicket(a.ID, tk.Value) {
			t.Error("a ticket was accepted twice")
		}
	})
	t.Run("a ticket expires after 60 seconds", func(t *testing.T) {
		tk, _ := f.m.IssueTicket(a.ID)
		advance(60 * time.Second)
		if f.m.RedeemTicket(a.ID, tk.Value) {
			t.Error("an expired ticket was accepted")
		}
	})
	t.Run("a ticket is valid just before it expires", func(t *testing.T) {
		tk, _ := f.m.IssueTicket(a.ID)
		advance(59 * time.Second)
		if !f.m.RedeemTicket(a.ID, tk.Value) {
			t.Error("a live ticket was refused")
		}
	})
	t.Run("a ticket for another PTY is refused and spent", func(t *testing.T) {
		tk, _ := f.m.IssueTicket(a.ID)
		if f.m.RedeemTicket(b.ID, tk.Value) {
			t.Error("a ticket opened another PTY")
		}
		if f.m.RedeemTicket(a.ID, tk.Value) {
			t.Error("a ticket shown for the wrong PTY stayed usable")
		}
	})
	t.Run("an empty or made-up ticket is refused", func(t *testing.T) {
		if f.m.RedeemTicket(a.ID, "") || f.m.RedeemTicket(a.ID, "guess") {
			t.Error("a made-up ticket was accepted")
		}
	})
}

func TestShells(t *testing.T) {
	f := newFixture(t, Options{ShellsFile: "testdata/shells"})
	got := f.m.Shells()
	want := []Shell{
		{Path: "/bin/sh", Name: "sh", Acceptable: true},
		{Path: "/bin/bash", Name: "bash", Acceptable: true},
		{Path: "/bin/false", Name: "false", Acceptable: false},
	}
	if len(got) != len(want) {
		t.Fatalf("shells %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("shell %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	missing := NewManager(Options{ShellsFile: filepath.Join(t.TempDir(), "none")})
	if s := missing.Shells(); s == nil || len(s) != 0 {
		t.Errorf("no shells file gives %#v, want an empty list", s)
	}
}

func TestNoCommandStartsTheDefaultShell(t *testing.T) {
	f := newFixture(t, Options{ShellsFile: "testdata/shells"})
	t.Setenv("SHELL", "/bin/bash")
	info, err := f.m.Create(context.Background(), CreateInput{Directory: f.dir})
	if err != nil {
		t.Fatal(err)
	}
	if info.Command != "/bin/bash" {
		t.Errorf("command %q, want $SHELL", info.Command)
	}
}

func TestCloseKillsEverythingAndEndsViewers(t *testing.T) {
	b := bus.New(bus.Options{})
	defer b.Close()
	m := NewManager(Options{Bus: b})
	dir := t.TempDir()
	var viewers []*Viewer
	var pids []int
	for range 2 {
		info, err := m.Create(context.Background(), CreateInput{Command: "/bin/sh", Args: []string{"-c", "sleep 300 & wait"}, Directory: dir})
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := m.Attach(info.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		viewers = append(viewers, v)
		pids = append(pids, info.Pid)
	}
	m.Close()
	for i, v := range viewers {
		if _, ok := testenv.Recv(t, v.Output(), "the viewer ending"); ok || !errors.Is(v.Err(), ErrShutdown) {
			t.Errorf("viewer %d ended with %v, want ErrShutdown", i, v.Err())
		}
		if processAlive(pids[i]) {
			t.Errorf("process %d survived Close", pids[i])
		}
		if members, _ := process.SessionMembers(pids[i]); len(members) != 0 {
			t.Errorf("session %d still has %v", pids[i], members)
		}
	}
	if _, err := m.Create(context.Background(), CreateInput{Command: "/bin/sh", Directory: dir}); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Create after Close: %v", err)
	}
}

func TestTheTerminalTakesTheLargestViewerSize(t *testing.T) {
	f := newFixture(t, Options{})
	info := f.create(t, "/bin/sh")
	desktop, _ := f.attach(t, info.ID, 0)
	phone, _ := f.attach(t, info.ID, 0)
	sizeSeen := func(t *testing.T, v *Viewer, want Size) {
		t.Helper()
		select {
		case got := <-v.Sizes():
			if got != want {
				t.Fatalf("viewer told %+v, want %+v", got, want)
			}
		case <-time.After(waitLimit):
			t.Fatalf("viewer never told the size %+v", want)
		}
	}

	t.Run("a smaller viewer does not shrink the terminal under a larger one", func(t *testing.T) {
		if err := desktop.Resize(Size{Rows: 40, Cols: 160}); err != nil {
			t.Fatal(err)
		}
		sizeSeen(t, desktop, Size{Rows: 40, Cols: 160})
		if err := phone.Resize(Size{Rows: 50, Cols: 45}); err != nil {
			t.Fatal(err)
		}
		sizeSeen(t, phone, Size{Rows: 50, Cols: 160})
		f.write(t, info.ID, "stty size\n")
		readUntil(t, desktop, "50 160")
	})
	t.Run("when the larger viewer leaves, the terminal fits the ones that remain", func(t *testing.T) {
		desktop.Close()
		sizeSeen(t, phone, Size{Rows: 50, Cols: 45})
		f.write(t, info.ID, "stty size\n")
		readUntil(t, phone, "50 45")
	})
	t.Run("a size out of range is refused", func(t *testing.T) {
		if err := phone.Resize(Size{Rows: 0, Cols: 10}); !errs.Is(err, errs.Invalid) {
			t.Fatalf("Resize = %v, want Invalid", err)
		}
	})
}
