package tool

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteCreatesAndReplacesFiles(t *testing.T) {
	dir := projectDir(t)
	path := filepath.Join(dir, "a", "b", "new.txt")

	call, gate := newCall(t, dir, map[string]any{"filePath": "a/b/new.txt", "content": "hello\nworld\n"})
	res := mustRun(t, Write{}, call)
	if got := readFile(t, path); got != "hello\nworld\n" {
		t.Fatalf("content = %q", got)
	}
	wantDiff := "Index: " + path + "\n" + strings.Repeat("=", 67) + "\n--- " + path + "\n+++ " + path + "\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
	ask := gate.askFor(t, "edit")
	if !slices.Equal(ask.Patterns, []string{"a/b/new.txt"}) || !slices.Equal(ask.Always, []string{"a/b/new.txt"}) {
		t.Fatalf("ask = %+v", ask)
	}
	if ask.Metadata["filepath"] != path || ask.Metadata["diff"] != wantDiff {
		t.Fatalf("the gate was not shown the diff: %+v", ask.Metadata)
	}
	if res.Metadata["diff"] != wantDiff || res.Metadata["exists"] != false {
		t.Fatalf("metadata = %+v", res.Metadata)
	}
	if d, ok := res.Metadata["diagnostics"].(map[string][]any); !ok || len(d) != 0 {
		t.Fatalf("diagnostics = %#v, want an empty map (OpenCode's TUI shows a write's content only with it)", res.Metadata["diagnostics"])
	}
	if want := []FileChange{{Path: path, Before: "", After: "hello\nworld\n", Existed: false}}; !slices.Equal(res.Changes, want) {
		t.Fatalf("changes = %+v", res.Changes)
	}

	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	call, _ = newCall(t, dir, map[string]any{"filePath": path, "content": "bye\n"})
	res = mustRun(t, Write{}, call)
	if got := readFile(t, path); got != "bye\n" {
		t.Fatalf("content = %q", got)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want the file's own 0600 kept", info.Mode().Perm())
	}
	if want := []FileChange{{Path: path, Before: "hello\nworld\n", After: "bye\n", Existed: true}}; !slices.Equal(res.Changes, want) {
		t.Fatalf("changes = %+v", res.Changes)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteThroughASymlinkKeepsTheLink(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "real.txt"), "old\n")
	if err := os.Symlink("real.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	call, _ := newCall(t, dir, map[string]any{"filePath": "link.txt", "content": "new\n"})
	mustRun(t, Write{}, call)
	if got := readFile(t, filepath.Join(dir, "real.txt")); got != "new\n" {
		t.Fatalf("target = %q", got)
	}
	if info, _ := os.Lstat(filepath.Join(dir, "link.txt")); info.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
}

func TestWriteErrors(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "sub", "keep.txt"), "keep\n")
	tests := []struct {
		name  string
		input any
		want  string
	}{
		{"content is required", map[string]any{"filePath": "x.txt"}, "needs content"},
		{"filePath is required", map[string]any{"content": "x"}, "needs a filePath"},
		{"a directory cannot be written", map[string]any{"filePath": "sub", "content": "x"}, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, dir, tt.input)
			_, err := Write{}.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("a refused write creates nothing", func(t *testing.T) {
		call, gate := newCall(t, dir, map[string]any{"filePath": "new/dir/file.txt", "content": "x"})
		gate.refuse["edit"] = errRefused
		if _, err := (Write{}).Run(context.Background(), call); err != errRefused {
			t.Fatalf("err = %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the refused write created its directory (stat: %v)", err)
		}
	})
}

func TestEditReplacesExactText(t *testing.T) {
	original := "package main\n\nfunc a() {}\n\nfunc b() {}\n"
	tests := []struct {
		name       string
		file       string
		input      map[string]any
		want       string
		wantOutput string
		additions  int
		deletions  int
	}{
		{"a unique match is replaced", original, map[string]any{"oldString": "func b() {}", "newString": "func b() int { return 1 }"}, "package main\n\nfunc a() {}\n\nfunc b() int { return 1 }\n", "Edit applied successfully.", 1, 1},
		{"replaceAll replaces every match", original, map[string]any{"oldString": "() {}", "newString": "() {\n}", "replaceAll": true}, "package main\n\nfunc a() {\n}\n\nfunc b() {\n}\n", "Edit applied successfully (2 occurrences replaced).", 4, 2},
		{"a CRLF file keeps its line endings", "one\r\ntwo\r\nthree\r\n", map[string]any{"oldString": "one\ntwo", "newString": "uno\ndos"}, "uno\r\ndos\r\nthree\r\n", "Edit applied successfully.", 2, 2},
		{"an empty oldString fills an empty file", "", map[string]any{"oldString": "", "newString": "fresh\n"}, "fresh\n", "Edit applied successfully.", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := projectDir(t)
			path := filepath.Join(dir, "main.go")
			writeFile(t, path, tt.file)
			tt.input["filePath"] = "main.go"
			call, gate := newCall(t, dir, tt.input)
			res := mustRun(t, Edit{}, call)
			if got := readFile(t, path); got != tt.want {
				t.Fatalf("content = %q, want %q", got, tt.want)
			}
			if res.Output != tt.wantOutput {
				t.Fatalf("output = %q", res.Output)
			}
			fd, _ := res.Metadata["filediff"].(map[string]any)
			if fd["additions"] != tt.additions || fd["deletions"] != tt.deletions || fd["before"] != tt.file || fd["after"] != tt.want || fd["file"] != path {
				t.Fatalf("filediff = %+v", fd)
			}
			if d, ok := res.Metadata["diagnostics"].(map[string][]any); !ok || len(d) != 0 {
				t.Fatalf("diagnostics = %#v, want an empty map", res.Metadata["diagnostics"])
			}
			if ask := gate.askFor(t, "edit"); ask.Metadata["diff"] != res.Metadata["diff"] || !slices.Equal(ask.Patterns, []string{"main.go"}) {
				t.Fatalf("ask = %+v", ask)
			}
			if want := []FileChange{{Path: path, Before: tt.file, After: tt.want, Existed: true}}; !slices.Equal(res.Changes, want) {
				t.Fatalf("changes = %+v", res.Changes)
			}
		})
	}
}

func TestEditDiffIsAUnifiedDiff(t *testing.T) {
	dir := projectDir(t)
	path := filepath.Join(dir, "f.txt")
	writeFile(t, path, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
	call, _ := newCall(t, dir, map[string]any{"filePath": "f.txt", "oldString": "5\n", "newString": "five\nFIVE\n"})
	res := mustRun(t, Edit{}, call)
	want := "Index: " + path + "\n" + strings.Repeat("=", 67) + "\n--- " + path + "\n+++ " + path + "\n" +
		"@@ -2,7 +2,8 @@\n 2\n 3\n 4\n-5\n+five\n+FIVE\n 6\n 7\n 8\n"
	if res.Metadata["diff"] != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", res.Metadata["diff"], want)
	}
}

func TestEditErrors(t *testing.T) {
	dir := projectDir(t)
	path := filepath.Join(dir, "f.txt")
	const content = "x = 1\nx = 1\ny = 2\n"
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"text that is not there", map[string]any{"filePath": "f.txt", "oldString": "z = 3", "newString": "z = 4"}, "oldString was not found in " + path + ". It must match the file exactly"},
		{"text found twice without replaceAll", map[string]any{"filePath": "f.txt", "oldString": "x = 1", "newString": "x = 2"}, "oldString occurs 2 times in " + path + ". Include more surrounding lines in oldString so that it matches exactly one place, or set replaceAll to true"},
		{"identical strings", map[string]any{"filePath": "f.txt", "oldString": "y", "newString": "y"}, "No changes to apply"},
		{"a missing file", map[string]any{"filePath": "nope.txt", "oldString": "a", "newString": "b"}, "File " + dir + "/nope.txt not found. Use the write tool"},
		{"an empty oldString on a file with content", map[string]any{"filePath": "f.txt", "oldString": "", "newString": "b"}, "already has content"},
		{"a missing newString", map[string]any{"filePath": "f.txt", "oldString": "y = 2"}, "needs both oldString and newString"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, path, content)
			call, gate := newCall(t, dir, tt.input)
			_, err := Edit{}.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if got := readFile(t, path); got != content {
				t.Fatalf("a failed edit changed the file to %q", got)
			}
			for _, a := range gate.asked() {
				if a.Permission == "edit" {
					t.Fatalf("a failed edit asked to write: %+v", a)
				}
			}
		})
	}
	t.Run("a refused edit leaves the file alone", func(t *testing.T) {
		writeFile(t, path, content)
		call, gate := newCall(t, dir, map[string]any{"filePath": "f.txt", "oldString": "y = 2", "newString": "y = 3"})
		gate.refuse["edit"] = errRefused
		if _, err := (Edit{}).Run(context.Background(), call); err != errRefused {
			t.Fatalf("err = %v", err)
		}
		if got := readFile(t, path); got != content {
			t.Fatalf("content = %q", got)
		}
		if !strings.Contains(gate.askFor(t, "edit").Metadata["diff"].(string), "-y = 2\n+y = 3\n") {
			t.Fatal("the refused ask did not show the diff")
		}
	})
}

func TestDiffFiles(t *testing.T) {
	tests := []struct {
		name, before, after, hunks string
	}{
		{"no change has no hunks", "a\n", "a\n", ""},
		{"a deleted file removes every line", "a\nb\n", "", "@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{"a missing final newline is marked", "a\nb\n", "a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"},
		{"distant changes make two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n",
			"@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n"},
		{"close changes share one hunk", "1\n2\n3\n4\n5\n6\n7\n8\n", "X\n2\n3\n4\n5\n6\n7\nY\n",
			"@@ -1,8 +1,8 @@\n-1\n+X\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diffFiles("f", tt.before, tt.after)
			header := "Index: f\n" + strings.Repeat("=", 67) + "\n--- f\n+++ f\n"
			if d.Patch != header+tt.hunks {
				t.Fatalf("patch:\n%s\nwant:\n%s", d.Patch, header+tt.hunks)
			}
		})
	}
}

// TestDiffLinesIsMinimalAndFaithful checks the edit script against random inputs: keeping and
// removing lines must rebuild the old text, keeping and adding must rebuild the new one, and the
// number of changes must equal the one a longest-common-subsequence table allows.
func TestDiffLinesIsMinimalAndFaithful(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomLines := func() []string {
		n := rng.IntN(25)
		lines := make([]string, n)
		for i := range lines {
			lines[i] = string(rune('a'+rng.IntN(4))) + "\n"
		}
		return lines
	}
	for i := range 500 {
		a, b := randomLines(), randomLines()
		ops := diffLines(a, b)
		var gotA, gotB []string
		changes := 0
		for _, op := range ops {
			if op.kind != '+' {
				gotA = append(gotA, op.text)
			}
			if op.kind != '-' {
				gotB = append(gotB, op.text)
			}
			if op.kind != ' ' {
				changes++
			}
		}
		if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
			t.Fatalf("case %d: script does not rebuild the inputs\na=%q\nb=%q\nops=%v", i, a, b, ops)
		}
		if want := len(a) + len(b) - 2*lcsLength(a, b); changes != want {
			t.Fatalf("case %d: %d changes, minimal is %d", i, changes, want)
		}
	}
}

func lcsLength(a, b []string) int {
	table := make([][]int, len(a)+1)
	for i := range table {
		table[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				table[i][j] = table[i+1][j+1] + 1
			} else {
				table[i][j] = max(table[i+1][j], table[i][j+1])
			}
		}
	}
	return table[0][0]
}

func TestDiffOfHugeRewritesStaysCorrect(t *testing.T) {
	var a, b []string
	for i := range 3000 {
		a = append(a, "old "+string(rune('a'+i%26))+"\n")
		b = append(b, "new "+string(rune('a'+i%26))+"\n")
	}
	ops := diffLines(a, b)
	var gotA, gotB []string
	for _, op := range ops {
		if op.kind != '+' {
			gotA = append(gotA, op.text)
		}
		if op.kind != '-' {
			gotB = append(gotB, op.text)
		}
	}
	if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
		t.Fatal("the bounded diff does not rebuild the inputs")
	}
}

func BenchmarkDiffFiles(b *testing.B) {
	var before, after strings.Builder
	for i := range 5000 {
		line := strings.Repeat("x", i%80) + "\n"
		before.WriteString(line)
		if i%100 == 0 {
			after.WriteString("changed\n")
		} else {
			after.WriteString(line)
		}
	}
	for b.Loop() {
		diffFiles("f", before.String(), after.String())
	}
}
