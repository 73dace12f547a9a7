package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"

	"tandem/tool"
)

// sessionDiff is the session's changes, one diff per file: the content before the first change
// and after the last one. It is stored and kept current by each turn; a session without a stored
// diff (a fork, or one from before diffs were stored) has it folded from its parts once.
func (s *Service) sessionDiff(ctx context.Context, sessionID string) map[string]FileDiff {
	out := map[string]FileDiff{}
	if data, err := s.db.SessionDiff(ctx, sessionID); err == nil && data != nil {
		var list []FileDiff
		if json.Unmarshal(data, &list) == nil {
			for _, d := range list {
				out[d.File] = d
			}
			return out
		}
	}
	page, err := s.messages(ctx, sessionID, MessagesInput{})
	if err != nil {
		return out
	}
	for _, wp := range page.Items {
		foldDiffs(out, wp.Parts)
	}
	out = withStats(out)
	s.storeDiff(ctx, sessionID, out)
	return out
}

// addTurnDiff folds a turn's changes into the session's stored diff and returns the result.
func (s *Service) addTurnDiff(ctx context.Context, sessionID string, turn map[string]FileDiff) map[string]FileDiff {
	diff := s.sessionDiff(ctx, sessionID)
	if len(turn) == 0 {
		return diff
	}
	for file, d := range turn {
		if prev, ok := diff[file]; ok {
			d.Before, d.Status = prev.Before, prev.Status
		}
		diff[file] = d
	}
	diff = withStats(diff)
	s.storeDiff(ctx, sessionID, diff)
	return diff
}

func (s *Service) storeDiff(ctx context.Context, sessionID string, diff map[string]FileDiff) {
	data, err := json.Marshal(diffList(diff))
	if err == nil {
		err = s.db.PutSessionDiff(ctx, sessionID, data)
	}
	if err != nil {
		s.log.Warn("store session diff", "session", sessionID, "err", err)
	}
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
