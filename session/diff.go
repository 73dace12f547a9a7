package session

import (
	"context"
	"os"
	"path/filepath"
	"sort"

	"tandem/tool"
)

// sessionDiff folds the file changes recorded by a session's completed tool calls into one diff
// per file: the content before the first change and after the last one.
func (s *Service) sessionDiff(ctx context.Context, sessionID string) map[string]FileDiff {
	out := map[string]FileDiff{}
	page, err := s.Messages(ctx, sessionID, MessagesInput{})
	if err != nil {
		return out
	}
	for _, wp := range page.Items {
		foldDiffs(out, wp.Parts)
	}
	return withStats(out)
}

// foldDiffs adds the file changes of completed tool parts (their metadata.filediff) to diffs.
func foldDiffs(diffs map[string]FileDiff, parts []Part) {
	for _, p := range parts {
		if p.Type != "tool" || p.State == nil || p.State.Status != "completed" {
			continue
		}
		fd, ok := p.State.Metadata["filediff"].(map[string]any)
		if !ok {
			continue
		}
		file, _ := fd["file"].(string)
		before, _ := fd["before"].(string)
		after, _ := fd["after"].(string)
		if file == "" {
			continue
		}
		d, seen := diffs[file]
		if !seen {
			d = FileDiff{File: file, Before: before, Status: "modified"}
			if before == "" {
				d.Status = "added"
			}
		}
		d.After = after
		diffs[file] = d
	}
}

// withStats fills in the line counts of each folded diff.
func withStats(diffs map[string]FileDiff) map[string]FileDiff {
	for file, d := range diffs {
		d.Additions, d.Deletions = tool.DiffStat(d.Before, d.After)
		diffs[file] = d
	}
	return diffs
}

func diffList(m map[string]FileDiff) []FileDiff {
	list := make([]FileDiff, 0, len(m))
	for _, d := range m {
		list = append(list, d)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].File < list[j].File })
	return list
}

// Diff is GET /session/{id}/diff: the files the session changed. With messageID, only the changes
// of that user message's turn.
func (s *Service) Diff(ctx context.Context, sessionID, messageID string) ([]FileDiff, error) {
	if _, err := s.Get(ctx, sessionID); err != nil {
		return nil, err
	}
	if messageID != "" {
		wp, err := s.Message(ctx, sessionID, messageID)
		if err != nil {
			return nil, err
		}
		if wp.Info.Summary != nil {
			return wp.Info.Summary.Diffs, nil
		}
		return []FileDiff{}, nil
	}
	return diffList(s.sessionDiff(ctx, sessionID)), nil
}

// worktreeOf is the git work tree containing dir, or dir itself.
func worktreeOf(dir string) string {
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
