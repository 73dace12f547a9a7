package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tandem-dev/tandem/internal/infra/store"

	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// fileChange is one file a session changed: its content before the first change and after the
// last one. It is what is stored and folded; clients get it as a FileDiff (a unified patch).
type fileChange struct {
	File   string `json:"file"`
	Before string `json:"before"`
	After  string `json:"after"`
	Status string `json:"status,omitempty"`
}

// diff is the change in OpenCode's FileDiff shape. Its file is relative to root (the session's
// work tree) as in OpenCode; a file outside root keeps its absolute path.
func (c fileChange) diff(root string) FileDiff {
	file := c.File
	if root != "" && filepath.IsAbs(file) {
		if rel, err := filepath.Rel(root, file); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			file = rel
		}
	}
	patch, add, del := tool.Patch(file, c.Before, c.After)
	return FileDiff{File: file, Patch: patch, Additions: add, Deletions: del, Status: c.Status}
}

// sessionDiff is the session's changes, one per file. It is stored and kept current by each turn;
// a session without a stored diff (a fork, or one from before diffs were stored) has it folded
// from its parts once.
func sessionDiff(ctx context.Context, q store.Tx, sessionID string) (map[string]fileChange, error) {
	out := map[string]fileChange{}
	data, err := q.SessionDiff(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if data != nil {
		var list []fileChange
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("session: stored diff of %s: %w", sessionID, err)
		}
		for _, d := range list {
			out[d.File] = d
		}
		return out, nil
	}
	msgs, parts, err := q.ListMessages(ctx, store.MessageQuery{SessionID: sessionID})
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		wp, err := decodeWithParts(m, parts[m.ID])
		if err != nil {
			return nil, err
		}
		foldDiffs(out, wp.Parts)
	}
	return out, storeDiff(ctx, q, sessionID, out)
}

// addTurnDiff folds a turn's changes into the session's stored diff and returns the result.
func addTurnDiff(ctx context.Context, q store.Tx, sessionID string, turn map[string]fileChange) (map[string]fileChange, error) {
	diff, err := sessionDiff(ctx, q, sessionID)
	if err != nil || len(turn) == 0 {
		return diff, err
	}
	for file, d := range turn {
		if prev, ok := diff[file]; ok {
			d.Before, d.Status = prev.Before, prev.Status
		}
		diff[file] = d
	}
	return diff, storeDiff(ctx, q, sessionID, diff)
}

func storeDiff(ctx context.Context, q store.Sessions, sessionID string, diff map[string]fileChange) error {
	list := make([]fileChange, 0, len(diff))
	for _, d := range diff {
		list = append(list, d)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].File < list[j].File })
	data, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return q.PutSessionDiff(ctx, sessionID, data)
}

// foldDiffs adds the file changes of completed tool parts (their metadata.filediff, or
// metadata.filediffs for a tool that changed several files) to diffs.
func foldDiffs(diffs map[string]fileChange, parts []Part) {
	for _, p := range parts {
		if p.Type != "tool" || p.State == nil || p.State.Status != "completed" {
			continue
		}
		if fd, ok := p.State.Metadata["filediff"].(map[string]any); ok {
			foldDiff(diffs, fd)
		}
		switch list := p.State.Metadata["filediffs"].(type) {
		case []map[string]any: // as the tool returned it
			for _, fd := range list {
				foldDiff(diffs, fd)
			}
		case []any: // as the store gave it back
			for _, item := range list {
				if fd, ok := item.(map[string]any); ok {
					foldDiff(diffs, fd)
				}
			}
		}
	}
}

func foldDiff(diffs map[string]fileChange, fd map[string]any) {
	file, _ := fd["file"].(string)
	before, _ := fd["before"].(string)
	after, _ := fd["after"].(string)
	if file == "" {
		return
	}
	d, seen := diffs[file]
	if !seen {
		d = fileChange{File: file, Before: before, Status: "modified"}
		if before == "" {
			d.Status = "added"
		}
	}
	d.After = after
	if deleted, _ := fd["deleted"].(bool); deleted {
		d.Status = "deleted"
	}
	diffs[file] = d
}

// diffList is the changes as FileDiffs, in file order, their files relative to root.
func diffList(m map[string]fileChange, root string) []FileDiff {
	list := make([]FileDiff, 0, len(m))
	for _, c := range m {
		list = append(list, c.diff(root))
	}
	sort.Slice(list, func(i, j int) bool { return list[i].File < list[j].File })
	return list
}

// Diff is GET /session/{id}/diff: the files the session changed. With messageID, only the changes
// of that user message's turn.
func (h historyEdits) Diff(ctx context.Context, sessionID, messageID string) ([]FileDiff, error) {
	sess, err := h.rows.Get(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if messageID != "" {
		wp, err := h.msgs.Message(ctx, sessionID, messageID)
		if err != nil {
			return nil, err
		}
		if wp.Info.Summary != nil {
			return wp.Info.Summary.Diffs, nil
		}
		return []FileDiff{}, nil
	}
	var diff map[string]fileChange
	err = h.db.Tx(ctx, func(q store.Tx) error {
		var err error
		diff, err = sessionDiff(ctx, q, sessionID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return diffList(diff, Worktree(sess.Directory)), nil
}

// Worktree is the git work tree containing dir, or dir itself outside git.
func Worktree(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}
