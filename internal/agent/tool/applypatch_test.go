package tool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAPatchTouchingThreeFilesAsksOnceAndAppliesThemAll(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "a.go"), "package a\n\nfunc A() int {\n\treturn 1\n}\n")
	writeFile(t, filepath.Join(dir, "old.txt"), "to be removed\n")
	writeFile(t, filepath.Join(dir, "c.txt"), "one\ntwo\nthree\n")
	patch := `*** Begin Patch
*** Add File: docs/new.md
+# New
+hello
*** Update File: a.go
@@ func A() int {
-	return 1
+	return 2
 }
*** Delete File: old.txt
*** Update File: c.txt
*** Move to: moved/c.txt
 one
-two
+TWO
 three
*** End Patch`
	call, gate := newCall(t, dir, map[string]any{"patchText": patch})
	res := mustRun(t, ApplyPatch{}, call)

	asks := gate.asked()
	if len(asks) != 1 || asks[0].Permission != "edit" {
		t.Fatalf("asks = %+v, want one edit request", asks)
	}
	ask := asks[0]
	wantPatterns := []string{"docs/new.md", "a.go", "old.txt", "c.txt", "moved/c.txt"}
	if !slices.Equal(ask.Patterns, wantPatterns) || !slices.Equal(ask.Always, wantPatterns) {
		t.Fatalf("patterns = %v, always = %v, want %v", ask.Patterns, ask.Always, wantPatterns)
	}
	diff, _ := ask.Metadata["diff"].(string)
	for _, want := range []string{"+# New", "-\treturn 1", "+\treturn 2", "-to be removed", "+TWO"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the combined diff lacks %q:\n%s", want, diff)
		}
	}
	if got := readFile(t, filepath.Join(dir, "docs/new.md")); got != "# New\nhello\n" {
		t.Errorf("docs/new.md = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "a.go")); got != "package a\n\nfunc A() int {\n\treturn 2\n}\n" {
		t.Errorf("a.go = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "moved/c.txt")); got != "one\nTWO\nthree\n" {
		t.Errorf("moved/c.txt = %q", got)
	}
	for _, gone := range []string{"old.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (%v)", gone, err)
		}
	}
	// The result's files are what OpenCode's terminal UI renders: type, paths, patch and counts.
	files, _ := res.Metadata["files"].([]map[string]any)
	if len(files) != 4 {
		t.Fatalf("files = %+v", res.Metadata["files"])
	}
	wantTypes := []string{"add", "update", "delete", "move"}
	for i, f := range files {
		if f["type"] != wantTypes[i] || f["filePath"] == "" || f["relativePath"] == "" || !strings.Contains(f["patch"].(string), "@@") {
			t.Errorf("files[%d] = %+v", i, f)
		}
		if _, ok := f["deletions"].(int); !ok {
			t.Errorf("files[%d].deletions = %#v, want a number", i, f["deletions"])
		}
	}
	if files[3]["relativePath"] != "moved/c.txt" || files[3]["movePath"] != filepath.Join(dir, "moved/c.txt") {
		t.Errorf("the move's entry = %+v", files[3])
	}
	if !strings.Contains(res.Output, "A docs/new.md") || !strings.Contains(res.Output, "M c.txt -> moved/c.txt") {
		t.Errorf("output = %q", res.Output)
	}
	if len(res.Changes) != 5 {
		t.Errorf("changes = %+v, want one per path (the move's two)", res.Changes)
	}
}

func TestAPatchThatDoesNotFitChangesNoFile(t *testing.T) {
	for _, tt := range []struct {
		name, patch, want string
	}{
		{"a chunk whose lines are not in the file", "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Update File: b.txt\n-missing line\n+x\n*** End Patch", "not found in b.txt"},
		{"an update of a missing file", "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Update File: nope.txt\n-x\n+y\n*** End Patch", "does not exist"},
		{"an add over an existing file", "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Add File: b.txt\n+x\n*** End Patch", "already exists"},
		{"a delete of a missing file", "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Delete File: gone.txt\n*** End Patch", "cannot be deleted"},
		{"a file changed twice", "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Delete File: a.txt\n*** End Patch", "changes "},
		{"a move onto an existing file", "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n-alpha\n+ALPHA\n*** End Patch", "a file is there already"},
		{"a patch without its end", "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n", "*** End Patch"},
		{"a line of unknown kind", "*** Begin Patch\n*** Update File: a.txt\n-alpha\n*ALPHA\n*** End Patch", "patch line 4"},
	} {
		t.Run(tt.name+" is refused before anything is asked or written", func(t *testing.T) {
			dir := projectDir(t)
			writeFile(t, filepath.Join(dir, "a.txt"), "alpha\n")
			writeFile(t, filepath.Join(dir, "b.txt"), "beta\n")
			call, gate := newCall(t, dir, map[string]any{"patchText": tt.patch})
			_, err := ApplyPatch{}.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error naming %q", err, tt.want)
			}
			if len(gate.asked()) != 0 {
				t.Fatalf("asked %+v for a patch that cannot apply", gate.asked())
			}
			if readFile(t, filepath.Join(dir, "a.txt")) != "alpha\n" || readFile(t, filepath.Join(dir, "b.txt")) != "beta\n" {
				t.Fatal("a file changed")
			}
		})
	}
}

func TestARefusedPatchChangesNoFile(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "alpha\n")
	call, gate := newCall(t, dir, map[string]any{"patchText": "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Add File: b.txt\n+b\n*** End Patch"})
	gate.refuse["edit"] = errRefused
	if _, err := (ApplyPatch{}).Run(context.Background(), call); !errors.Is(err, errRefused) {
		t.Fatalf("Run = %v, want the refusal", err)
	}
	if readFile(t, filepath.Join(dir, "a.txt")) != "alpha\n" {
		t.Fatal("a.txt changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("b.txt was created")
	}
}

// editGate approves, but first runs change once when the edit is asked.
type editGate struct {
	tableGate
	change func()
}

func (g *editGate) Check(ctx context.Context, ask Ask) error {
	if ask.Permission == "edit" && g.change != nil {
		g.change()
		g.change = nil
	}
	return g.tableGate.Check(ctx, ask)
}

func TestAFileChangedWhileAPatchWaitsRefusesTheWholePatch(t *testing.T) {
	dir := projectDir(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "alpha\n")
	writeFile(t, filepath.Join(dir, "b.txt"), "beta\n")
	call, _ := newCall(t, dir, map[string]any{"patchText": "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+ALPHA\n*** Update File: b.txt\n-beta\n+BETA\n*** End Patch"})
	call.Gate = &editGate{change: func() { writeFile(t, filepath.Join(dir, "b.txt"), "beta\nedited by a person\n") }}
	_, err := ApplyPatch{}.Run(context.Background(), call)
	if err == nil || !strings.Contains(err.Error(), "changed while waiting for approval") {
		t.Fatalf("Run = %v, want a refusal naming the change", err)
	}
	if readFile(t, filepath.Join(dir, "a.txt")) != "alpha\n" || readFile(t, filepath.Join(dir, "b.txt")) != "beta\nedited by a person\n" {
		t.Fatal("the patch was applied in part, or the person's edit was overwritten")
	}
}

func TestAPatchOutsideTheProjectAsksForTheDirectoryInTheSameRequest(t *testing.T) {
	dir, outside := projectDir(t), projectDir(t)
	writeFile(t, filepath.Join(outside, "x.txt"), "x\n")
	call, gate := newCall(t, dir, map[string]any{"patchText": "*** Begin Patch\n*** Update File: " + filepath.Join(outside, "x.txt") + "\n-x\n+X\n*** Add File: in.txt\n+in\n*** End Patch"})
	mustRun(t, ApplyPatch{}, call)
	asks := gate.asked()
	if len(asks) != 1 {
		t.Fatalf("asks = %+v, want one request", asks)
	}
	want := Need{Permission: "external_directory", Pattern: filepath.ToSlash(outside) + "/*"}
	if !slices.Equal(asks[0].With, []Need{want}) {
		t.Fatalf("with = %+v, want %+v", asks[0].With, want)
	}
	if readFile(t, filepath.Join(outside, "x.txt")) != "X\n" {
		t.Fatal("the file outside was not changed")
	}
}

func TestAPatchWritingConfigurationOffersNoAlways(t *testing.T) {
	dir := projectDir(t)
	call, gate := newCall(t, dir, map[string]any{"patchText": "*** Begin Patch\n*** Add File: notes.txt\n+n\n*** Add File: tandem.json\n+{}\n*** End Patch"})
	mustRun(t, ApplyPatch{}, call)
	if ask := gate.askFor(t, "edit"); len(ask.Always) != 0 || len(ask.Unjudged) == 0 {
		t.Fatalf("ask = %+v, want no always and a reason", ask)
	}
}

func TestApplyChunks(t *testing.T) {
	for _, tt := range []struct {
		name, content, patch, want string
	}{
		{"a change is found by its context", "a\nb\nc\nd\n", " b\n-c\n+C\n d", "a\nb\nC\nd\n"},
		{"the @@ line places a change among repeats", "x\nend\ny\nend\n", "@@ y\n-end\n+END", "x\nend\ny\nEND\n"},
		{"chunks apply in order", "1\n2\n3\n4\n5\n", "@@\n-2\n+two\n@@\n-4\n+four", "1\ntwo\n3\nfour\n5\n"},
		{"End of File anchors a change at the end", "end\nmid\nend\n", "-end\n+last\n*** End of File", "end\nmid\nlast\n"},
		{"trailing whitespace is forgiven", "keep  \nold\n", " keep\n-old\n+new", "keep  \nnew\n"},
		{"indentation is forgiven when nothing else fits", "\tif x {\n\t\treturn\n\t}\n", " if x {\n-    return\n+    return nil", "\tif x {\n    return nil\n\t}\n"},
		{"CRLF line endings are kept", "a\r\nb\r\n", "-b\n+B", "a\r\nB\r\n"},
		{"additions alone go after the @@ line", "a\nb\n", "@@ a\n+inserted", "a\ninserted\nb\n"},
		{"additions alone without @@ go at the end", "a\n", "+z", "a\nz\n"},
		{"an empty line is an empty context line", "a\n\nb\n", " a\n\n-b\n+B", "a\n\nB\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ops, err := parsePatch("*** Begin Patch\n*** Update File: f\n" + tt.patch + "\n*** End Patch")
			if err != nil {
				t.Fatal(err)
			}
			got, err := applyChunks("f", tt.content, ops[0].chunks)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePatchErrorsNameTheLine(t *testing.T) {
	for _, tt := range []struct{ name, patch, want string }{
		{"no begin", "*** Update File: a\n-x\n*** End Patch", "first line"},
		{"no operations", "*** Begin Patch\n*** End Patch", "changes no file"},
		{"an add line without +", "*** Begin Patch\n*** Add File: a\nx\n*** End Patch", "patch line 3"},
		{"an unknown header", "*** Begin Patch\n*** Rename File: a\n*** End Patch", "patch line 2"},
		{"an update without changes", "*** Begin Patch\n*** Update File: a\n*** End Patch", "has no changes"},
		{"a path missing", "*** Begin Patch\n*** Delete File: \n*** End Patch", "names no path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parsePatch(tt.patch); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parsePatch = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMultiEditAppliesEveryEditOrNone(t *testing.T) {
	t.Run("the edits apply in order and are asked for once", func(t *testing.T) {
		dir := projectDir(t)
		writeFile(t, filepath.Join(dir, "m.go"), "a := 1\nb := 2\n")
		call, gate := newCall(t, dir, map[string]any{"filePath": "m.go", "edits": []map[string]any{
			{"oldString": "a := 1", "newString": "a := 10"},
			{"oldString": "a := 10\nb := 2", "newString": "a := 10\nb := 20"},
		}})
		res := mustRun(t, MultiEdit{}, call)
		if got := readFile(t, filepath.Join(dir, "m.go")); got != "a := 10\nb := 20\n" {
			t.Fatalf("m.go = %q", got)
		}
		if asks := gate.asked(); len(asks) != 1 || !slices.Equal(asks[0].Patterns, []string{"m.go"}) {
			t.Fatalf("asks = %+v", asks)
		}
		if fd, ok := res.Metadata["filediff"].(map[string]any); !ok || fd["after"] != "a := 10\nb := 20\n" {
			t.Fatalf("filediff = %+v", res.Metadata["filediff"])
		}
	})
	t.Run("one edit that does not fit applies none", func(t *testing.T) {
		dir := projectDir(t)
		writeFile(t, filepath.Join(dir, "m.go"), "a := 1\n")
		call, gate := newCall(t, dir, map[string]any{"filePath": "m.go", "edits": []map[string]any{
			{"oldString": "a := 1", "newString": "a := 2"},
			{"oldString": "nowhere", "newString": "x"},
		}})
		_, err := MultiEdit{}.Run(context.Background(), call)
		if err == nil || !strings.Contains(err.Error(), "edits[1]") || !strings.Contains(err.Error(), "No edit was applied") {
			t.Fatalf("Run = %v", err)
		}
		if readFile(t, filepath.Join(dir, "m.go")) != "a := 1\n" || len(gate.asked()) != 0 {
			t.Fatal("the file changed, or the person was asked")
		}
	})
	t.Run("an edit naming another file is refused", func(t *testing.T) {
		dir := projectDir(t)
		writeFile(t, filepath.Join(dir, "m.go"), "a\n")
		call, _ := newCall(t, dir, map[string]any{"filePath": "m.go", "edits": []map[string]any{
			{"filePath": "other.go", "oldString": "a", "newString": "b"},
		}})
		if _, err := (MultiEdit{}).Run(context.Background(), call); err == nil || !strings.Contains(err.Error(), "one file") {
			t.Fatalf("Run = %v", err)
		}
	})
	t.Run("an empty first oldString creates the file", func(t *testing.T) {
		dir := projectDir(t)
		call, _ := newCall(t, dir, map[string]any{"filePath": "new.txt", "edits": []map[string]any{
			{"oldString": "", "newString": "hello world\n"},
			{"oldString": "world", "newString": "there"},
		}})
		mustRun(t, MultiEdit{}, call)
		if got := readFile(t, filepath.Join(dir, "new.txt")); got != "hello there\n" {
			t.Fatalf("new.txt = %q", got)
		}
	})
}
