package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fileOp is one file of a change that touches several (a patch) or edits one several times
// (multiedit): what it held when the change was computed, and what it will hold.
type fileOp struct {
	kind    string // "add", "update", "delete" or "move" (an update that also renames)
	t       target
	to      target // a move's destination
	before  string
	after   string
	existed bool
	diff    fileDiff
	client  bool // written through the client (an editor's buffer), not the disk
}

// path is where the file's content ends up: the destination of a move, else the file itself.
func (op *fileOp) path() target {
	if op.kind == "move" {
		return op.to
	}
	return op.t
}

// changeSet is the files one call changes, asked for in one request and written all or nothing.
type changeSet struct {
	ops   []*fileOp
	needs []Need // external_directory for each directory outside the project the change touches
}

// place resolves p against the call's directory without asking anything: a file outside the
// project comes back with the external_directory Need its parent directory is asked for.
func place(call *Call, p string) (target, *Need, error) {
	if call.Dir == "" || !filepath.IsAbs(call.Dir) {
		return target{}, nil, invalid("the session has no absolute working directory (got %q)", call.Dir)
	}
	if strings.TrimSpace(p) == "" {
		return target{}, nil, invalid("a file path is empty")
	}
	dir := filepath.Clean(call.Dir)
	abs := absPath(dir, p)
	t := target{Abs: abs, Real: evalExisting(abs), Rel: relSlash(dir, abs)}
	if within(evalExisting(dir), t.Real) {
		return t, nil, nil
	}
	pattern := filepath.ToSlash(filepath.Join(filepath.Dir(t.Real), "*"))
	return t, &Need{Permission: "external_directory", Pattern: pattern}, nil
}

// add places a file the change touches, reading what it holds now (through the client when one
// serves files). A directory is refused.
func (cs *changeSet) read(ctx context.Context, call *Call, p string) (t target, content string, existed bool, err error) {
	t, need, err := place(call, p)
	if err != nil {
		return target{}, "", false, err
	}
	if need != nil && !slices.Contains(cs.needs, *need) {
		cs.needs = append(cs.needs, *need)
	}
	if info, err := os.Stat(t.Abs); err == nil && info.IsDir() {
		return target{}, "", false, invalid("%s is a directory, not a file.", t.Abs)
	}
	content, existed, err = currentText(ctx, call, t)
	return t, content, existed, err
}

// currentText is a file's content as the change sees it: the client's view (an unsaved buffer)
// when a client serves files, else the disk's.
func currentText(ctx context.Context, call *Call, t target) (string, bool, error) {
	content, existed, err := readExisting(t.Abs)
	if err != nil || !existed || call.Files == nil {
		return content, existed, err
	}
	text, ok, err := call.Files.ReadText(ctx, t.Abs)
	if err != nil {
		return "", false, fmt.Errorf("reading %s through the client: %w", t.Abs, err)
	}
	if ok {
		content = text
	}
	return content, existed, nil
}

// commit shows the whole change in one edit request (every file's diff) and, once it is allowed,
// writes every file or none. Paths and contents are checked again after the wait: a file that
// changed, or a path that now leads elsewhere, refuses the whole change.
func (cs *changeSet) commit(ctx context.Context, call *Call) error {
	var patterns, unjudged []string
	var combined strings.Builder
	files := make([]map[string]any, 0, len(cs.ops))
	for _, op := range cs.ops {
		op.diff = diffFiles(op.path().Abs, op.before, op.after)
		combined.WriteString(op.diff.Patch)
		files = append(files, op.metadata())
		for _, t := range op.targets() {
			if !slices.Contains(patterns, t.Rel) {
				patterns = append(patterns, t.Rel)
			}
			if reason := configFile(t.Real); reason != "" {
				unjudged = append(unjudged, reason)
			}
		}
	}
	ask := Ask{
		Permission: "edit",
		Patterns:   patterns,
		Always:     slices.Clone(patterns),
		Metadata:   map[string]any{"filepath": strings.Join(patterns, ", "), "diff": combined.String(), "files": files},
		With:       cs.needs,
	}
	if len(unjudged) > 0 {
		// Configuration is asked about every time: no "always" is offered or honoured.
		ask.Always, ask.Unjudged = nil, unjudged
		ask.Metadata["unjudged"] = unjudged
	}
	if err := call.Gate.Check(ctx, ask); err != nil {
		return err
	}
	for _, op := range cs.ops {
		if err := op.unchanged(ctx, call); err != nil {
			return err
		}
	}
	return cs.apply(ctx, call)
}

// targets are the paths an operation touches.
func (op *fileOp) targets() []target {
	if op.kind == "move" {
		return []target{op.t, op.to}
	}
	return []target{op.t}
}

// unchanged checks, after the wait for approval, that what the person saw is still what would
// happen: each path leads where it led, each file holds what the diff was made from, and a file
// to add or a move's destination still does not exist.
func (op *fileOp) unchanged(ctx context.Context, call *Call) error {
	for _, t := range op.targets() {
		if now := evalExisting(t.Abs); now != t.Real {
			return invalid("Refused to change %s: it changed while waiting for approval (it now leads to %s, not %s). No file was changed.", t.Abs, now, t.Real)
		}
	}
	content, existed, err := currentText(ctx, call, op.t)
	if err != nil {
		return err
	}
	if existed != op.existed || content != op.before {
		return invalid("Refused to change %s: the file changed while waiting for approval. No file was changed; read it again and make the change anew.", op.t.Abs)
	}
	if op.kind == "move" {
		if _, err := os.Lstat(op.to.Abs); !errors.Is(err, fs.ErrNotExist) {
			return invalid("Refused to move %s to %s: the destination appeared while waiting for approval. No file was changed.", op.t.Abs, op.to.Abs)
		}
	}
	return nil
}

// apply writes the change. Every new content is first written beside its file, then all are
// renamed into place, and only then are files removed: a failure before the renames changes
// nothing, and one after them puts back what was changed already. A file a client serves (an
// editor's buffer) is written through the client instead.
func (cs *changeSet) apply(ctx context.Context, call *Call) error {
	var writes []*staged
	var stagedOps, done []*fileOp
	defer func() {
		for _, s := range writes {
			s.discard()
		}
	}()
	var viaClient []*fileOp
	for _, op := range cs.ops {
		switch op.kind {
		case "delete":
			continue
		case "add", "update":
			if call.Files != nil {
				viaClient = append(viaClient, op)
				continue
			}
		}
		rootDir, rel := rootFor(call, op.path())
		s, err := stage(rootDir, rel, op.after)
		if err != nil {
			return fmt.Errorf("writing %s: %w; no file was changed", op.path().Abs, err)
		}
		writes, stagedOps = append(writes, s), append(stagedOps, op)
	}
	for _, op := range viaClient {
		ok, err := call.Files.WriteText(ctx, op.t.Abs, op.after)
		if err != nil {
			return cs.undo(ctx, call, done, fmt.Errorf("writing %s through the client: %w", op.t.Abs, err))
		}
		if !ok {
			// The client takes no part: the disk gets it, with the others.
			rootDir, rel := rootFor(call, op.t)
			s, err := stage(rootDir, rel, op.after)
			if err != nil {
				return cs.undo(ctx, call, done, fmt.Errorf("writing %s: %w", op.t.Abs, err))
			}
			writes, stagedOps = append(writes, s), append(stagedOps, op)
			continue
		}
		op.client = true
		done = append(done, op)
	}
	for i, s := range writes {
		if err := s.commit(); err != nil {
			return cs.undo(ctx, call, done, fmt.Errorf("writing %s: %w", stagedOps[i].path().Abs, err))
		}
		done = append(done, stagedOps[i])
	}
	for _, op := range cs.ops {
		if op.kind != "delete" && op.kind != "move" {
			continue
		}
		rootDir, rel := rootFor(call, op.t)
		if err := removeUnder(rootDir, rel); err != nil {
			return cs.undo(ctx, call, done, fmt.Errorf("removing %s: %w", op.t.Abs, err))
		}
		if op.kind == "delete" {
			done = append(done, op)
		}
	}
	return nil
}

// undo puts back the files an interrupted apply had changed, and returns cause with what could not
// be put back.
func (cs *changeSet) undo(ctx context.Context, call *Call, done []*fileOp, cause error) error {
	var failed []string
	for _, op := range slices.Backward(done) {
		var err error
		switch {
		case op.client:
			_, err = call.Files.WriteText(ctx, op.t.Abs, op.before)
		case op.kind == "add" || op.kind == "move":
			rootDir, rel := rootFor(call, op.path())
			err = removeUnder(rootDir, rel)
			if err == nil && op.kind == "move" {
				rootDir, rel = rootFor(call, op.t)
				err = writeAtomicUnder(rootDir, rel, op.before)
			}
		default:
			rootDir, rel := rootFor(call, op.t)
			err = writeAtomicUnder(rootDir, rel, op.before)
		}
		if err != nil {
			failed = append(failed, op.path().Abs)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w; these files could not be put back and hold the new content: %s", cause, strings.Join(failed, ", "))
	}
	return fmt.Errorf("%w; the files changed before it were put back, so no file was changed", cause)
}

// rootFor is the directory a write to t is confined to, and t's path inside it: the project when
// the file is in it, else the file's own directory. The write goes to the symlink-resolved path,
// so that a symlink stays a symlink.
func rootFor(call *Call, t target) (rootDir, rel string) {
	rootDir, rel = filepath.Dir(t.Real), filepath.Base(t.Real)
	if projectDir := evalExisting(filepath.Clean(call.Dir)); within(projectDir, t.Real) {
		rootDir, rel = projectDir, filepath.FromSlash(relSlash(projectDir, t.Real))
	}
	return rootDir, rel
}

// removeUnder removes rel inside rootDir through an os.Root, so a symlink swapped in meanwhile
// cannot lead the removal out of it. A file already gone is no error.
func removeUnder(rootDir, rel string) error {
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// metadata is the entry of one file in a change's "files" metadata, in the shape OpenCode's
// apply_patch reports and its terminal UI renders (type, filePath, relativePath, patch,
// additions, deletions, movePath).
func (op *fileOp) metadata() map[string]any {
	m := map[string]any{
		"type":         op.kind,
		"filePath":     op.t.Abs,
		"relativePath": op.path().Rel,
		"patch":        op.diff.Patch,
		"diff":         op.diff.Patch,
		"before":       op.before,
		"after":        op.after,
		"additions":    op.diff.Additions,
		"deletions":    op.diff.Deletions,
	}
	if op.kind == "move" {
		m["movePath"] = op.to.Abs
	}
	return m
}

// changes are the files the change wrote, for the session's diff.
func (cs *changeSet) changes() []FileChange {
	var out []FileChange
	for _, op := range cs.ops {
		switch op.kind {
		case "move":
			out = append(out,
				FileChange{Path: op.t.Abs, Before: op.before, After: "", Existed: true},
				FileChange{Path: op.to.Abs, Before: "", After: op.after, Existed: false})
		default:
			out = append(out, FileChange{Path: op.t.Abs, Before: op.before, After: op.after, Existed: op.existed})
		}
	}
	return out
}

// fileDiffs are the filediff entries of every file, which the session folds into its diff; a file
// removed (deleted, or the source of a move) says so.
func (cs *changeSet) fileDiffs() []map[string]any {
	var out []map[string]any
	for _, op := range cs.ops {
		switch op.kind {
		case "delete":
			m := op.diff.metadata(op.t.Abs, op.before, "")
			m["deleted"] = true
			out = append(out, m)
			continue
		case "move":
			m := diffFiles(op.t.Abs, op.before, "").metadata(op.t.Abs, op.before, "")
			m["deleted"] = true
			out = append(out, m, diffFiles(op.to.Abs, "", op.after).metadata(op.to.Abs, "", op.after))
			continue
		}
		out = append(out, op.diff.metadata(op.path().Abs, op.before, op.after))
	}
	return out
}
