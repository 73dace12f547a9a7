package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

// TestFileDiffs reads summaries as the store keeps them.
func TestFileDiffs(t *testing.T) {
	tests := []struct {
		name string
		json string
		want FileDiff
	}{
		{
			name: "a diff in OpenCode's shape is read as is",
			json: `{"file":"a.txt","patch":"p","additions":2,"deletions":1,"status":"modified"}`,
			want: FileDiff{File: "a.txt", Patch: "p", Additions: 2, Deletions: 1, Status: "modified"},
		},
		{
			name: "a summary stored with before and after gets its patch made from them",
			json: `{"file":"a.txt","before":"one\ntwo\n","after":"one\n2\n","additions":1,"deletions":1,"status":"modified"}`,
			want: FileDiff{File: "a.txt", Additions: 1, Deletions: 1, Status: "modified",
				Patch: "Index: a.txt\n" + "===================================================================\n" +
					"--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"},
		},
		{
			name: "a file added from nothing counts only additions",
			json: `{"file":"new.txt","before":"","after":"x\n","status":"added"}`,
			want: FileDiff{File: "new.txt", Additions: 1, Status: "added",
				Patch: "Index: new.txt\n" + "===================================================================\n" +
					"--- new.txt\n+++ new.txt\n@@ -0,0 +1,1 @@\n+x\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := `{"id":"msg_1","sessionID":"ses_1","role":"user","time":{"created":1},"agent":"build","summary":{"diffs":[` + tt.json + `]}}`
			wp, err := decodeWithParts(store.Message{ID: "msg_1", Data: []byte(stored)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := wp.Info.Summary.Diffs[0]
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := json.Unmarshal(out, &fields); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"before", "after"} {
				if _, ok := fields[k]; ok {
					t.Errorf("the diff is sent with %q: %s", k, out)
				}
			}
		})
	}
}

func TestTheSessionDiffKeepsTheFirstBeforeAndTheLastAfter(t *testing.T) {
	done := func(file, before, after string) Part {
		return Part{Type: "tool", State: &ToolState{Status: "completed", Metadata: map[string]any{
			"filediff": map[string]any{"file": file, "before": before, "after": after}}}}
	}
	changes := map[string]fileChange{}
	foldDiffs(changes, []Part{done("f", "a\n", "b\n"), done("f", "b\n", "c\n"), done("g", "", "new\n")})
	got := diffList(changes, "")
	if len(got) != 2 || got[0].File != "f" || got[0].Status != "modified" || got[0].Additions != 1 || got[0].Deletions != 1 ||
		got[0].Patch != "Index: f\n===================================================================\n--- f\n+++ f\n@@ -1,1 +1,1 @@\n-a\n+c\n" {
		t.Fatalf("folded diff %+v", got)
	}
	if got[1].File != "g" || got[1].Status != "added" || got[1].Additions != 1 {
		t.Fatalf("the added file %+v", got[1])
	}
}

func TestDiffFilesAreRelativeToTheWorkTree(t *testing.T) {
	tests := []struct {
		name, file, root, want string
	}{
		{"a file in the work tree is named from its root", "/w/src/a.go", "/w", "src/a.go"},
		{"a file outside the work tree keeps its absolute path", "/elsewhere/a.go", "/w", "/elsewhere/a.go"},
		{"a sibling whose name starts like the root is outside it", "/w2/a.go", "/w", "/w2/a.go"},
		{"without a root the path is kept", "/w/src/a.go", "", "/w/src/a.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fileChange{File: tt.file, After: "x\n", Status: "added"}.diff(tt.root)
			if got.File != tt.want || !strings.Contains(got.Patch, "+++ "+tt.want+"\n") {
				t.Fatalf("file %q, patch %q; want %q", got.File, got.Patch, tt.want)
			}
		})
	}
}
