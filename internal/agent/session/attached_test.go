package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithFileContents(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	write := func(path, content string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	notes := write(filepath.Join(dir, "src", "notes.txt"), "only the file says kumquat\n")
	write(filepath.Join(dir, "src", "sub", "deep.txt"), "one level only")
	big := write(filepath.Join(dir, "big.txt"), strings.Repeat("x", attachedBytes+10))
	bin := write(filepath.Join(dir, "blob.bin"), "a\x00b")
	secret := write(filepath.Join(outside, "secret.txt"), "not for the model")
	if err := os.Symlink(secret, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	file := func(path string) PartInput {
		return PartInput{Type: "file", Mime: "text/plain", Filename: filepath.Base(path), URL: "file://" + path}
	}
	cases := []struct {
		name  string
		parts []PartInput
		want  string // the synthetic text's start; "" when none is added
	}{
		{"a text file inside the project is read into a synthetic part",
			[]PartInput{{Type: "text", Text: "read @src/notes.txt"}, file(notes)}, "Contents of src/notes.txt (attached with @src/notes.txt):\nonly the file says kumquat\n"},
		{"a large file is cut",
			[]PartInput{file(big)}, "Contents of big.txt"},
		{"a binary file is named, not shown",
			[]PartInput{file(bin)}, "Contents of blob.bin (attached with @blob.bin):\n(binary file, not shown)"},
		{"a file outside the project is not read",
			[]PartInput{file(secret)}, ""},
		{"a symlink leading outside the project is not read",
			[]PartInput{file(filepath.Join(dir, "link.txt"))}, ""},
		{"a path climbing out with .. is not read",
			[]PartInput{file(filepath.Join(dir, "..", filepath.Base(outside), "secret.txt"))}, ""},
		{"a missing file is not read",
			[]PartInput{file(filepath.Join(dir, "gone.txt"))}, ""},
		{"a directory inside the project is listed",
			[]PartInput{{Type: "file", Mime: "application/x-directory", Filename: "src/", URL: "file://" + filepath.Join(dir, "src")}}, "Contents of src/ (attached with @src/):\nnotes.txt\nsub/"},
		{"a directory outside the project is not listed",
			[]PartInput{{Type: "file", Mime: "application/x-directory", Filename: "x/", URL: "file://" + outside}}, ""},
		{"a data URL is left alone",
			[]PartInput{{Type: "file", Mime: "image/png", URL: "data:image/png;base64,AAAA"}}, ""},
		{"content the client already sent is not sent twice",
			[]PartInput{{Type: "text", Synthetic: true, Text: "Contents of src/notes.txt"}, file(notes)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := withFileContents(dir, c.parts)
			added := len(got) - len(c.parts)
			if c.want == "" {
				if added != 0 {
					t.Fatalf("added %d parts: %+v", added, got)
				}
				return
			}
			if added != 1 {
				t.Fatalf("added %d parts, want 1: %+v", added, got)
			}
			var syn PartInput
			for i, p := range got {
				if p.Type == "file" {
					syn = got[i-1]
				}
			}
			if !syn.Synthetic || syn.Type != "text" || !strings.HasPrefix(syn.Text, c.want) {
				t.Fatalf("the part before the file is %+v, want synthetic text starting %q", syn, c.want)
			}
			if strings.Contains(syn.Text, "not for the model") {
				t.Fatal("the outside file's content leaked")
			}
			if c.parts[0].URL != "" && strings.HasSuffix(c.parts[0].URL, "big.txt") && (len(syn.Text) > attachedBytes+200 || !strings.Contains(syn.Text, "cut at")) {
				t.Fatalf("the large file is not cut: %d bytes", len(syn.Text))
			}
		})
	}
}
