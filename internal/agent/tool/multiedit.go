package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// MultiEdit makes several edits to one file in one call: each is applied to the result of the one
// before, the person approves them together as one diff, and the file is written once — or not at
// all, when any edit does not fit.
type MultiEdit struct{}

type multiEditInput struct {
	FilePath string `json:"filePath"`
	Edits    []struct {
		FilePath   string  `json:"filePath"`
		OldString  *string `json:"oldString"`
		NewString  *string `json:"newString"`
		ReplaceAll bool    `json:"replaceAll"`
	} `json:"edits"`
}

func (MultiEdit) Name() string { return "multiedit" }

func (MultiEdit) Description() string {
	return `Makes several edits to one file at once, all or nothing. Prefer it to several edit calls on the same file.

- Each edit is as the edit tool's: oldString must match exactly (after the edits before it are applied) and once, unless replaceAll is true.
- The edits apply in order, each to the result of the previous one.
- If any edit does not fit, none is applied and the file is unchanged.
- An empty oldString in the first edit creates a new file.`
}

func (MultiEdit) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "filePath": {"type": "string", "description": "The path to the file to modify"},
    "edits": {
      "type": "array",
      "description": "The edits to make, in order",
      "minItems": 1,
      "items": {
        "type": "object",
        "properties": {
          "filePath": {"type": "string", "description": "The path to the file to modify (the same as the top-level filePath)"},
          "oldString": {"type": "string", "description": "The text to replace"},
          "newString": {"type": "string", "description": "The text to replace it with (must be different from oldString)"},
          "replaceAll": {"type": "boolean", "description": "Replace all occurrences of oldString (default false)"}
        },
        "required": ["oldString", "newString"],
        "additionalProperties": false
      }
    }
  },
  "required": ["filePath", "edits"],
  "additionalProperties": false
}`)
}

func (MultiEdit) Run(ctx context.Context, call *Call) (Result, error) {
	var in multiEditInput
	if err := decodeInput("multiedit", call.Input, &in); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.FilePath) == "" {
		return Result{}, invalid("The multiedit tool needs a filePath.")
	}
	if len(in.Edits) == 0 {
		return Result{}, invalid("The multiedit tool needs at least one edit in edits.")
	}
	cs := &changeSet{}
	t, before, existed, err := cs.read(ctx, call, in.FilePath)
	if err != nil {
		return Result{}, err
	}
	content, exists, replaced := before, existed, 0
	for i, e := range in.Edits {
		switch {
		case e.OldString == nil || e.NewString == nil:
			return Result{}, invalid("edits[%d] needs both oldString and newString. No edit was applied.", i)
		case *e.OldString == *e.NewString:
			return Result{}, invalid("edits[%d]: oldString and newString are identical. No edit was applied.", i)
		case e.FilePath != "" && absPath(call.Dir, e.FilePath) != t.Abs:
			return Result{}, invalid("edits[%d] names %s, but multiedit changes one file, %s; use a separate call (or apply_patch) for another file. No edit was applied.", i, e.FilePath, t.Abs)
		}
		next, n, err := replaceText(t, content, exists, *e.OldString, *e.NewString, e.ReplaceAll)
		if err != nil {
			return Result{}, fmt.Errorf("edits[%d]: %w No edit was applied", i, err)
		}
		content, exists, replaced = next, true, replaced+n
	}
	kind := "update"
	if !existed {
		kind = "add"
	}
	op := &fileOp{kind: kind, t: t, before: before, after: content, existed: existed}
	cs.ops = []*fileOp{op}
	if err := cs.commit(ctx, call); err != nil {
		return Result{}, err
	}
	return Result{
		Title:  t.Rel,
		Output: fmt.Sprintf("%d edits applied successfully (%d replacements).", len(in.Edits), replaced),
		Metadata: map[string]any{
			"diff":        op.diff.Patch,
			"filediff":    op.diff.metadata(t.Abs, before, content),
			"files":       []map[string]any{op.metadata()},
			"diagnostics": noDiagnostics(),
		},
		Changes: cs.changes(),
	}, nil
}
