package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestBashRunsCommands(t *testing.T) {
	tests := []struct {
		name       string
		input      map[string]any
		wantOutput string // the model's output, exactly
		wantExit   any
	}{
		{"a command's stdout is returned", map[string]any{"command": "echo hello", "description": "Say hello"}, "hello\n", 0},
		{"stderr is merged into the output", map[string]any{"command": "echo out; echo err >&2"}, "out\nerr\n", 0},
		{"a non-zero exit is reported, not an error", map[string]any{"command": "echo oops; exit 3"}, "oops\n\n\n(Command exited with code 3)", 3},
		{"a silent command says so", map[string]any{"command": "true"}, "(no output)", 0},
		{"a command killed by a signal says which", map[string]any{"command": "kill -9 $$"}, "(Command was terminated by signal 9 (killed))", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, projectDir(t), tt.input)
			res := mustRun(t, NewBash(Options{}), call)
			if res.Output != tt.wantOutput {
				t.Fatalf("output = %q, want %q", res.Output, tt.wantOutput)
			}
			if res.Metadata["exit"] != tt.wantExit {
				t.Fatalf("exit = %#v, want %#v", res.Metadata["exit"], tt.wantExit)
			}
			if res.Metadata["truncated"] != false {
				t.Fatalf("truncated = %v", res.Metadata["truncated"])
			}
			if res.Title != tt.input["command"] {
				t.Fatalf("title = %q", res.Title)
			}
		})
	}
}

func TestBashAsksTheGateWithTheCommand(t *testing.T) {
	call, gate := newCall(t, projectDir(t), map[string]any{"command": "echo perm-test", "description": "Echo a test string"})
	res := mustRun(t, NewBash(Options{}), call)
	ask := gate.askFor(t, "bash")
	if !slices.Equal(ask.Patterns, []string{"echo perm-test"}) || !slices.Equal(ask.Always, []string{"echo *"}) || ask.Metadata["command"] != "echo perm-test" {
		t.Fatalf("ask = %+v", ask)
	}
	if res.Metadata["output"] != "perm-test\n" || res.Metadata["description"] != "Echo a test string" {
		t.Fatalf("metadata = %+v", res.Metadata)
	}
}

func TestBashRefusedRunsNothing(t *testing.T) {
	dir := projectDir(t)
	call, gate := newCall(t, dir, map[string]any{"command": "touch marker"})
	gate.refuse["bash"] = errRefused
	_, err := NewBash(Options{}).Run(context.Background(), call)
	if err != errRefused {
		t.Fatalf("err = %v, want the refusal unchanged", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused command ran (stat: %v)", err)
	}
}

func TestBashWorkingDirectory(t *testing.T) {
	dir := projectDir(t)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		workdir string
		want    string
	}{
		{"without workdir the command runs in the session directory", "", dir},
		{"a relative workdir resolves inside the session directory", "sub", filepath.Join(dir, "sub")},
		{"an absolute workdir inside is used as is", filepath.Join(dir, "sub"), filepath.Join(dir, "sub")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, dir, map[string]any{"command": "pwd -P", "workdir": tt.workdir})
			res := mustRun(t, NewBash(Options{}), call)
			if res.Output != tt.want+"\n" {
				t.Fatalf("pwd = %q, want %q", res.Output, tt.want)
			}
		})
	}
	t.Run("a workdir that does not exist is a clear error", func(t *testing.T) {
		call, _ := newCall(t, dir, map[string]any{"command": "pwd", "workdir": "missing"})
		_, err := NewBash(Options{}).Run(context.Background(), call)
		if err == nil || !strings.Contains(err.Error(), "not an existing directory") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestBashRejectsBadInput(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"an empty command", `{"command": "  "}`, "non-empty command"},
		{"a negative timeout", `{"command": "true", "timeout": -5}`, "must be positive"},
		{"a timeout that is not a number", `{"command": "true", "timeout": "soon"}`, "invalid arguments"},
		{"input that is not an object", `[1,2]`, "invalid arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, gate := newCall(t, projectDir(t), tt.input)
			_, err := NewBash(Options{}).Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			if len(gate.asked()) != 0 {
				t.Fatalf("bad input reached the gate: %+v", gate.asked())
			}
		})
	}
}

func TestBashStreamsOutputWhileRunning(t *testing.T) {
	dir := projectDir(t)
	// The command cannot finish until the test has seen "first" in a progress update and created
	// the release file, so that update necessarily arrived while the command was running.
	call, _ := newCall(t, dir, map[string]any{
		"command": "echo first; while [ ! -f release ]; do sleep 0.02; done; echo second",
		"timeout": 60000,
	})
	var mu sync.Mutex
	var updates []string
	released := false
	call.Progress = func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if start, ok := p.Metadata["output"].(string); ok {
			updates = append(updates, start)
		} else {
			updates[len(updates)-1] += p.Output
		}
		if !released && strings.Contains(updates[len(updates)-1], "first") {
			released = true
			writeFile(t, filepath.Join(dir, "release"), "")
		}
	}
	res := mustRun(t, NewBash(Options{}), call)
	mu.Lock()
	defer mu.Unlock()
	if !released {
		t.Fatal("no progress update carried the first line")
	}
	if len(updates) != 1 {
		t.Fatalf("the live output started %d times, want once", len(updates))
	}
	if updates[0] != "first\nsecond\n" {
		t.Fatalf("the streamed output = %q, want the whole output", updates[0])
	}
	if res.Output != "first\nsecond\n" {
		t.Fatalf("output = %q", res.Output)
	}
}

func TestBashAbortKillsTheProcessGroup(t *testing.T) {
	call, _ := newCall(t, projectDir(t), map[string]any{"command": "echo pgid=$$; sleep 30 & sleep 30"})
	pgidSeen := make(chan int, 1)
	var streamed string
	call.Progress = func(p Progress) {
		streamed += p.Output
		if m := regexp.MustCompile(`pgid=(\d+)`).FindStringSubmatch(streamed); m != nil {
			n, _ := strconv.Atoi(m[1])
			select {
			case pgidSeen <- n:
			default:
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	finished := make(chan outcome, 1)
	go func() {
		res, err := NewBash(Options{}).Run(ctx, call)
		finished <- outcome{res, err}
	}()

	pgid, _ := testenv.Recv(t, pgidSeen, "the command's process group")
	sleepers := waitForGroup(t, pgid, "sleep", 2)
	cancel()
	got, _ := testenv.Recv(t, finished, "the command's result")
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", got.err)
	}
	if !strings.Contains(got.res.Output, "(Command was aborted)") {
		t.Fatalf("output = %q", got.res.Output)
	}
	for _, pid := range append(sleepers, pgid) {
		if alive(pid) {
			_, st, _, _ := procStat(pid)
			t.Errorf("pid %d survived the abort (state %s)", pid, st)
		}
	}
}

func TestBashDoesNotStartWhenAlreadyCancelled(t *testing.T) {
	dir := projectDir(t)
	call, _ := newCall(t, dir, map[string]any{"command": "touch marker"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewBash(Options{}).Run(ctx, call); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a cancelled call ran its command")
	}
}

func TestBashBackgroundProcessesDoNotOutliveTheCommand(t *testing.T) {
	call, _ := newCall(t, projectDir(t), map[string]any{"command": "sleep 30 & echo $!"})
	res := mustRun(t, NewBash(Options{}), call)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil {
		t.Fatalf("output = %q", res.Output)
	}
	if alive(pid) {
		t.Fatalf("background sleep %d is still running", pid)
	}
}

func TestBashTimeout(t *testing.T) {
	tests := []struct {
		name    string
		command string
	}{
		{"a command past its timeout is killed", "echo started; sleep 30"},
		{"a command ignoring SIGTERM is killed anyway", "trap '' TERM; echo started; sleep 30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, projectDir(t), map[string]any{"command": tt.command, "timeout": 300})
			res := mustRun(t, NewBash(Options{}), call)
			want := "started\n\n\n(Command timed out after 300 ms; its process group was killed)"
			if res.Output != want {
				t.Fatalf("output = %q, want %q", res.Output, want)
			}
			if res.Metadata["exit"] != nil {
				t.Fatalf("exit = %v, want nil for a killed command", res.Metadata["exit"])
			}
		})
	}
	t.Run("a timeout above the maximum is capped", func(t *testing.T) {
		call, _ := newCall(t, projectDir(t), map[string]any{"command": "sleep 30", "timeout": 3_600_000})
		res := mustRun(t, NewBash(Options{BashMaxTimeout: 200 * time.Millisecond}), call)
		if !strings.Contains(res.Output, "timed out after 200 ms") {
			t.Fatalf("output = %q", res.Output)
		}
	})
}

func TestBashOutputIsCapped(t *testing.T) {
	call, _ := newCall(t, projectDir(t), map[string]any{"command": "seq 1 5000"})
	var streamed strings.Builder
	skipped := 0
	call.Progress = func(p Progress) {
		streamed.WriteString(p.Output)
		skipped += p.Skipped
	}
	res := mustRun(t, NewBash(Options{OutputLimit: 1000}), call)
	out, _ := res.Metadata["output"].(string)
	if res.Metadata["truncated"] != true {
		t.Fatalf("truncated = %v", res.Metadata["truncated"])
	}
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "4999\n5000\n") {
		t.Fatalf("output does not keep head and tail: %q ... %q", out[:20], out[len(out)-20:])
	}
	full := 0
	for i := 1; i <= 5000; i++ {
		full += len(strconv.Itoa(i)) + 1
	}
	marker := fmt.Sprintf("... (%d bytes of output truncated) ...", full-1000)
	if !strings.Contains(out, marker) {
		t.Fatalf("output lacks %q", marker)
	}
	if len(out) > 1000+len(marker)+10 {
		t.Fatalf("kept %d bytes, limit 1000", len(out))
	}
	if res.Output != out {
		t.Fatal("the model's output differs from the metadata output")
	}
	var all strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&all, "%d\n", i)
	}
	if streamed.String() != all.String() || skipped != 0 {
		t.Fatalf("the live output streamed %d bytes (%d skipped), want all %d the command printed", streamed.Len(), skipped, all.Len())
	}
}

func TestBashKeepsAtMost2000LinesByDefaultAsOpenCodeDoes(t *testing.T) {
	call, _ := newCall(t, projectDir(t), map[string]any{"command": "seq 1 100000"})
	res := mustRun(t, NewBash(Options{}), call)
	out, _ := res.Metadata["output"].(string)
	head, tail, ok := strings.Cut(out, "\n\n... (")
	if !ok || res.Metadata["truncated"] != true {
		t.Fatalf("truncated = %v, output has no marker", res.Metadata["truncated"])
	}
	_, tail, _ = strings.Cut(tail, " ...\n\n")
	if lines := strings.Split(strings.TrimSuffix(head, "\n"), "\n"); len(lines) != 1000 || lines[999] != "1000" {
		t.Errorf("the head keeps %d lines ending %q, want lines 1 to 1000", len(lines), lines[len(lines)-1])
	}
	if lines := strings.Split(strings.TrimSuffix(tail, "\n"), "\n"); len(lines) != 1000 || lines[0] != "99001" {
		t.Errorf("the tail keeps %d lines starting %q, want lines 99001 to 100000", len(lines), lines[0])
	}
}

func TestBashKeeps50KiBOfOutputByDefault(t *testing.T) {
	call, _ := newCall(t, projectDir(t), map[string]any{"command": "seq 1 20000"})
	res := mustRun(t, NewBash(Options{OutputLines: 1 << 20}), call)
	out, _ := res.Metadata["output"].(string)
	full := 0
	for i := 1; i <= 20000; i++ {
		full += len(strconv.Itoa(i)) + 1
	}
	const limit = 50 * 1024
	marker := fmt.Sprintf("... (%d bytes of output truncated) ...", full-limit)
	if res.Metadata["truncated"] != true || !strings.Contains(out, marker) {
		t.Fatalf("truncated = %v; output lacks %q", res.Metadata["truncated"], marker)
	}
	// ASCII output: exactly the limit is kept, half before the marker and half after it.
	if kept := len(out) - len("\n\n"+marker+"\n\n"); kept != limit {
		t.Fatalf("kept %d bytes of output, want %d", kept, limit)
	}
}

func TestTheBashToolAsksForEverythingTheCommandDoes(t *testing.T) {
	type ask struct {
		permission string
		patterns   []string
		always     []string
		unjudged   bool
		with       []Need
	}
	outside := projectDir(t)
	tests := []struct {
		name    string
		command string
		want    []ask
	}{
		{"a pipeline asks once for both commands", "ls -la | head -1",
			[]ask{{"bash", []string{"ls -la", "head -1"}, []string{"ls *", "head *"}, false, nil}}},
		{"a redirection's write is part of the one bash request", "echo hi > out.txt",
			[]ask{{"bash", []string{"echo hi"}, []string{"echo *"}, false, []Need{{Permission: "edit", Pattern: "out.txt"}}}}},
		{"a write outside also needs its directory", "echo hi >> " + outside + "/f",
			[]ask{{"bash", []string{"echo hi"}, []string{"echo *"}, false, []Need{{Permission: "external_directory", Pattern: outside + "/*"}, {Permission: "edit", Pattern: "{outside}/f"}}}}},
		{"a redirection into the project config is never remembered", "echo '{}' > tandem.json",
			[]ask{{"bash", []string{"echo {}"}, nil, true, []Need{{Permission: "edit", Pattern: "tandem.json", Unjudged: "it writes tandem.json, configuration tandem reads"}}}}},
		{"a redirection into a git hook is never remembered", "echo 'touch X' >> .git/hooks/pre-commit",
			[]ask{{"bash", []string{"echo touch X"}, nil, true, []Need{{Permission: "edit", Pattern: ".git/hooks/pre-commit", Unjudged: "it writes {dir}/.git/hooks/pre-commit, a git hook that git commands run"}}}}},
		{"eval asks with no lasting grant offered", "eval ls",
			[]ask{{"bash", []string{"eval ls"}, nil, true, nil}}},
		{"a command named by a path is also asked by its name", "/usr/bin/git push",
			[]ask{{"bash", []string{"/usr/bin/git push", "git push"}, []string{"/usr/bin/git push"}, false, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := projectDir(t)
			call, gate := newCall(t, dir, map[string]any{"command": tt.command, "description": "test"})
			gate.refuse["bash"] = errRefused // judge only: nothing runs
			if _, err := NewBash(Options{}).Run(context.Background(), call); !errors.Is(err, errRefused) {
				t.Fatalf("Run = %v, want the gate's refusal", err)
			}
			var got []ask
			for _, a := range gate.asked() {
				got = append(got, ask{a.Permission, a.Patterns, a.Always, len(a.Unjudged) > 0, a.With})
			}
			for _, a := range tt.want {
				for i := range a.with {
					a.with[i].Unjudged = strings.ReplaceAll(a.with[i].Unjudged, "{dir}", dir)
					rel, err := filepath.Rel(dir, outside)
					if err != nil {
						t.Fatal(err)
					}
					a.with[i].Pattern = strings.ReplaceAll(a.with[i].Pattern, "{outside}", filepath.ToSlash(rel))
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("asks = %+v\nwant %+v", got, tt.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("judging a command touched the directory: %v", entries)
			}
		})
	}
}

// waitForGroup polls /proc until want processes named comm belong to process group pgid.
func waitForGroup(t *testing.T, pgid int, comm string, want int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			name, state, group, ok := procStat(pid)
			if ok && group == pgid && name == comm && state != "Z" {
				pids = append(pids, pid)
			}
		}
		if len(pids) >= want {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("found %v %s processes in group %d, want %d", pids, comm, pgid, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a running process; a zombie (dead, waiting for a reaper that may
// never come in a container) counts as gone.
func alive(pid int) bool {
	_, state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

func procStat(pid int) (comm, state string, pgid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", "", 0, false
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return "", "", 0, false
	}
	fields := strings.Fields(s[close+1:])
	if len(fields) < 3 {
		return "", "", 0, false
	}
	pgid, _ = strconv.Atoi(fields[2])
	return s[open+1 : close], fields[0], pgid, true
}
