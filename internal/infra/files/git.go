package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/gitcmd"
)

// Change is OpenCode's File: one changed path in the work tree and its line counts against HEAD.
type Change struct {
	Path    string `json:"path" required:"true" description:"Relative to the project directory."`
	Added   int    `json:"added" required:"true" minimum:"0"`
	Removed int    `json:"removed" required:"true" minimum:"0"`
	Status  string `json:"status" required:"true" enum:"added,deleted,modified"`
}

// Status lists what changed in dir's git work tree since HEAD: modified, added (staged or untracked,
// unless ignored) and deleted files, with added and removed line counts (0 for binary files). Paths
// are relative to dir and limited to it. Outside git it is empty.
func Status(ctx context.Context, dir string) ([]Change, error) {
	g, base, ok := openGit(ctx, dir)
	if !ok {
		return []Change{}, nil
	}
	return status(ctx, g, dir, base)
}

// openGit opens tandem's own git in dir (gitcmd: no program the repository names runs) and names
// the commit to compare with; ok is false outside a git work tree, or in one git cannot read.
func openGit(ctx context.Context, dir string) (g *gitcmd.Git, base string, ok bool) {
	repo, ok := GitRepo(dir)
	if !ok {
		return nil, "", false
	}
	g, err := gitcmd.Open(ctx, repo)
	if err != nil {
		return nil, "", false
	}
	if base, err = headOrEmpty(ctx, g); err != nil {
		return nil, "", false
	}
	return g, base, true
}

// GitRepo is the repository of dir's work tree, named explicitly (--git-dir, --work-tree): a
// core.worktree in its configuration cannot make git read another directory's files as the
// project's. ok is false outside a git work tree.
func GitRepo(dir string) (r gitcmd.Repo, ok bool) {
	top := worktreeTop(dir)
	if top == "" {
		return gitcmd.Repo{}, false
	}
	return gitcmd.Repo{Dir: dir, GitDir: gitDir(top), WorkTree: top}, true
}

func status(ctx context.Context, g *gitcmd.Git, dir, base string) ([]Change, error) {
	out := []Change{}
	numstat, err := g.Output(ctx, "diff", "--numstat", "-z", "--no-renames", "--relative", base, "--")
	if err != nil {
		return nil, err
	}
	names, err := g.Output(ctx, "diff", "--name-status", "-z", "--no-renames", "--relative", base, "--")
	if err != nil {
		return nil, err
	}
	status := map[string]string{}
	fields := splitZ(names)
	for i := 0; i+1 < len(fields); i += 2 {
		switch fields[i] {
		case "A":
			status[fields[i+1]] = "added"
		case "D":
			status[fields[i+1]] = "deleted"
		default:
			status[fields[i+1]] = "modified"
		}
	}
	for _, rec := range splitZ(numstat) {
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		c := Change{Path: parts[2], Added: atoi(parts[0]), Removed: atoi(parts[1]), Status: status[parts[2]]}
		if c.Status == "" {
			c.Status = "modified"
		}
		out = append(out, c)
	}
	untracked, err := g.Output(ctx, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	for _, p := range splitZ(untracked) {
		lines, _ := countLines(dir, p)
		out = append(out, Change{Path: p, Added: lines, Status: "added"})
	}
	return out, nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0 // "-" for a binary file
	}
	return n
}

// countLines counts the lines of the untracked file rel in dir as git will once it is added (a
// last line without a newline counts): a symlink is one line, its target's name; binary files have
// none.
func countLines(dir, rel string) (int, bool) {
	f, link, err := openUntracked(dir, rel)
	if link != "" {
		return 1, true
	}
	if err != nil {
		return 0, false
	}
	defer f.Close()
	buf := make([]byte, 64*1024)
	n, lines, last := 0, 0, byte('\n')
	for {
		k, err := f.Read(buf)
		if n == 0 && bytes.IndexByte(buf[:min(k, 8000)], 0) >= 0 {
			return 0, false
		}
		n += k
		lines += bytes.Count(buf[:k], []byte("\n"))
		if k > 0 {
			last = buf[k-1]
		}
		if err != nil {
			break
		}
	}
	if last != '\n' {
		lines++
	}
	return lines, true
}

// headOrEmpty names the commit to compare with: HEAD, or git's empty tree in a repository without
// commits yet.
func headOrEmpty(ctx context.Context, g *gitcmd.Git) (string, error) {
	if _, err := g.Output(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil {
		return "HEAD", nil
	}
	out, err := g.Output(ctx, "hash-object", "-t", "tree", "/dev/null")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Hunk is one hunk of a structured patch; lines keep their " ", "+" or "-" prefix.
type Hunk struct {
	OldStart int      `json:"oldStart" required:"true" minimum:"0"`
	OldLines int      `json:"oldLines" required:"true" minimum:"0"`
	NewStart int      `json:"newStart" required:"true" minimum:"0"`
	NewLines int      `json:"newLines" required:"true" minimum:"0"`
	Lines    []string `json:"lines" required:"true"`
}

// Patch is a structured unified diff of one file (the shape of jsdiff's structuredPatch, which
// OpenCode returns).
type Patch struct {
	OldFileName string `json:"oldFileName" required:"true"`
	NewFileName string `json:"newFileName" required:"true"`
	OldHeader   string `json:"oldHeader,omitempty"`
	NewHeader   string `json:"newHeader,omitempty"`
	Hunks       []Hunk `json:"hunks" required:"true"`
	Index       string `json:"index,omitempty"`
}

// Content is OpenCode's FileContent.
type Content struct {
	Type     string `json:"type" required:"true" enum:"text,binary"`
	Content  string `json:"content" required:"true"`
	Diff     string `json:"diff,omitempty" description:"The file's unified diff against git's HEAD, when it differs."`
	Patch    *Patch `json:"patch,omitempty" description:"The same diff, structured (full context)."`
	Encoding string `json:"encoding,omitempty" enum:"base64"`
	MimeType string `json:"mimeType,omitempty"`
}

// MaxContent bounds the file size Read returns.
const MaxContent = 10 << 20

// Read returns the content of the file rel (relative to dir, confined to it): text as is, images
// base64-encoded with their MIME type, other binary files as {type: binary} without content. A file
// that differs from git's HEAD carries its diff; a file deleted since HEAD reads as empty text with a
// diff that removes everything.
func Read(ctx context.Context, dir, rel string) (Content, error) {
	t, err := Resolve(dir, rel)
	if err != nil {
		return Content{}, err
	}
	f, err := OpenInside(dir, t)
	if errors.Is(err, fs.ErrNotExist) {
		d, derr := fileDiff(ctx, dir, t.Rel)
		if derr != nil || d.text == "" {
			return Content{}, errs.E(errs.NotFound, "File not found: %s", t.Rel)
		}
		return Content{Type: "text", Content: "", Diff: d.text, Patch: d.patch}, nil
	}
	if err != nil {
		return Content{}, errs.E(errs.Forbidden, "%s cannot be read: %v", t.Rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return Content{}, err
	case fi.IsDir():
		return Content{}, errs.E(errs.Invalid, "path: %s is a directory; list it with GET /file", t.Rel)
	case fi.Size() > MaxContent:
		return Content{}, errs.E(errs.TooLarge, "%s is %d bytes; files over %d bytes are not read", t.Rel, fi.Size(), MaxContent)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxContent+1))
	if err != nil {
		return Content{}, err
	}
	mt := mime.TypeByExtension(strings.ToLower(path.Ext(t.Rel)))
	if mt == "" {
		mt = sniffImage(data)
	}
	if strings.HasPrefix(mt, "image/") {
		return Content{Type: "text", Content: base64.StdEncoding.EncodeToString(data), Encoding: "base64", MimeType: mt}, nil
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 || !utf8.Valid(data) {
		return Content{Type: "binary", Content: "", MimeType: mt}, nil
	}
	c := Content{Type: "text", Content: string(data)}
	if d, err := fileDiff(ctx, dir, t.Rel); err == nil && d.text != "" {
		c.Diff, c.Patch = d.text, d.patch
	}
	return c, nil
}

// sniffImage names the image type of data by its signature, for a file whose name has no known
// extension; it is "" for anything else.
func sniffImage(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}

type diffResult struct {
	text  string
	patch *Patch
}

// fileDiff is one file's diff against HEAD with the whole file as context, or nothing outside git.
func fileDiff(ctx context.Context, dir, rel string) (diffResult, error) {
	g, base, ok := openGit(ctx, dir)
	if !ok {
		return diffResult{}, nil
	}
	out, err := g.Output(ctx, "diff", "--no-color", "--no-renames", "-U1000000", base, "--", rel)
	if err != nil || len(out) == 0 {
		return diffResult{}, err
	}
	text := string(out)
	return diffResult{text: text, patch: parsePatch(rel, text)}, nil
}

// parsePatch turns one file's unified diff into a structured patch.
func parsePatch(name, text string) *Patch {
	p := &Patch{OldFileName: name, NewFileName: name, Hunks: []Hunk{}}
	var h *Hunk
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "@@ "):
			var os, ol, ns, nl int
			if !parseHunkHeader(line, &os, &ol, &ns, &nl) {
				continue
			}
			p.Hunks = append(p.Hunks, Hunk{OldStart: os, OldLines: ol, NewStart: ns, NewLines: nl, Lines: []string{}})
			h = &p.Hunks[len(p.Hunks)-1]
		case h == nil && strings.HasPrefix(line, "--- "):
			p.OldHeader = strings.TrimPrefix(line, "--- ")
		case h == nil && strings.HasPrefix(line, "+++ "):
			p.NewHeader = strings.TrimPrefix(line, "+++ ")
		case h == nil && strings.HasPrefix(line, "index "):
			p.Index = strings.TrimPrefix(line, "index ")
		case h != nil && line != "" && strings.ContainsRune(" +-\\", rune(line[0])):
			h.Lines = append(h.Lines, line)
		}
	}
	return p
}

// parseHunkHeader reads "@@ -a,b +c,d @@" (a missing count is 1).
func parseHunkHeader(line string, os, ol, ns, nl *int) bool {
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return false
	}
	oldPart, rest, ok := strings.Cut(rest, " +")
	if !ok {
		return false
	}
	newPart, _, ok := strings.Cut(rest, " @@")
	if !ok {
		return false
	}
	return parseRange(oldPart, os, ol) && parseRange(newPart, ns, nl)
}

func parseRange(s string, start, count *int) bool {
	a, b, has := strings.Cut(s, ",")
	var err error
	if *start, err = strconv.Atoi(a); err != nil {
		return false
	}
	*count = 1
	if has {
		if *count, err = strconv.Atoi(b); err != nil {
			return false
		}
	}
	return true
}

// FileDiff is OpenCode's VcsFileDiff: one file's patch and line counts.
type FileDiff struct {
	File      string `json:"file" required:"true" description:"Relative to the project directory."`
	Patch     string `json:"patch,omitempty" description:"Unified diff; absent for binary files."`
	Additions int    `json:"additions" required:"true"`
	Deletions int    `json:"deletions" required:"true"`
	Status    string `json:"status,omitempty" enum:"added,deleted,modified"`
}

// DiffMode says what the work tree is compared with.
type DiffMode string

// The diff modes of GET /vcs/diff.
const (
	DiffGit    DiffMode = "git"    // HEAD: uncommitted changes, untracked files included
	DiffBranch DiffMode = "branch" // where the branch left the default branch: everything the branch changed
)

// maxUntrackedPatches bounds how many untracked files get a patch in a diff.
const maxUntrackedPatches = 200

// Diff compares dir's work tree with HEAD (DiffGit) or with the merge base of HEAD and the
// repository's default branch (DiffBranch), context lines around each change. Outside git, or when no
// default branch can be found for DiffBranch, it is empty.
func Diff(ctx context.Context, dir string, mode DiffMode, context int) ([]FileDiff, error) {
	out := []FileDiff{}
	g, head, ok := openGit(ctx, dir)
	if !ok {
		return out, nil
	}
	base := head
	if mode == DiffBranch {
		if base = mergeBase(ctx, g); base == "" {
			return out, nil
		}
	}
	changes, err := status(ctx, g, dir, head)
	if err != nil {
		return nil, err
	}
	patch, err := g.Output(ctx, "diff", "--no-color", "--no-renames", "--relative",
		"-U"+strconv.Itoa(context), base, "--")
	if err != nil {
		return nil, err
	}
	byFile := splitDiff(string(patch))
	if mode == DiffBranch {
		// Status is against HEAD; against the merge base, the diff itself says what changed.
		changes = changes[:0]
		for _, f := range byFile {
			changes = append(changes, Change{Path: f.file, Status: f.status})
		}
		untracked, err := g.Output(ctx, "ls-files", "-z", "--others", "--exclude-standard")
		if err != nil {
			return nil, err
		}
		for _, p := range splitZ(untracked) {
			changes = append(changes, Change{Path: p, Status: "added"})
		}
	}
	patched := 0
	for _, c := range changes {
		d := FileDiff{File: c.Path, Status: c.Status}
		if f, ok := byFile[c.Path]; ok {
			d.Patch, d.Additions, d.Deletions = f.patch, f.additions, f.deletions
		} else if c.Status == "added" && patched < maxUntrackedPatches {
			d.Patch, d.Additions = untrackedPatch(dir, c.Path)
			patched++
		}
		out = append(out, d)
	}
	return out, nil
}

// mergeBase is the commit where HEAD left the default branch (origin's HEAD, else main or master).
func mergeBase(ctx context.Context, g *gitcmd.Git) string {
	var candidates []string
	if ref, err := g.Output(ctx, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(ref)))
	}
	candidates = append(candidates, "refs/heads/main", "refs/heads/master", "refs/remotes/origin/main", "refs/remotes/origin/master")
	for _, ref := range candidates {
		if out, err := g.Output(ctx, "merge-base", "HEAD", ref); err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

type filePatch struct {
	file, status, patch  string
	additions, deletions int
}

// splitDiff splits a multi-file diff by file and counts each file's changed lines.
func splitDiff(text string) map[string]filePatch {
	out := map[string]filePatch{}
	var cur *filePatch
	var b strings.Builder
	flush := func() {
		if cur != nil {
			cur.patch = b.String()
			out[cur.file] = *cur
		}
		b.Reset()
	}
	inHunk := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "diff --git ") {
			flush()
			cur = &filePatch{status: "modified"}
			inHunk = false
		}
		if cur == nil {
			continue
		}
		b.WriteString(line)
		switch {
		case strings.HasPrefix(line, "@@ "):
			inHunk = true
		case !inHunk && strings.HasPrefix(line, "new file mode"):
			cur.status = "added"
		case !inHunk && strings.HasPrefix(line, "deleted file mode"):
			cur.status = "deleted"
		case !inHunk && strings.HasPrefix(line, "--- a/"):
			cur.file = strings.TrimSuffix(strings.TrimPrefix(line, "--- a/"), "\n")
		case !inHunk && strings.HasPrefix(line, "+++ b/"):
			cur.file = strings.TrimSuffix(strings.TrimPrefix(line, "+++ b/"), "\n")
		case !inHunk && strings.HasPrefix(line, "Binary files "):
			cur.file = binaryName(line)
		case inHunk && strings.HasPrefix(line, "+"):
			cur.additions++
		case inHunk && strings.HasPrefix(line, "-"):
			cur.deletions++
		}
	}
	flush()
	return out
}

// binaryName reads the file name from "Binary files a/x and b/x differ".
func binaryName(line string) string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "Binary files "), " differ\n")
	a, b, _ := strings.Cut(line, " and ")
	if b != "/dev/null" {
		return strings.TrimPrefix(b, "b/")
	}
	return strings.TrimPrefix(a, "a/")
}

// openUntracked opens the untracked file rel in dir through an os.Root on dir, so that neither a
// symlink nor one swapped in meanwhile leads outside it. A symlink is not opened: link is its
// target's name, which is what git records of it.
func openUntracked(dir, rel string) (f *os.File, link string, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	if info, err := root.Lstat(name); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		if link, err := root.Readlink(name); err == nil && link != "" {
			return nil, link, nil
		}
	}
	f, err = root.Open(name)
	return f, "", err
}

// untrackedPatch is the patch that adds the untracked file rel in dir whole, as git shows it once
// added: a symlink as the name of its target (never the content it points to, which may lie outside
// the project, as GET /file/content refuses it), a text file line by line; binary files get none.
func untrackedPatch(dir, rel string) (string, int) {
	f, link, err := openUntracked(dir, rel)
	mode, data := "100644", []byte(link)
	switch {
	case link != "":
		mode = "120000" // its content is the target's name, without a newline, as git writes it
	case err != nil:
		return "", 0
	default:
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, MaxContent+1))
		if err != nil || len(data) > MaxContent || bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return "", 0
		}
		if info, err := f.Stat(); err == nil && info.Mode()&0o111 != 0 {
			mode = "100755"
		}
	}
	if len(data) == 0 {
		return fmt.Sprintf("diff --git a/%s b/%s\nnew file mode %s\n", rel, rel, mode), 0
	}
	text := string(data)
	noEOL := !strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode %s\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", rel, rel, mode, rel, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	if noEOL {
		b.WriteString("\\ No newline at end of file\n")
	}
	return b.String(), len(lines)
}

// RawDiff is the work tree's patch against HEAD as one unified diff git apply accepts: tracked
// changes, then untracked (not ignored) files as new files, binary ones in git's binary form.
// Outside git it is empty.
func RawDiff(ctx context.Context, dir string) (string, error) {
	g, base, ok := openGit(ctx, dir)
	if !ok {
		return "", nil
	}
	tracked, err := g.Output(ctx, "diff", "--no-color", "--binary", "--no-renames", "--relative", base, "--")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Write(tracked)
	untracked, err := g.Output(ctx, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return "", err
	}
	for _, p := range splitZ(untracked) {
		// --no-index exits 1 when the files differ, which a new file always does.
		out, err := g.Output(ctx, "diff", "--no-color", "--binary", "--no-index", "--", "/dev/null", p)
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) && !strings.HasPrefix(string(out), "diff --git") {
			return "", err
		}
		b.Write(out)
	}
	return b.String(), nil
}
