package tool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const (
	readDefaultLimit = 2000
	readMaxLineChars = 2000
	readMaxBytes     = 50 * 1024
)

// Read shows a file with line numbers, a page at a time, or a directory's entries.
type Read struct{}

type readInput struct {
	FilePath string  `json:"filePath"`
	Offset   flexInt `json:"offset"`
	Limit    flexInt `json:"limit"`
}

func (Read) Name() string { return "read" }

func (Read) Description() string {
	return `Reads a file from the filesystem, with line numbers ("12: text").

- filePath is absolute or relative to the project directory.
- Up to 2000 lines or 50 KB are returned per call; offset (1-indexed line number) and limit page through larger files.
- Lines longer than 2000 characters are cut short.
- Reading a directory lists its entries.
- Binary files are refused; images and PDFs cannot be shown.`
}

func (Read) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "filePath": {"type": "string", "description": "The path to the file or directory to read"},
    "offset": {"type": "number", "description": "The line number to start reading from (1-indexed)"},
    "limit": {"type": "number", "description": "The maximum number of lines to read (defaults to 2000)"}
  },
  "required": ["filePath"],
  "additionalProperties": false
}`)
}

func (Read) Run(ctx context.Context, call *Call) (Result, error) {
	var in readInput
	if err := decodeInput("read", call.Input, &in); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.FilePath) == "" {
		return Result{}, invalid("The read tool needs a filePath.")
	}
	offset, limit := 1, readDefaultLimit
	if in.Offset.Set {
		if in.Offset.Value < 1 {
			return Result{}, invalid("offset must be greater than or equal to 1 (line numbers start at 1).")
		}
		offset = in.Offset.Value
	}
	if in.Limit.Set {
		if in.Limit.Value < 1 {
			return Result{}, invalid("limit must be greater than or equal to 1.")
		}
		limit = in.Limit.Value
	}

	info, statErr := os.Stat(absPath(call.Dir, in.FilePath))
	isDir := statErr == nil && info.IsDir()
	t, err := locate(ctx, call, in.FilePath, isDir)
	if err != nil {
		return Result{}, err
	}
	if err := call.Gate.Check(ctx, Ask{Permission: "read", Patterns: []string{t.Rel}, Always: []string{"*"}, Metadata: map[string]any{}}); err != nil {
		return Result{}, err
	}
	if statErr != nil {
		if errors.Is(statErr, fs.ErrNotExist) {
			return Result{}, fileNotFound(t.Abs)
		}
		return Result{}, statErr
	}
	if isDir {
		return readDir(t, offset, limit)
	}
	if kind := binaryKind(t.Abs); kind != "" {
		//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
		return Result{}, fmt.Errorf("Cannot read binary file: %s (%s). Use the bash tool with a suitable program if you need to inspect it.", t.Abs, kind)
	}
	if call.Files != nil {
		text, ok, err := call.Files.ReadText(ctx, t.Abs)
		if err != nil {
			return Result{}, fmt.Errorf("reading %s through the client: %w", t.Abs, err)
		}
		if ok {
			return readLines(strings.NewReader(text), t, offset, limit)
		}
	}
	f, err := os.Open(t.Abs)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	return readLines(f, t, offset, limit)
}

func readLines(r io.Reader, t target, offset, limit int) (Result, error) {
	br := bufio.NewReader(r)
	var (
		lines            []string
		count, bytesUsed int
		more, cut        bool
	)
	for {
		line, err := br.ReadString('\n')
		if line == "" && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return Result{}, err
		}
		count++
		if count < offset {
			continue
		}
		if len(lines) >= limit || cut {
			more = true
			continue
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if n := utf8Prefix(line, readMaxLineChars); n < len(line) {
			line = line[:n] + fmt.Sprintf("... (line truncated to %d chars)", readMaxLineChars)
		}
		size := len(line)
		if len(lines) > 0 {
			size++
		}
		if bytesUsed+size > readMaxBytes {
			cut, more = true, true
			continue
		}
		lines = append(lines, line)
		bytesUsed += size
	}
	if count < offset && !(count == 0 && offset == 1) {
		return Result{}, invalid("Offset %d is out of range for this file (%d lines).", offset, count)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<path>%s</path>\n<type>file</type>\n<content>\n", t.Abs)
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d: %s", offset+i, line)
	}
	last := offset + len(lines) - 1
	switch {
	case cut:
		fmt.Fprintf(&b, "\n\n(Output capped at %d KB. Showing lines %d-%d. Use offset=%d to continue.)", readMaxBytes/1024, offset, last, last+1)
	case more:
		fmt.Fprintf(&b, "\n\n(Showing lines %d-%d of %d. Use offset=%d to continue.)", offset, last, count, last+1)
	default:
		fmt.Fprintf(&b, "\n\n(End of file - total %d lines)", count)
	}
	b.WriteString("\n</content>")
	return Result{
		Title:    t.Rel,
		Output:   b.String(),
		Metadata: map[string]any{"preview": strings.Join(lines[:min(20, len(lines))], "\n"), "truncated": more},
	}, nil
}

// utf8Prefix returns the byte length of the first n characters of s.
func utf8Prefix(s string, n int) int {
	i := 0
	for pos := range s {
		if i == n {
			return pos
		}
		i++
	}
	return len(s)
}

func readDir(t target, offset, limit int) (Result, error) {
	entries, err := os.ReadDir(t.Abs)
	if err != nil {
		return Result{}, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		} else if e.Type()&fs.ModeSymlink != 0 {
			if info, err := os.Stat(filepath.Join(t.Abs, name)); err == nil && info.IsDir() {
				name += "/"
			}
		}
		names = append(names, name)
	}
	slices.Sort(names)
	start := min(offset-1, len(names))
	shown := names[start:min(start+limit, len(names))]
	truncated := start+len(shown) < len(names)
	var b strings.Builder
	fmt.Fprintf(&b, "<path>%s</path>\n<type>directory</type>\n<entries>\n%s\n", t.Abs, strings.Join(shown, "\n"))
	if truncated {
		fmt.Fprintf(&b, "\n(Showing %d of %d entries. Use 'offset' parameter to read beyond entry %d)\n", len(shown), len(names), offset+len(shown))
	} else {
		fmt.Fprintf(&b, "\n(%d entries)\n", len(names))
	}
	b.WriteString("</entries>")
	return Result{
		Title:    t.Rel,
		Output:   b.String(),
		Metadata: map[string]any{"preview": strings.Join(shown[:min(20, len(shown))], "\n"), "truncated": truncated},
	}, nil
}

// fileNotFound names up to three entries of the same directory with a similar name, which is usually
// what the model meant.
func fileNotFound(abs string) error {
	dir, base := filepath.Dir(abs), strings.ToLower(filepath.Base(abs))
	var similar []string
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			name := strings.ToLower(e.Name())
			if strings.Contains(name, base) || strings.Contains(base, name) {
				similar = append(similar, filepath.Join(dir, e.Name()))
				if len(similar) == 3 {
					break
				}
			}
		}
	}
	if len(similar) > 0 {
		//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
		return fmt.Errorf("File not found: %s\n\nDid you mean one of these?\n%s", abs, strings.Join(similar, "\n"))
	}
	//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
	return fmt.Errorf("File not found: %s", abs)
}

var binaryExtensions = map[string]bool{
	".zip": true, ".tar": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true, ".7z": true,
	".exe": true, ".dll": true, ".so": true, ".dylib": true, ".o": true, ".a": true, ".lib": true, ".obj": true,
	".class": true, ".jar": true, ".war": true, ".wasm": true, ".pyc": true, ".pyo": true, ".bin": true, ".dat": true,
	".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true, ".odt": true, ".ods": true, ".odp": true,
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".bmp": true, ".ico": true, ".pdf": true,
	".mp3": true, ".mp4": true, ".mov": true, ".wav": true, ".sqlite": true, ".db": true,
}

// binaryKind says why a file is not text ("" when it is): a known binary extension, a NUL byte, or
// mostly control characters in its first 4 KB.
func binaryKind(path string) string {
	if ext := strings.ToLower(filepath.Ext(path)); binaryExtensions[ext] {
		return ext + " file"
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	if looksBinary(buf[:n]) {
		return "binary content"
	}
	return ""
}

func looksBinary(sample []byte) bool {
	if len(sample) == 0 {
		return false
	}
	control := 0
	for _, c := range sample {
		if c == 0 {
			return true
		}
		if c < 9 || (c > 13 && c < 32) {
			control++
		}
	}
	return control*10 > len(sample)*3
}
