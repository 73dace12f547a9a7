package routes

import (
	"context"
	"net/http"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/files"
)

// Files serves OpenCode's file and search routes over the request's project directory: fuzzy file
// search (also the v2 /api/fs/find the TUI's @ completion calls), ripgrep text search, directory
// listings, file content with its diff against git's HEAD, and git status and diffs. Every path a
// client names is confined to the directory, symlinks included.
type Files struct {
	Index *files.Index
	// ProjectID names the project of a directory (for /api/fs/find's location).
	ProjectID func(ctx context.Context, dir string) string
}

// FindTextQuery is GET /find's input.
type FindTextQuery struct {
	Pattern string `query:"pattern" required:"true" description:"A ripgrep regular expression."`
	Limit   *int   `query:"limit" nullable:"false" minimum:"1" maximum:"200" description:"tandem extension: at most this many matching lines (default 10, OpenCode's fixed count)."`
}

// Validate requires a pattern and a limit in range.
func (q *FindTextQuery) Validate() error {
	if q.Pattern == "" {
		return errs.E(errs.Invalid, "pattern: required")
	}
	return checkLimit(&q.Limit)
}

// FindFilesQuery is GET /find/file's input.
type FindFilesQuery struct {
	Query string `query:"query" required:"true" description:"A fuzzy pattern: its characters in order; words separated by spaces each match."`
	Dirs  string `query:"dirs" enum:"true,false" description:"Include directories (default true); they end with \"/\"."`
	Type  string `query:"type" enum:"file,directory" description:"Only files or only directories (overrides dirs)."`
	Limit *int   `query:"limit" nullable:"false" minimum:"1" maximum:"200" description:"Default 10."`
}

// Validate checks the enums and the limit.
func (q *FindFilesQuery) Validate() error {
	if q.Dirs != "" && q.Dirs != "true" && q.Dirs != "false" {
		return errs.E(errs.Invalid, "dirs: expected true or false, got %q", q.Dirs)
	}
	if err := checkType(q.Type); err != nil {
		return err
	}
	return checkLimit(&q.Limit)
}

func (q *FindFilesQuery) kind() files.Kind {
	switch {
	case q.Type != "":
		return files.Kind(q.Type)
	case q.Dirs == "false":
		return files.KindFile
	}
	return files.KindAll
}

// FsFindQuery is GET /api/fs/find's input (OpenCode's v2 surface).
type FsFindQuery struct {
	LocationDirectory string `query:"location[directory]" description:"The project directory (as ?directory= on v1 routes)."`
	LocationWorkspace string `query:"location[workspace]" description:"Accepted for OpenCode compatibility: tandem has no workspaces."`
	Query             string `query:"query" required:"true" description:"A fuzzy pattern, as GET /find/file's."`
	Type              string `query:"type" enum:"file,directory" description:"Only files or only directories; both by default."`
	Limit             *int   `query:"limit" nullable:"false" minimum:"1" maximum:"200" description:"Default 10."`
}

// Validate checks the type and the limit.
func (q *FsFindQuery) Validate() error {
	if err := checkType(q.Type); err != nil {
		return err
	}
	return checkLimit(&q.Limit)
}

// FsListQuery is GET /api/fs/list's input (OpenCode's v2 surface).
type FsListQuery struct {
	LocationDirectory string `query:"location[directory]" description:"The directory (as ?directory= on v1 routes)."`
	LocationWorkspace string `query:"location[workspace]" description:"Accepted for OpenCode compatibility: tandem has no workspaces."`
	Path              string `query:"path" description:"A subdirectory, relative to the location's directory (default: the directory itself); it may not lead outside it."`
}

// SymbolQuery is GET /find/symbol's input.
type SymbolQuery struct {
	Query string `query:"query" required:"true"`
}

// Symbol is OpenCode's Symbol (an LSP workspace symbol). tandem runs no language server.
type Symbol struct {
	Name     string         `json:"name" required:"true"`
	Kind     int            `json:"kind" required:"true" minimum:"0"`
	Location SymbolLocation `json:"location" required:"true"`
}

// SymbolLocation is where a symbol is defined.
type SymbolLocation struct {
	URI   string `json:"uri" required:"true"`
	Range Range  `json:"range" required:"true"`
}

// Range is an LSP range.
type Range struct {
	Start Position `json:"start" required:"true"`
	End   Position `json:"end" required:"true"`
}

// Position is an LSP position.
type Position struct {
	Line      int `json:"line" required:"true" minimum:"0"`
	Character int `json:"character" required:"true" minimum:"0"`
}

// FilePathQuery names a path relative to the project directory.
type FilePathQuery struct {
	Path string `query:"path" required:"true" description:"Relative to the project directory (\"\" or \".\" for the directory itself); it may not lead outside it."`
}

// VcsDiffQuery is GET /vcs/diff's input.
type VcsDiffQuery struct {
	Mode    string `query:"mode" required:"true" enum:"git,branch" description:"git: the work tree against HEAD (untracked files included); branch: against where the branch left the default branch."`
	Context *int   `query:"context" nullable:"false" minimum:"0" description:"Lines of context around each change (default 3)."`
}

// Validate checks the mode and the context.
func (q *VcsDiffQuery) Validate() error {
	if q.Mode != string(files.DiffGit) && q.Mode != string(files.DiffBranch) {
		return errs.E(errs.Invalid, "mode: expected git or branch, got %q", q.Mode)
	}
	if q.Context == nil {
		three := 3
		q.Context = &three
	}
	if *q.Context < 0 {
		return errs.E(errs.Invalid, "context: must be at least 0")
	}
	return nil
}

// FsEntry is OpenCode's FileSystemEntry.
type FsEntry struct {
	Path string `json:"path" required:"true" description:"Relative to the location's directory."`
	Type string `json:"type" required:"true" enum:"file,directory"`
}

// LocationInfo is OpenCode's LocationInfo: where a v2 request was answered.
type LocationInfo struct {
	Directory string          `json:"directory" required:"true"`
	Project   LocationProject `json:"project" required:"true"`
}

// LocationProject names the project of a location.
type LocationProject struct {
	ID        string `json:"id" required:"true"`
	Directory string `json:"directory" required:"true"`
}

// FsFindResult is GET /api/fs/find's answer.
type FsFindResult struct {
	Location LocationInfo `json:"location" required:"true"`
	Data     []FsEntry    `json:"data" required:"true"`
}

func checkType(t string) error {
	if t != "" && t != string(files.KindFile) && t != string(files.KindDirectory) {
		return errs.E(errs.Invalid, "type: expected file or directory, got %q", t)
	}
	return nil
}

// checkLimit applies the default (10) and the range OpenCode allows (1-200).
func checkLimit(limit **int) error {
	if *limit == nil {
		ten := 10
		*limit = &ten
	}
	if n := **limit; n < 1 || n > 200 {
		return errs.E(errs.Invalid, "limit: must be between 1 and 200, got %d", n)
	}
	return nil
}

// Ops declares the file and search routes.
func (f *Files) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/find", "find.text", "Find text", func(c *Call, in *FindTextQuery) ([]files.TextMatch, error) {
			return files.Grep(c.Ctx(), c.Dir, in.Pattern, *in.Limit)
		}).doc("ripgrep over the project directory (.gitignore respected, hidden files searched, .git not): "+
			"up to limit matching lines in ripgrep's match shape, as OpenCode returns them. An invalid pattern is a 400.", 503),
		op(http.MethodGet, "/find/file", "find.files", "Find files", func(c *Call, in *FindFilesQuery) ([]string, error) {
			l, err := f.listing(c)
			if err != nil {
				return nil, err
			}
			return l.Search(in.Query, in.kind(), *in.Limit), nil
		}).doc("Fuzzy search over the project's files and directories (directories end with \"/\"), .gitignore respected, " +
			"best match first. The file list is indexed per directory and re-read only when the tree changed."),
		op(http.MethodGet, "/api/fs/find", "v2.fs.find", "Find files", func(c *Call, in *FsFindQuery) (FsFindResult, error) {
			l, err := f.listing(c)
			if err != nil {
				return FsFindResult{}, err
			}
			found := l.Search(in.Query, files.Kind(in.Type), *in.Limit)
			out := FsFindResult{Location: f.location(c.Ctx(), c.Dir), Data: make([]FsEntry, 0, len(found))}
			for _, p := range found {
				if d, ok := strings.CutSuffix(p, "/"); ok {
					out.Data = append(out.Data, FsEntry{Path: d, Type: "directory"})
				} else {
					out.Data = append(out.Data, FsEntry{Path: p, Type: "file"})
				}
			}
			return out, nil
		}).doc("OpenCode's v2 file search, which its terminal UI calls for @ completion: the same ranking as GET /find/file, " +
			"directories without the trailing slash and typed instead. The directory comes from location[directory] " +
			"(or ?directory= and x-opencode-directory)."),
		op(http.MethodGet, "/api/fs/list", "v2.fs.list", "List directory", func(c *Call, in *FsListQuery) (FsFindResult, error) {
			nodes, err := files.List(c.Ctx(), c.Dir, in.Path)
			if err != nil {
				return FsFindResult{}, err
			}
			out := FsFindResult{Location: f.location(c.Ctx(), c.Dir), Data: make([]FsEntry, 0, len(nodes))}
			for _, n := range nodes {
				out.Data = append(out.Data, FsEntry{Path: n.Path, Type: n.Type})
			}
			return out, nil
		}).doc("OpenCode's v2 directory listing, which its terminal UI reads to browse directories: the direct children of the "+
			"location's directory (or of path inside it), directories first, paths relative to the location.", 403, 404),
		op(http.MethodGet, "/find/symbol", "find.symbols", "Find symbols", func(c *Call, _ *SymbolQuery) ([]Symbol, error) {
			return []Symbol{}, nil
		}).doc("Always empty: tandem runs no language server to ask for workspace symbols (OpenCode's answer is empty too)."),
		op(http.MethodGet, "/file", "file.list", "List files", func(c *Call, in *FilePathQuery) ([]files.Node, error) {
			return files.List(c.Ctx(), c.Dir, in.Path)
		}).doc("The entries of one directory of the project, directories first; ignored entries are listed with ignored: true. "+
			"A path outside the project directory (../, an absolute path elsewhere, a symlink leading out) is a 403.", 403, 404),
		op(http.MethodGet, "/file/content", "file.read", "Read file", func(c *Call, in *FilePathQuery) (files.Content, error) {
			return files.Read(c.Ctx(), c.Dir, in.Path)
		}).doc("A file's text; images base64-encoded with their MIME type; other binary files as type binary. "+
			"When the file differs from git's HEAD, diff holds the unified diff and patch the same diff structured, "+
			"with the whole file as context. A path outside the project directory is a 403.", 403, 404, 413),
		op(http.MethodGet, "/file/status", "file.status", "Get file status", func(c *Call, _ *struct{}) ([]files.Change, error) {
			return files.Status(c.Ctx(), c.Dir)
		}).doc("Files changed since git's HEAD in the project directory (modified, added — staged or untracked but not ignored — and deleted), " +
			"with added and removed line counts. Empty outside git."),
		op(http.MethodGet, "/vcs/status", "vcs.status", "Get VCS status", func(c *Call, _ *struct{}) ([]VcsFileStatus, error) {
			changes, err := files.Status(c.Ctx(), c.Dir)
			if err != nil {
				return nil, err
			}
			out := make([]VcsFileStatus, 0, len(changes))
			for _, ch := range changes {
				out = append(out, VcsFileStatus{File: ch.Path, Additions: ch.Added, Deletions: ch.Removed, Status: ch.Status})
			}
			return out, nil
		}).doc("The files changed since git's HEAD, as GET /file/status lists them, in OpenCode's VcsFileStatus shape. Empty outside git."),
		raw(http.MethodGet, "/vcs/diff/raw", "vcs.diff.raw", "Get raw VCS diff", nil, "", "text/x-diff; charset=utf-8", rawDiff).
			doc("The work tree's changes against git's HEAD as one unified diff git apply accepts (untracked files as new files, binary files " +
				"in git's binary form). Empty outside git."),
		op(http.MethodGet, "/vcs/diff", "vcs.diff", "Get VCS diff", func(c *Call, in *VcsDiffQuery) ([]files.FileDiff, error) {
			return files.Diff(c.Ctx(), c.Dir, files.DiffMode(in.Mode), *in.Context)
		}).doc("Per-file patches of the work tree against HEAD (mode git, untracked files included) or against the merge base with " +
			"the default branch (mode branch: origin's HEAD, else main or master; empty when there is none). Empty outside git."),
	}
}

// VcsFileStatus is OpenCode's VcsFileStatus: one changed file without its patch.
type VcsFileStatus struct {
	File      string `json:"file" required:"true" description:"Relative to the project directory."`
	Additions int    `json:"additions" required:"true"`
	Deletions int    `json:"deletions" required:"true"`
	Status    string `json:"status" required:"true" enum:"added,deleted,modified"`
}

// rawDiff writes the work tree's patch against HEAD, untracked files included, as text/x-diff.
func rawDiff(w http.ResponseWriter, r *http.Request) {
	patch, err := files.RawDiff(r.Context(), DirectoryOf(r.Context()))
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
	_, _ = w.Write([]byte(patch))
}

func (f *Files) listing(c *Call) (*files.Listing, error) {
	l, err := f.Index.Listing(c.Ctx(), c.Dir)
	if err != nil {
		return nil, errs.E(errs.NotFound, "directory %s cannot be listed: %v", c.Dir, err)
	}
	return l, nil
}

func (f *Files) location(ctx context.Context, dir string) LocationInfo {
	id := "global"
	if f.ProjectID != nil {
		id = f.ProjectID(ctx, dir)
	}
	return LocationInfo{Directory: dir, Project: LocationProject{ID: id, Directory: session.Worktree(dir)}}
}
