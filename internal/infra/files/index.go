package files

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/fnv"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/gitcmd"
)

// Listing is every file and directory of a project directory that .gitignore leaves in.
type Listing struct {
	Dir   string   // the absolute directory listed
	Files []string // slash-separated paths relative to Dir, sorted
	Dirs  []string // directories, each with a trailing "/", sorted
	Git   bool     // read from git (tracked and untracked-but-not-ignored files) rather than a walk
	// Truncated says the tree held more than the index keeps (Index.MaxFiles).
	Truncated bool

	folded []string // Files then Dirs, ASCII lower-cased, for matching
}

// Index keeps one Listing per directory and rebuilds it only when the tree changed. The check is
// cheap: the modification times of the directories listed (a file created, removed or renamed
// changes its directory's), of the ignore files, and of git's index (files staged or committed).
// Content changes do not matter to a list of names.
type Index struct {
	// Recheck is how long a listing is trusted before the check runs again; a burst of keystrokes
	// is answered from memory. Zero checks on every call.
	Recheck time.Duration
	// MaxFiles bounds a listing, so a huge tree (a home directory) cannot exhaust memory.
	MaxFiles int
	// MaxDirs bounds how many directories are kept; the least recently used is dropped.
	MaxDirs int
	// MaxWalk bounds the time a walk (outside git) may take; what it found by then is the listing.
	MaxWalk time.Duration

	mu   sync.Mutex
	dirs map[string]*indexEntry
}

type indexEntry struct {
	mu      sync.Mutex // held while the listing is built or checked
	listing *Listing
	watched []string // absolute paths whose modification times make up stamp
	stamp   uint64
	checked time.Time
	used    time.Time
}

// NewIndex returns an index with the default bounds: one second of trust, 500,000 files, 16
// directories, 10 seconds of walking.
func NewIndex() *Index {
	return &Index{Recheck: time.Second, MaxFiles: 500_000, MaxDirs: 16, MaxWalk: 10 * time.Second}
}

// Listing returns dir's listing, building it on first use and rebuilding it when the tree changed.
func (ix *Index) Listing(ctx context.Context, dir string) (*Listing, error) {
	dir = filepath.Clean(dir)
	now := time.Now()
	ix.mu.Lock()
	if ix.dirs == nil {
		ix.dirs = map[string]*indexEntry{}
	}
	e := ix.dirs[dir]
	if e == nil {
		e = &indexEntry{}
		ix.dirs[dir] = e
		ix.evictLocked(dir)
	}
	e.used = now
	ix.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.listing != nil && now.Sub(e.checked) < ix.Recheck {
		return e.listing, nil
	}
	if e.listing != nil && stampOf(e.watched) == e.stamp {
		e.checked = now
		return e.listing, nil
	}
	l, err := ix.build(ctx, dir)
	if err != nil {
		return nil, err
	}
	e.listing, e.watched = l, watchList(l)
	e.stamp, e.checked = stampOf(e.watched), time.Now()
	return l, nil
}

// Invalidate drops dir's listing; the next call rebuilds it.
func (ix *Index) Invalidate(dir string) {
	ix.mu.Lock()
	delete(ix.dirs, filepath.Clean(dir))
	ix.mu.Unlock()
}

func (ix *Index) evictLocked(keep string) {
	max := ix.MaxDirs
	if max <= 0 {
		max = 16
	}
	for len(ix.dirs) > max {
		oldest, at := "", time.Time{}
		for d, e := range ix.dirs {
			if d != keep && (oldest == "" || e.used.Before(at)) {
				oldest, at = d, e.used
			}
		}
		delete(ix.dirs, oldest)
	}
}

func (ix *Index) build(ctx context.Context, dir string) (*Listing, error) {
	max := ix.MaxFiles
	if max <= 0 {
		max = 500_000
	}
	l := &Listing{Dir: dir}
	if filepath.Dir(dir) == dir {
		return finish(l), nil // never index a file system's root
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, &fs.PathError{Op: "index", Path: dir, Err: fs.ErrNotExist}
	}
	if files, dirs, ok := gitFiles(ctx, dir); ok {
		l.Git = true
		if len(files) > max {
			files, l.Truncated = files[:max], true
		}
		l.Files, l.Dirs = files, dirs
		return finish(l), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	started, seen := time.Now(), 0
	err := Walk(ctx, dir, func(rel string, d fs.DirEntry) error {
		if seen++; seen%1024 == 0 && ix.MaxWalk > 0 && time.Since(started) > ix.MaxWalk {
			l.Truncated = true
			return fs.SkipAll
		}
		if d.IsDir() {
			l.Dirs = append(l.Dirs, rel+"/")
			return nil
		}
		if len(l.Files) == max {
			l.Truncated = true
			return fs.SkipAll
		}
		l.Files = append(l.Files, rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return finish(l), nil
}

// finish sorts the listing, adds every directory that holds a listed entry and folds the names.
func finish(l *Listing) *Listing {
	slices.Sort(l.Files)
	seen := make(map[string]bool, len(l.Dirs))
	for _, d := range l.Dirs {
		seen[d] = true
	}
	parents := append(append([]string{}, l.Files...), l.Dirs...)
	for _, f := range parents {
		for d := path.Dir(strings.TrimSuffix(f, "/")); d != "." && d != "/"; d = path.Dir(d) {
			if seen[d+"/"] {
				break
			}
			seen[d+"/"] = true
			l.Dirs = append(l.Dirs, d+"/")
		}
	}
	slices.Sort(l.Dirs)
	l.folded = make([]string, 0, len(l.Files)+len(l.Dirs))
	for _, s := range l.Files {
		l.folded = append(l.folded, foldASCII(s))
	}
	for _, s := range l.Dirs {
		l.folded = append(l.folded, foldASCII(s))
	}
	return l
}

// gitFiles lists dir through git: tracked files still present, and untracked files no ignore rule
// (.gitignore, info/exclude, core.excludesFile) excludes. A repository of its own inside the work
// tree is listed by git as one directory ("nested/"); it comes back among dirs. ok is false outside a
// git work tree or without git.
func gitFiles(ctx context.Context, dir string) (files, dirs []string, ok bool) {
	repo, ok := GitRepo(dir)
	if !ok {
		return nil, nil, false
	}
	g, err := gitcmd.Open(ctx, repo)
	if err != nil {
		return nil, nil, false
	}
	out, err := g.Output(ctx, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, nil, false
	}
	deleted := map[string]bool{}
	if gone, err := g.Output(ctx, "ls-files", "-z", "--deleted"); err == nil {
		for _, p := range splitZ(gone) {
			deleted[p] = true
		}
	}
	all := splitZ(out)
	files = make([]string, 0, len(all))
	seen := make(map[string]bool, len(all))
	for _, p := range all {
		if deleted[p] || seen[p] { // a file both staged and unmerged is listed once per stage
			continue
		}
		seen[p] = true
		if strings.HasSuffix(p, "/") {
			dirs = append(dirs, p)
			continue
		}
		files = append(files, p)
	}
	return files, dirs, true
}

func splitZ(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			out = append(out, string(b))
			break
		}
		if i > 0 {
			out = append(out, string(b[:i]))
		}
		b = b[i+1:]
	}
	return out
}

// watchList is what the change check looks at: the directory, every listed directory, the ignore
// files, and git's index.
func watchList(l *Listing) []string {
	w := make([]string, 0, len(l.Dirs)+4)
	w = append(w, l.Dir)
	for _, d := range l.Dirs {
		w = append(w, filepath.Join(l.Dir, filepath.FromSlash(d)))
	}
	for _, f := range l.Files {
		if base := path.Base(f); base == ".gitignore" || base == ".ignore" {
			w = append(w, filepath.Join(l.Dir, filepath.FromSlash(f)))
		}
	}
	for _, name := range ignoreFiles {
		w = append(w, filepath.Join(l.Dir, name))
	}
	if top := worktreeTop(l.Dir); top != "" {
		g := gitDir(top)
		w = append(w, filepath.Join(g, "index"), filepath.Join(g, "info", "exclude"))
	}
	return w
}

// stampOf hashes the modification time and size of every watched path (a missing one counts too).
// Many paths are checked in parallel.
func stampOf(paths []string) uint64 {
	workers := runtime.GOMAXPROCS(0)
	if len(paths) < 2000 || workers < 2 {
		return stampRange(paths)
	}
	sums := make([]uint64, workers)
	step := (len(paths) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		part := paths[min(w*step, len(paths)):min((w+1)*step, len(paths))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[w] = stampRange(part)
		}()
	}
	wg.Wait()
	h := fnv.New64a()
	var buf [8]byte
	for _, s := range sums {
		binary.LittleEndian.PutUint64(buf[:], s)
		_, _ = h.Write(buf[:])
	}
	return h.Sum64()
}

func stampRange(paths []string) uint64 {
	h := fnv.New64a()
	var buf [16]byte
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			binary.LittleEndian.PutUint64(buf[:8], 0)
			binary.LittleEndian.PutUint64(buf[8:], ^uint64(0))
		} else {
			binary.LittleEndian.PutUint64(buf[:8], uint64(fi.ModTime().UnixNano()))
			binary.LittleEndian.PutUint64(buf[8:], uint64(fi.Size()))
		}
		_, _ = h.Write(buf[:])
	}
	return h.Sum64()
}

func foldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
