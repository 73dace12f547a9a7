package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// ApplyPatch changes several files in one call with the patch format of Codex's apply_patch, which
// OpenAI's models are trained to write. It has OpenCode's name and input (patchText), so OpenCode's
// clients render its diffs, and it is offered instead of edit and write to the models that prefer it.
type ApplyPatch struct{}

type applyPatchInput struct {
	PatchText string `json:"patchText"`
}

func (ApplyPatch) Name() string { return "apply_patch" }

func (ApplyPatch) Description() string {
	return `Adds, updates, deletes and moves files with one patch. The whole patch is shown to the person in one request and applied all or nothing: if any change does not fit, no file is changed.

The patch format:

*** Begin Patch
*** Add File: path/to/new.txt
+first line of the new file
+second line
*** Update File: path/to/existing.go
*** Move to: path/to/renamed.go   (optional: also renames the file)
@@ func example() {               (optional: a line to find first, to place the change)
 an unchanged line before the change
-a line to remove
+a line to add
 an unchanged line after the change
*** Delete File: path/to/old.txt
*** End Patch

- Paths are relative to the project directory (absolute paths work too).
- Each line of a change starts with a space (unchanged), - (removed) or + (added); give about three unchanged lines around each change so it is found unambiguously, and no line numbers.
- Several changes to one file go under one Update File, each starting with @@, in file order.
- "*** End of File" after a change says it ends the file.`
}

func (ApplyPatch) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "patchText": {"type": "string", "description": "The full patch text that describes all changes to be made, from *** Begin Patch to *** End Patch"}
  },
  "required": ["patchText"],
  "additionalProperties": false
}`)
}

func (ApplyPatch) Run(ctx context.Context, call *Call) (Result, error) {
	var in applyPatchInput
	if err := decodeInput("apply_patch", call.Input, &in); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.PatchText) == "" {
		return Result{}, invalid("The apply_patch tool needs patchText: the patch, from *** Begin Patch to *** End Patch.")
	}
	ops, err := parsePatch(in.PatchText)
	if err != nil {
		return Result{}, invalid("apply_patch verification failed: %v. No file was changed.", err)
	}
	cs := &changeSet{}
	seen := map[string]bool{}
	for _, p := range ops {
		op, err := cs.prepare(ctx, call, p)
		if err != nil {
			return Result{}, err
		}
		for _, t := range op.targets() {
			if seen[t.Real] {
				return Result{}, invalid("apply_patch verification failed: the patch changes %s twice; put all its changes under one operation. No file was changed.", t.Abs)
			}
			seen[t.Real] = true
		}
		cs.ops = append(cs.ops, op)
	}
	if err := cs.commit(ctx, call); err != nil {
		return Result{}, err
	}
	var summary []string
	for _, op := range cs.ops {
		switch op.kind {
		case "add":
			summary = append(summary, "A "+op.t.Rel)
		case "delete":
			summary = append(summary, "D "+op.t.Rel)
		case "move":
			summary = append(summary, "M "+op.t.Rel+" -> "+op.to.Rel)
		default:
			summary = append(summary, "M "+op.t.Rel)
		}
	}
	title := fmt.Sprintf("%d files changed", len(cs.ops))
	if len(cs.ops) == 1 {
		title = cs.ops[0].path().Rel
	}
	files := make([]map[string]any, 0, len(cs.ops))
	var combined strings.Builder
	for _, op := range cs.ops {
		files = append(files, op.metadata())
		combined.WriteString(op.diff.Patch)
	}
	return Result{
		Title:  title,
		Output: "Success. Updated the following files:\n" + strings.Join(summary, "\n"),
		Metadata: map[string]any{
			"diff":        combined.String(),
			"files":       files,
			"filediffs":   cs.fileDiffs(),
			"diagnostics": noDiagnostics(),
		},
		Changes: cs.changes(),
	}, nil
}

// prepare reads the file one patch operation touches and computes its new content; nothing is
// written. Any problem (a missing file, a chunk whose lines are not in it) fails the whole patch.
func (cs *changeSet) prepare(ctx context.Context, call *Call, p patchOp) (*fileOp, error) {
	t, before, existed, err := cs.read(ctx, call, p.path)
	if err != nil {
		return nil, err
	}
	op := &fileOp{kind: p.kind, t: t, before: before, existed: existed}
	fail := func(format string, args ...any) (*fileOp, error) {
		return nil, invalid("apply_patch verification failed: "+format+" No file was changed.", args...)
	}
	switch p.kind {
	case "add":
		if existed {
			return fail("%s already exists; change it with *** Update File, or delete it first.", t.Abs)
		}
		op.after = strings.Join(p.lines, "\n")
		if len(p.lines) > 0 {
			op.after += "\n"
		}
		return op, nil
	case "delete":
		if !existed {
			return fail("%s does not exist, so it cannot be deleted.", t.Abs)
		}
		return op, nil
	}
	if !existed {
		return fail("%s does not exist; create it with *** Add File.", t.Abs)
	}
	op.after, err = applyChunks(t.Rel, before, p.chunks)
	if err != nil {
		return fail("%v.", err)
	}
	if p.moveTo != "" {
		to, _, existedTo, err := cs.read(ctx, call, p.moveTo)
		if err != nil {
			return nil, err
		}
		if to.Real != t.Real {
			if existedTo {
				return fail("cannot move %s to %s: a file is there already.", t.Abs, to.Abs)
			}
			op.kind, op.to = "move", to
		}
	}
	return op, nil
}
