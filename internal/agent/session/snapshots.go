package session

import (
	"context"
	"log/slog"

	"github.com/tandem-dev/tandem/internal/infra/snapshot"
)

// snapshots records the project's files at the steps of a turn, for revert and unrevert, and lists
// what a step changed. Without a store (Options.Snapshots nil) it records nothing.
type snapshots struct {
	store *snapshot.Store
	log   *slog.Logger
}

// track records the project's files and returns the snapshot, or "" without snapshots. A failure
// is logged: a turn never fails because its snapshot could not be taken.
func (sn snapshots) track(ctx context.Context, dir string) string {
	if sn.store == nil {
		return ""
	}
	h, err := sn.store.Track(ctx, Worktree(dir))
	if err != nil {
		sn.log.Warn("snapshot not taken", "dir", dir, "err", err)
		return ""
	}
	return h
}

// mayChangeFiles says whether a tool may change the project's files: every tool but the built-in
// ones that only read (a step that calls only those, or none, takes no snapshot).
func mayChangeFiles(toolName string) bool {
	switch toolName {
	case "read", "list", "glob", "grep", "todoread", "todowrite", "question", "webfetch":
		return false
	}
	return true
}

// changed lists the files that differ between two snapshots.
func (sn snapshots) changed(ctx context.Context, dir, from, to string) []string {
	if sn.store == nil || from == "" || to == "" || from == to {
		return nil
	}
	files, err := sn.store.Changed(ctx, Worktree(dir), from, to)
	if err != nil {
		sn.log.Warn("snapshot: changed files not listed", "dir", dir, "err", err)
		return nil
	}
	return files
}
