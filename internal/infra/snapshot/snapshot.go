// Package snapshot records a project's files at points in time, as OpenCode does: in a shadow git
// repository of its own under tandem's data directory (one per project work tree), driven by the
// git binary with an explicit --git-dir and --work-tree. The project's own .git is never read or
// written; its .gitignore files are honoured. A snapshot is a git tree hash: nothing is committed.
//
// Snapshots are best effort. Without git, or for a work tree that cannot be written (nothing could
// be restored there), or one too large to record within the time limit, every operation is a cheap
// no-op that returns an empty hash, and the reason is logged once.
package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/gitcmd"
)

// DefaultTimeout bounds each git command.
const DefaultTimeout = 30 * time.Second

// DefaultFirstTimeout bounds a project's first snapshot, which writes every file into the shadow
// repository (tens of seconds for a large tree on a slow disk).
const DefaultFirstTimeout = 10 * time.Minute

// DefaultFirstWait is how long Track waits for a project's first snapshot before it returns
// without one, leaving it to finish in the background.
const DefaultFirstWait = 2 * time.Second

// Options configure a Store.
type Options struct {
	// Dir holds the shadow repositories, one subdirectory per work tree (e.g. <data>/snapshot).
	Dir    string
	Logger *slog.Logger
	// Timeout bounds each git command (default DefaultTimeout). A work tree whose snapshot takes
	// longer is not snapshotted again until the server restarts.
	Timeout time.Duration
	// FirstTimeout bounds a work tree's first snapshot (default DefaultFirstTimeout).
	FirstTimeout time.Duration
	// FirstWait is how long Track waits for a work tree's first snapshot (default
	// DefaultFirstWait); a larger project's first snapshot goes on in the background, and the
	// steps that run meanwhile have none.
	FirstWait time.Duration
	// Git is the git binary (default "git", looked up in PATH).
	Git string
	// MaxFiles and MaxBytes bound the project a first snapshot copies (defaults DefaultMaxFiles and
	// DefaultMaxBytes): a larger one (a home directory, say) is not snapshotted at all.
	MaxFiles int
	MaxBytes int64
}

// Keep is how long snapshots are kept, in git's --prune syntax.
const Keep = "7.days.ago"

// ErrGone says a snapshot is no longer kept (older than Keep, pruned).
var ErrGone = errors.New("snapshot: that snapshot is no longer kept (snapshots are kept for 7 days)")

// The default bounds of a snapshotted project, counted without what .gitignore excludes.
const (
	DefaultMaxFiles = 100_000
	DefaultMaxBytes = 2 << 30
)

// Store records and restores snapshots of work trees. A nil *Store takes no snapshots. Close it
// to stop the first snapshots still running in the background.
type Store struct {
	dir          string
	log          *slog.Logger
	timeout      time.Duration
	firstTimeout time.Duration
	firstWait    time.Duration
	git          string // resolved path; empty when git is missing
	maxFiles     int
	maxBytes     int64

	mu     sync.Mutex
	trees  map[string]*tree // per work tree
	off    map[string]bool  // work trees not snapshotted (the reason was logged once)
	closed bool
	stop   []context.CancelFunc // of the first snapshots
	wg     sync.WaitGroup
}

// tree is one work tree's shadow repository: ready once its first snapshot is taken, and locked
// while git runs on it (its index is shared).
type tree struct {
	lock  sync.Mutex
	ready chan struct{}
	last  string // the snapshot the shadow index holds, when known (guarded by lock)
	stamp string // the index file's size and time after the last track: another process's change shows
}

// New makes a Store. A missing git binary is logged once, here, and turns every operation off.
func New(o Options) *Store {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.FirstTimeout <= 0 {
		o.FirstTimeout = DefaultFirstTimeout
	}
	if o.FirstWait <= 0 {
		o.FirstWait = DefaultFirstWait
	}
	if o.Git == "" {
		o.Git = "git"
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	s := &Store{dir: o.Dir, log: o.Logger, timeout: o.Timeout, firstTimeout: o.FirstTimeout, firstWait: o.FirstWait,
		maxFiles: o.MaxFiles, maxBytes: o.MaxBytes, trees: map[string]*tree{}, off: map[string]bool{}}
	if path, err := exec.LookPath(o.Git); err == nil {
		s.git = path
	} else {
		s.log.Warn("snapshots are off: git was not found, so /undo, revert and unrevert cannot restore files", "err", err)
	}
	if s.dir == "" && s.git != "" {
		s.log.Warn("snapshots are off: no data directory for them")
		s.git = ""
	}
	return s
}

// Close stops the first snapshots still running and waits for them.
func (s *Store) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	for _, stop := range s.stop {
		stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Warm starts a work tree's first snapshot in the background, so that the first step of the
// first turn there need not wait for it.
func (s *Store) Warm(ctx context.Context, worktree string) {
	if s == nil || s.git == "" {
		return
	}
	s.tree(ctx, filepath.Clean(worktree))
}

// FileDiff is one file that differs between two snapshots: OpenCode's SnapshotFileDiff.
type FileDiff struct {
	File      string // relative to the work tree, slash-separated
	Patch     string // unified diff
	Additions int
	Deletions int
	Status    string // added, deleted or modified
}

// repo is one work tree's shadow repository, locked for the caller.
type repo struct {
	s        *Store
	t        *tree
	worktree string
	gitDir   string
	git      *gitcmd.Git // opened by the first command
}

func (s *Store) repoOf(worktree string, t *tree) *repo {
	sum := sha256.Sum256([]byte(worktree))
	return &repo{s: s, t: t, worktree: worktree, gitDir: filepath.Join(s.dir, hex.EncodeToString(sum[:12]))}
}

// tree returns a work tree's state, starting its first snapshot when it has none; nil when the
// work tree is not snapshotted.
func (s *Store) tree(ctx context.Context, worktree string) *tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off[worktree] || s.closed {
		return nil
	}
	if t := s.trees[worktree]; t != nil {
		return t
	}
	t := &tree{ready: make(chan struct{})}
	s.trees[worktree] = t
	first, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.firstTimeout)
	s.stop = append(s.stop, cancel)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer close(t.ready)
		t.lock.Lock()
		defer t.lock.Unlock()
		r := s.repoOf(worktree, t)
		_, statErr := os.Stat(filepath.Join(r.gitDir, "HEAD"))
		err := r.init(first)
		if err == nil {
			err = r.checkSize(first)
		}
		if err == nil && statErr == nil {
			// Snapshots are kept for a week, as OpenCode keeps them: older ones are pruned once per
			// server start (the current files, in the index, always stay).
			if _, gcErr := r.runWithin(first, s.firstTimeout, "gc", "--quiet", "--prune="+Keep); gcErr != nil {
				s.log.Warn("snapshot: old snapshots not pruned", "worktree", worktree, "err", gcErr)
			}
		}
		if err == nil {
			_, err = r.trackWithin(first, s.firstTimeout)
		}
		if err != nil {
			s.disable(worktree, err)
		}
	}()
	return t
}

// open returns the work tree's shadow repository with its lock held, once its first snapshot is
// taken; ok is false when the work tree is not snapshotted, or when wait (if positive) passed
// before the first snapshot was taken. The caller calls release.
func (s *Store) open(ctx context.Context, worktree string, wait time.Duration) (r *repo, release func(), ok bool) {
	if s == nil || s.git == "" {
		return nil, nil, false
	}
	worktree = filepath.Clean(worktree)
	t := s.tree(ctx, worktree)
	if t == nil {
		return nil, nil, false
	}
	var timeout <-chan time.Time
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-t.ready:
	case <-timeout:
		s.log.Info("snapshot skipped: the project's first snapshot is still being taken", "worktree", worktree)
		return nil, nil, false
	case <-ctx.Done():
		return nil, nil, false
	}
	t.lock.Lock()
	s.mu.Lock()
	off := s.off[worktree]
	s.mu.Unlock()
	if off {
		t.lock.Unlock()
		return nil, nil, false
	}
	return s.repoOf(worktree, t), t.lock.Unlock, true
}

// disable stops snapshotting a work tree and says why, once.
func (s *Store) disable(worktree string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off[worktree] {
		return
	}
	s.off[worktree] = true
	s.log.Warn("snapshots are off for this project: /undo, revert and unrevert will not restore its files", "worktree", worktree, "err", err)
}

func (r *repo) init(ctx context.Context) error {
	info, err := os.Stat(r.worktree)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", r.worktree)
	}
	if err := writable(r.worktree); err != nil {
		return fmt.Errorf("the project directory is not writable: %w", err)
	}
	if _, err := os.Stat(filepath.Join(r.gitDir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(r.gitDir, 0o700); err != nil {
		return err
	}
	if _, err := r.run(ctx, "init", "--quiet"); err != nil {
		return err
	}
	// The shadow repository must not record tandem's own data when it lives inside the project.
	var exclude strings.Builder
	exclude.WriteString("# written by tandem: what its snapshots never record\n")
	if rel, err := filepath.Rel(r.worktree, filepath.Dir(r.s.dir)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		exclude.WriteString("/" + filepath.ToSlash(rel) + "/\n")
	}
	if err := os.MkdirAll(filepath.Join(r.gitDir, "info"), 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.gitDir, "info", "exclude"), []byte(exclude.String()), 0o600)
}

// checkSize refuses a project larger than the Store's bounds, before its first snapshot copies
// it: what would be recorded is listed (git add --dry-run, which honours .gitignore) and counted.
func (r *repo) checkSize(ctx context.Context) error {
	out, err := r.runWithin(ctx, r.s.firstTimeout, "add", "--all", "--dry-run", "--", ".")
	if err != nil {
		return err
	}
	files := 0
	var bytes int64
	for _, line := range strings.Split(string(out), "\n") {
		// "add 'path'" (git quotes nothing else with core.quotepath off)
		name, ok := strings.CutPrefix(line, "add '")
		if !ok {
			continue
		}
		files++
		if info, err := os.Lstat(filepath.Join(r.worktree, filepath.FromSlash(strings.TrimSuffix(name, "'")))); err == nil {
			bytes += info.Size()
		}
		if files > r.s.maxFiles {
			return fmt.Errorf("the project has more than %d files (without what .gitignore excludes): too large to snapshot", r.s.maxFiles)
		}
		if bytes > r.s.maxBytes {
			return fmt.Errorf("the project holds more than %d MiB (without what .gitignore excludes): too large to snapshot", r.s.maxBytes>>20)
		}
	}
	return nil
}

// run runs git on the shadow repository with the work tree as its work tree, in the work tree,
// as gitcmd runs tandem's own git: no GIT_* variable can point it at the user's repository, and no
// filter driver the work tree's .gitattributes names, hook or fsmonitor runs (what a snapshot
// records and restores are the files' bytes as they are).
func (r *repo) run(ctx context.Context, args ...string) ([]byte, error) {
	return r.runWithin(ctx, r.s.timeout, args...)
}

func (r *repo) runWithin(ctx context.Context, timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := r.output(ctx, args...)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("git %s took longer than %s: %w", args[0], timeout, errTimeout)
	}
	return out, err
}

func (r *repo) output(ctx context.Context, args ...string) ([]byte, error) {
	if r.git == nil {
		g, err := gitcmd.Open(ctx, gitcmd.Repo{Bin: r.s.git, Dir: r.worktree, GitDir: r.gitDir, WorkTree: r.worktree,
			NoSystemConfig: true, Config: []string{"core.autocrlf=false", "advice.addEmbeddedRepo=false"}})
		if err != nil {
			return nil, err
		}
		r.git = g
	}
	return r.git.Output(ctx, args...)
}

var errTimeout = errors.New("timed out")

// fail turns an error of a git command into the caller's: a timeout turns the work tree off.
func (r *repo) fail(err error) error {
	if errors.Is(err, errTimeout) {
		_ = os.Remove(filepath.Join(r.gitDir, "index.lock"))
		r.s.disable(r.worktree, err)
	}
	return err
}

// Track records the work tree's current files and returns the snapshot's hash, or "" when the
// work tree is not snapshotted (or its first snapshot is still being taken, after FirstWait).
func (s *Store) Track(ctx context.Context, worktree string) (string, error) {
	r, release, ok := s.open(ctx, worktree, s.firstWaitOf())
	if !ok {
		return "", nil
	}
	defer release()
	return r.track(ctx)
}

func (r *repo) track(ctx context.Context) (string, error) {
	return r.trackWithin(ctx, r.s.timeout)
}

func (r *repo) trackWithin(ctx context.Context, timeout time.Duration) (string, error) {
	// --verbose names every file added or removed: when it names none, the index still holds the
	// last snapshot and writing the tree again is skipped.
	if r.indexStamp() != r.t.stamp {
		r.t.last = "" // another process (a second tandem on this data directory) changed the index
	}
	added, err := r.runWithin(ctx, timeout, "add", "--all", "--verbose", "--", ".")
	if err != nil {
		r.t.last = ""
		return "", r.fail(err)
	}
	if len(bytes.TrimSpace(added)) == 0 && r.t.last != "" {
		r.t.stamp = r.indexStamp()
		return r.t.last, nil
	}
	if nested := r.nestedRepos(added); len(nested) > 0 {
		// A repository inside the work tree is added as a gitlink: its files cannot be restored
		// from a snapshot anyway, and once one is in the index, the next add starts git status
		// inside it, under that repository's own configuration (filter drivers gitcmd never read).
		// It is taken out of the index before the tree is written.
		if _, err := r.runWithin(ctx, timeout, append([]string{"update-index", "--force-remove", "--"}, nested...)...); err != nil {
			r.t.last = ""
			return "", r.fail(err)
		}
	}
	out, err := r.run(ctx, "write-tree")
	if err != nil {
		r.t.last = ""
		return "", r.fail(err)
	}
	r.t.last, r.t.stamp = strings.TrimSpace(string(out)), r.indexStamp()
	return r.t.last, nil
}

// nestedRepos are the paths git add --verbose added that are directories: repositories of their
// own inside the work tree, which git adds as gitlinks (and names with a trailing slash).
func (r *repo) nestedRepos(added []byte) []string {
	var out []string
	for _, line := range strings.Split(string(added), "\n") {
		// "add 'path'" (git quotes nothing else with core.quotepath off)
		name, ok := strings.CutPrefix(line, "add '")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, "'"), "/") // "add 'sub/'" for a repository
		if info, err := os.Lstat(filepath.Join(r.worktree, filepath.FromSlash(name))); err == nil && info.IsDir() {
			out = append(out, name)
		}
	}
	return out
}

func (r *repo) indexStamp() string {
	info, err := os.Stat(filepath.Join(r.gitDir, "index"))
	if err != nil {
		return ""
	}
	return fmt.Sprint(info.Size(), info.ModTime().UnixNano())
}

// Changed lists the files (absolute paths) that differ between two snapshots.
func (s *Store) Changed(ctx context.Context, worktree, from, to string) ([]string, error) {
	if from == "" || to == "" || from == to {
		return nil, nil
	}
	if err := checkHashes(from, to); err != nil {
		return nil, err
	}
	r, release, ok := s.open(ctx, worktree, 0)
	if !ok {
		return nil, nil
	}
	defer release()
	out, err := r.run(ctx, "diff-tree", "-r", "-z", "--no-renames", "--name-only", from, to)
	if err != nil {
		return nil, r.fail(err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, filepath.Join(r.worktree, filepath.FromSlash(f)))
		}
	}
	return files, nil
}

// Restore makes the work tree's files what they were in the snapshot: every file the snapshot
// holds is written back. Files created since are left alone, as OpenCode's restore does.
func (s *Store) Restore(ctx context.Context, worktree, hash string) error {
	if hash == "" {
		return nil
	}
	if err := checkHashes(hash); err != nil {
		return err
	}
	r, release, ok := s.open(ctx, worktree, 0)
	if !ok {
		return nil
	}
	defer release()
	if err := r.exist(ctx, hash); err != nil {
		return err
	}
	r.t.last = "" // the index changes below
	if _, err := r.run(ctx, "read-tree", hash); err != nil {
		return r.fail(err)
	}
	if _, err := r.run(ctx, "checkout-index", "--all", "--force"); err != nil {
		return r.fail(err)
	}
	return nil
}

// Revert puts the given files (absolute paths inside the work tree) back to what they were in the
// snapshot: a file the snapshot does not hold is deleted.
func (s *Store) Revert(ctx context.Context, worktree, hash string, files []string) error {
	if hash == "" || len(files) == 0 {
		return nil
	}
	if err := checkHashes(hash); err != nil {
		return err
	}
	r, release, ok := s.open(ctx, worktree, 0)
	if !ok {
		return nil
	}
	defer release()
	if err := r.exist(ctx, hash); err != nil {
		return err
	}
	r.t.last = "" // the index changes below
	// Files are removed through an os.Root: a symbolic link swapped in never leads out of the work tree.
	root, err := os.OpenRoot(r.worktree)
	if err != nil {
		return err
	}
	defer root.Close()
	// Every file is checked before any is touched, so a refused revert changes nothing.
	for _, file := range files {
		rel, err := filepath.Rel(r.worktree, file)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("snapshot: %s is outside %s", file, r.worktree)
		}
		if slices.Contains(strings.Split(rel, string(filepath.Separator)), ".git") {
			return fmt.Errorf("snapshot: %s is inside a .git directory, which snapshots never hold", file)
		}
		if link, target, out := linkedOut(r.worktree, rel); out {
			return linkError(rel, link, target)
		}
	}
	for _, file := range files {
		rel, _ := filepath.Rel(r.worktree, file)
		out, err := r.run(ctx, "ls-tree", "-z", "--name-only", hash, "--", filepath.ToSlash(rel))
		if err != nil {
			return r.fail(err)
		}
		if len(out) == 0 {
			if err := root.Remove(rel); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		rel = filepath.ToSlash(rel)
		if _, err := r.run(ctx, "checkout", hash, "--", rel); err != nil {
			return r.fail(err)
		}
	}
	return nil
}

// CheckRevert refuses, before anything is reverted, files (absolute paths inside worktree) that lie
// behind a symbolic link leading out of worktree (ErrLinkOutside); Revert checks them again.
func CheckRevert(worktree string, files []string) error {
	for _, file := range files {
		rel, err := filepath.Rel(worktree, file)
		if err != nil {
			continue // Revert refuses it
		}
		if link, target, out := linkedOut(worktree, rel); out {
			return linkError(rel, link, target)
		}
	}
	return nil
}

func linkError(rel, link, target string) error {
	return fmt.Errorf("%w: %s cannot be put back, because %s is now a symbolic link to %s; replace the link with the "+
		"directory it stands for (or remove it) and revert again", ErrLinkOutside, rel, link, target)
}

// ErrLinkOutside refuses a revert whose file lies behind a symbolic link (swapped in after the step
// wrote it) that leads out of the work tree: nothing is written through it, and nothing is reverted.
var ErrLinkOutside = errors.New("a symbolic link leads out of the project")

// linkedOut finds the first directory on rel's way (inside worktree) that is a symbolic link to a
// place outside worktree, and where it leads.
func linkedOut(worktree, rel string) (link, target string, out bool) {
	dir := ""
	for _, name := range strings.Split(filepath.Dir(rel), string(filepath.Separator)) {
		if name == "." {
			break
		}
		dir = filepath.Join(dir, name)
		abs := filepath.Join(worktree, dir)
		info, err := os.Lstat(abs)
		if err != nil {
			return "", "", false // missing: the revert creates it inside the work tree
		}
		if info.Mode()&os.ModeSymlink == 0 {
			continue
		}
		resolved, err := filepath.EvalSymlinks(abs)
		if err != nil {
			dest, _ := os.Readlink(abs)
			return dir, dest, true // a dangling link: where it leads cannot be checked
		}
		realRoot, err := filepath.EvalSymlinks(worktree)
		if err != nil {
			realRoot = worktree
		}
		if r, err := filepath.Rel(realRoot, resolved); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return dir, resolved, true
		}
	}
	return "", "", false
}

// Patch is the unified diff between two snapshots, as one text.
func (s *Store) Patch(ctx context.Context, worktree, from, to string) (string, error) {
	if from == "" || to == "" || from == to {
		return "", nil
	}
	if err := checkHashes(from, to); err != nil {
		return "", err
	}
	r, release, ok := s.open(ctx, worktree, 0)
	if !ok {
		return "", nil
	}
	defer release()
	out, err := r.run(ctx, "diff-tree", "-r", "-p", "--no-renames", "--no-color", from, to)
	if err != nil {
		return "", r.fail(err)
	}
	return string(out), nil
}

// Diff lists the files that differ between two snapshots, in path order.
func (s *Store) Diff(ctx context.Context, worktree, from, to string) ([]FileDiff, error) {
	if from == "" || to == "" || from == to {
		return []FileDiff{}, nil
	}
	if err := checkHashes(from, to); err != nil {
		return nil, err
	}
	r, release, ok := s.open(ctx, worktree, 0)
	if !ok {
		return []FileDiff{}, nil
	}
	defer release()
	status, err := r.run(ctx, "diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to)
	if err != nil {
		return nil, r.fail(err)
	}
	numstat, err := r.run(ctx, "diff-tree", "-r", "-z", "--no-renames", "--numstat", from, to)
	if err != nil {
		return nil, r.fail(err)
	}
	patch, err := r.run(ctx, "diff-tree", "-r", "-p", "--no-renames", "--no-color", from, to)
	if err != nil {
		return nil, r.fail(err)
	}
	// --name-status -z: "M\0path\0"; --numstat -z: "add\tdel\tpath\0" ("-" for binary files).
	var out []FileDiff
	fields := strings.Split(string(status), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		d := FileDiff{File: fields[i+1], Status: "modified"}
		switch fields[i] {
		case "A":
			d.Status = "added"
		case "D":
			d.Status = "deleted"
		}
		out = append(out, d)
	}
	for i, line := range strings.Split(string(numstat), "\x00") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || i >= len(out) {
			continue
		}
		out[i].Additions, _ = strconv.Atoi(parts[0])
		out[i].Deletions, _ = strconv.Atoi(parts[1])
	}
	// The patch lists the same files in the same order, each starting with "diff --git ".
	chunks := splitPatch(string(patch))
	for i := range out {
		if i < len(chunks) {
			out[i].Patch = chunks[i]
		}
	}
	return out, nil
}

func splitPatch(p string) []string {
	var chunks []string
	start := -1
	for i := 0; i < len(p); {
		if strings.HasPrefix(p[i:], "diff --git ") {
			if start >= 0 {
				chunks = append(chunks, p[start:i])
			}
			start = i
		}
		nl := strings.IndexByte(p[i:], '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
	}
	if start >= 0 {
		chunks = append(chunks, p[start:])
	}
	return chunks
}

func (s *Store) firstWaitOf() time.Duration {
	if s == nil {
		return 0
	}
	return s.firstWait
}

// checkHashes refuses what is not a git object name, so that nothing a client stored can pass
// for an option of git.
func checkHashes(hashes ...string) error {
	for _, h := range hashes {
		if (len(h) != 40 && len(h) != 64) || strings.Trim(h, "0123456789abcdef") != "" {
			return fmt.Errorf("snapshot: %q is not a snapshot hash", h)
		}
	}
	return nil
}

// exist checks that the shadow repository still holds the snapshots.
func (r *repo) exist(ctx context.Context, hashes ...string) error {
	for _, h := range hashes {
		if _, err := r.run(ctx, "cat-file", "-e", h+"^{tree}"); err != nil {
			if errors.Is(err, errTimeout) {
				return r.fail(err)
			}
			return ErrGone
		}
	}
	return nil
}
