package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Write creates or replaces a whole file.
type Write struct{}

type writeInput struct {
	FilePath string  `json:"filePath"`
	Content  *string `json:"content"`
}

func (Write) Name() string { return "write" }

func (Write) Description() string {
	return `Writes a file, replacing it if it exists and creating missing parent directories.

- filePath is absolute or relative to the project directory.
- Prefer the edit tool for changing part of an existing file; read a file before overwriting it.
- The person may be shown the diff and asked to approve it.`
}

func (Write) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "filePath": {"type": "string", "description": "The path to the file to write"},
    "content": {"type": "string", "description": "The content to write to the file"}
  },
  "required": ["filePath", "content"],
  "additionalProperties": false
}`)
}

func (Write) Run(ctx context.Context, call *Call) (Result, error) {
	var in writeInput
	if err := decodeInput("write", call.Input, &in); err != nil {
		return Result{}, err
	}
	if in.Content == nil {
		return Result{}, invalid("The write tool needs content (use an empty string for an empty file).")
	}
	t, before, existed, err := fileToChange(ctx, call, "write", in.FilePath)
	if err != nil {
		return Result{}, err
	}
	d, err := commit(ctx, call, t, before, *in.Content)
	if err != nil {
		return Result{}, err
	}
	return Result{
		Title:  t.Rel,
		Output: "Wrote file successfully.",
		Metadata: map[string]any{
			"filepath":    t.Abs,
			"exists":      existed,
			"diff":        d.Patch,
			"filediff":    d.metadata(t.Abs, before, *in.Content),
			"diagnostics": noDiagnostics(),
		},
		Changes: []FileChange{{Path: t.Abs, Before: before, After: *in.Content, Existed: existed}},
	}, nil
}

// noDiagnostics is the diagnostics metadata of a write or edit, keyed by file path as OpenCode's
// are: empty, because tandem runs no language servers. OpenCode's TUI renders a finished write's
// content only when the field is there.
func noDiagnostics() map[string][]any { return map[string][]any{} }

// fileToChange is how edit and write begin: the file named by filePath, located inside the project
// (or approved outside it), refused when it is a directory, with its current content and whether it
// existed.
func fileToChange(ctx context.Context, call *Call, toolName, filePath string) (t target, before string, existed bool, err error) {
	if strings.TrimSpace(filePath) == "" {
		return target{}, "", false, invalid("The %s tool needs a filePath.", toolName)
	}
	t, err = locate(ctx, call, filePath, false)
	if err != nil {
		return target{}, "", false, err
	}
	if info, err := os.Stat(t.Abs); err == nil && info.IsDir() {
		return target{}, "", false, invalid("%s is a directory, not a file.", t.Abs)
	}
	before, existed, err = readExisting(t.Abs)
	if err != nil {
		return target{}, "", false, err
	}
	if existed && call.Files != nil {
		// The client's view (an unsaved buffer) is what the change applies to.
		text, ok, err := call.Files.ReadText(ctx, t.Abs)
		if err != nil {
			return target{}, "", false, fmt.Errorf("reading %s through the client: %w", t.Abs, err)
		}
		if ok {
			before = text
		}
	}
	return t, before, existed, nil
}

// commit shows the change to the gate as a diff and, once allowed, writes it. The write goes to the
// symlink-resolved path so that a symlink stays a symlink.
func commit(ctx context.Context, call *Call, t target, before, after string) (fileDiff, error) {
	d := diffFiles(t.Abs, before, after)
	ask := Ask{
		Permission: "edit",
		Patterns:   []string{t.Rel},
		Always:     []string{t.Rel},
		Metadata:   map[string]any{"filepath": t.Abs, "diff": d.Patch},
	}
	if reason := configFile(t.Real); reason != "" {
		// Configuration is asked about every time: no "always" is offered or honoured.
		ask.Always, ask.Unjudged = nil, []string{reason}
		ask.Metadata["unjudged"] = ask.Unjudged
	}
	if err := call.Gate.Check(ctx, ask); err != nil {
		return fileDiff{}, err
	}
	// Checked again at use: the path must lead where it led when the person saw the diff.
	if now := evalExisting(t.Abs); now != t.Real {
		return fileDiff{}, invalid("Refused to write %s: it changed while waiting for approval (it now leads to %s, not %s).", t.Abs, now, t.Real)
	}
	if call.Files != nil {
		ok, err := call.Files.WriteText(ctx, t.Abs, after)
		if err != nil {
			return fileDiff{}, fmt.Errorf("writing %s through the client: %w", t.Abs, err)
		}
		if ok {
			return d, nil
		}
	}
	rootDir, rel := filepath.Dir(t.Real), filepath.Base(t.Real)
	if projectDir := evalExisting(filepath.Clean(call.Dir)); within(projectDir, t.Real) {
		rootDir, rel = projectDir, relSlash(projectDir, t.Real)
	}
	if err := writeAtomicUnder(rootDir, filepath.FromSlash(rel), after); err != nil {
		return fileDiff{}, fmt.Errorf("writing %s: %w", t.Abs, err)
	}
	return d, nil
}
