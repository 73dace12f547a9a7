package tool

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadShowsNumberedLines(t *testing.T) {
	dir := projectDir(t)
	var long strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	writeFile(t, filepath.Join(dir, "long.txt"), long.String())
	writeFile(t, filepath.Join(dir, "short.txt"), "alpha\r\nbeta")
	writeFile(t, filepath.Join(dir, "empty.txt"), "")
	writeFile(t, filepath.Join(dir, "wide.txt"), strings.Repeat("é", 2500)+"\n")

	tests := []struct {
		name      string
		input     map[string]any
		want      string
		truncated bool
	}{
		{
			"a whole file ends with its line count",
			map[string]any{"filePath": "short.txt"},
			"<path>" + dir + "/short.txt</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n\n(End of file - total 2 lines)\n</content>",
			false,
		},
		{
			"a page says where to continue",
			map[string]any{"filePath": "long.txt", "offset": 5, "limit": 3},
			"<path>" + dir + "/long.txt</path>\n<type>file</type>\n<content>\n5: line 5\n6: line 6\n7: line 7\n\n(Showing lines 5-7 of 30. Use offset=8 to continue.)\n</content>",
			true,
		},
		{
			"numbers given as strings are accepted",
			map[string]any{"filePath": "long.txt", "offset": "29", "limit": "10"},
			"<path>" + dir + "/long.txt</path>\n<type>file</type>\n<content>\n29: line 29\n30: line 30\n\n(End of file - total 30 lines)\n</content>",
			false,
		},
		{
			"an empty file reads as no lines",
			map[string]any{"filePath": "empty.txt"},
			"<path>" + dir + "/empty.txt</path>\n<type>file</type>\n<content>\n\n\n(End of file - total 0 lines)\n</content>",
			false,
		},
		{
			"a very long line is cut at 2000 characters",
			map[string]any{"filePath": "wide.txt"},
			"<path>" + dir + "/wide.txt</path>\n<type>file</type>\n<content>\n1: " + strings.Repeat("é", 2000) + "... (line truncated to 2000 chars)\n\n(End of file - total 1 lines)\n</content>",
			false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, gate := newCall(t, dir, tt.input)
			res := mustRun(t, Read{}, call)
			if res.Output != tt.want {
				t.Fatalf("output:\n%q\nwant:\n%q", res.Output, tt.want)
			}
			if res.Metadata["truncated"] != tt.truncated {
				t.Fatalf("truncated = %v", res.Metadata["truncated"])
			}
			ask := gate.askFor(t, "read")
			if !slices.Equal(ask.Patterns, []string{tt.input["filePath"].(string)}) || !slices.Equal(ask.Always, []string{"*"}) {
				t.Fatalf("ask = %+v", ask)
			}
			if res.Title != tt.input["filePath"] {
				t.Fatalf("title = %q", res.Title)
			}
		})
	}
}

func TestReadPagesLargeFilesByBytes(t *testing.T) {
	dir := projectDir(t)
	line := strings.Repeat("x", 999)
	writeFile(t, filepath.Join(dir, "big.txt"), strings.Repeat(line+"\n", 100))
	call, _ := newCall(t, dir, map[string]any{"filePath": "big.txt"})
	res := mustRun(t, Read{}, call)
	if !strings.Contains(res.Output, "(Output capped at 50 KB. Showing lines 1-51. Use offset=52 to continue.)") {
		t.Fatalf("output tail = %q", res.Output[len(res.Output)-200:])
	}
	if res.Metadata["truncated"] != true {
		t.Fatal("not marked truncated")
	}
}

func TestReadListsADirectory(t *testing.T) {
	dir := fixtureDir(t)
	call, _ := newCall(t, dir, map[string]any{"filePath": "src"})
	res := mustRun(t, Read{}, call)
	want := "<path>" + dir + "/src</path>\n<type>directory</type>\n<entries>\nmain.go\nutil/\n\n(2 entries)\n</entries>"
	if res.Output != want {
		t.Fatalf("output:\n%q\nwant:\n%q", res.Output, want)
	}
}

func TestReadErrors(t *testing.T) {
	dir := fixtureDir(t)
	writeFile(t, filepath.Join(dir, "notes.txt"), "one\ntwo\n")
	tests := []struct {
		name  string
		input any
		want  string
	}{
		{"a missing file suggests similar names", map[string]any{"filePath": "README"}, "File not found: " + dir + "/README\n\nDid you mean one of these?\n" + dir + "/README.md"},
		{"a missing file with nothing similar says only that", map[string]any{"filePath": "zzz.txt"}, "File not found: " + dir + "/zzz.txt"},
		{"a binary file is refused", map[string]any{"filePath": "data/blob.bin"}, "Cannot read binary file: " + dir + "/data/blob.bin (.bin file)"},
		{"an offset past the end is out of range", map[string]any{"filePath": "notes.txt", "offset": 5}, "Offset 5 is out of range for this file (2 lines)"},
		{"an offset below one is refused", map[string]any{"filePath": "notes.txt", "offset": 0}, "offset must be greater than or equal to 1"},
		{"a missing filePath is refused", map[string]any{}, "The read tool needs a filePath."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, dir, tt.input)
			_, err := Read{}.Run(context.Background(), call)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to start with %q", err, tt.want)
			}
		})
	}
	t.Run("a file with NUL bytes but a text extension is refused", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "sneaky.txt"), "abc\x00def")
		call, _ := newCall(t, dir, map[string]any{"filePath": "sneaky.txt"})
		_, err := Read{}.Run(context.Background(), call)
		if err == nil || !strings.Contains(err.Error(), "Cannot read binary file") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a refused read reveals nothing", func(t *testing.T) {
		call, gate := newCall(t, dir, map[string]any{"filePath": "notes.txt"})
		gate.refuse["read"] = errRefused
		res, err := Read{}.Run(context.Background(), call)
		if err != errRefused || res.Output != "" {
			t.Fatalf("res, err = %+v, %v", res, err)
		}
	})
}

func TestReadDefaultsTo2000Lines(t *testing.T) {
	dir := projectDir(t)
	var lines strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&lines, "%d\n", i)
	}
	writeFile(t, filepath.Join(dir, "many.txt"), lines.String())
	call, _ := newCall(t, dir, map[string]any{"filePath": "many.txt"})
	res := mustRun(t, Read{}, call)
	if !strings.Contains(res.Output, "\n2000: 2000\n") || strings.Contains(res.Output, "2001: 2001") {
		t.Fatalf("a read without limit must show exactly lines 1-2000; tail = %q", res.Output[len(res.Output)-200:])
	}
	if !strings.Contains(res.Output, "(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)") {
		t.Fatalf("output tail = %q", res.Output[len(res.Output)-200:])
	}
}
