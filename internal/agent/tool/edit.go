package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Edit replaces exact text in a file.
type Edit struct{}

type editInput struct {
	FilePath   string  `json:"filePath"`
	OldString  *string `json:"oldString"`
	NewString  *string `json:"newString"`
	ReplaceAll bool    `json:"replaceAll"`
}

func (Edit) Name() string { return "edit" }

func (Edit) Description() string {
	return `Replaces exact text in a file.

- oldString must match the file exactly, including whitespace and indentation (without the line numbers the read tool shows).
- oldString must occur exactly once, unless replaceAll is true; include more surrounding lines to make it unique.
- An empty oldString creates a new file (or fills an empty one) with newString.
- The person may be shown the diff and asked to approve it.`
}

func (Edit) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "filePath": {"type": "string", "description": "The path to the file to modify"},
    "oldString": {"type": "string", "description": "The text to replace"},
    "newString": {"type": "string", "description": "The text to replace it with (must be different from oldString)"},
    "replaceAll": {"type": "boolean", "description": "Replace all occurrences of oldString (default false)"}
  },
  "required": ["filePath", "oldString", "newString"],
  "additionalProperties": false
}`)
}

func (Edit) Run(ctx context.Context, call *Call) (Result, error) {
	var in editInput
	if err := decodeInput("edit", call.Input, &in); err != nil {
		return Result{}, err
	}
	switch {
	case in.OldString == nil || in.NewString == nil:
		return Result{}, invalid("The edit tool needs both oldString and newString.")
	case *in.OldString == *in.NewString:
		return Result{}, invalid("No changes to apply: oldString and newString are identical.")
	}
	t, before, existed, err := fileToChange(ctx, call, "edit", in.FilePath)
	if err != nil {
		return Result{}, err
	}
	after, replaced, err := replaceText(t, before, existed, *in.OldString, *in.NewString, in.ReplaceAll)
	if err != nil {
		return Result{}, err
	}
	d, err := commit(ctx, call, t, before, after)
	if err != nil {
		return Result{}, err
	}
	output := "Edit applied successfully."
	if replaced > 1 {
		output = fmt.Sprintf("Edit applied successfully (%d occurrences replaced).", replaced)
	}
	return Result{
		Title:  t.Rel,
		Output: output,
		Metadata: map[string]any{
			"diff":        d.Patch,
			"filediff":    d.metadata(t.Abs, before, after),
			"diagnostics": noDiagnostics(),
		},
		Changes: []FileChange{{Path: t.Abs, Before: before, After: after, Existed: existed}},
	}, nil
}

// replaceText computes the edited content. A file with CRLF line endings keeps them: the model's
// "\n" in oldString and newString is read as the file's line ending.
func replaceText(t target, content string, existed bool, oldString, newString string, all bool) (string, int, error) {
	if oldString == "" {
		if existed && content != "" {
			return "", 0, invalid("oldString is empty, which only creates a new file, but %s already has content. Give the exact text to replace, or use the write tool to replace the whole file.", t.Abs)
		}
		return newString, 1, nil
	}
	if !existed {
		//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
		return "", 0, fmt.Errorf("File %s not found. Use the write tool to create it, or an empty oldString with the edit tool.", t.Abs)
	}
	if strings.Contains(content, "\r\n") {
		oldString = toCRLF(oldString)
		newString = toCRLF(newString)
	}
	n := strings.Count(content, oldString)
	switch {
	case n == 0:
		return "", 0, invalid("oldString was not found in %s. It must match the file exactly, including whitespace and indentation, and without read's line-number prefixes. Read the file again and copy the text exactly.", t.Abs)
	case n > 1 && !all:
		return "", 0, invalid("oldString occurs %d times in %s. Include more surrounding lines in oldString so that it matches exactly one place, or set replaceAll to true to replace every occurrence.", n, t.Abs)
	case all:
		return strings.ReplaceAll(content, oldString, newString), n, nil
	default:
		return strings.Replace(content, oldString, newString, 1), 1, nil
	}
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
