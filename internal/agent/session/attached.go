package session

import (
	"bytes"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tandem-dev/tandem/internal/infra/files"
)

// attachedBytes bounds the content of each attached file that goes into the prompt.
const attachedBytes = 64 * 1024

// attachedEntries bounds the entries of each attached directory that go into the prompt.
const attachedEntries = 500

// withFileContents gives the model what a prompt's files hold, as OpenCode's server does: before each
// file part whose file:// URL names a regular file inside dir, a synthetic text part carries its
// content (cut at attachedBytes; a binary file is named, not shown), and before one naming a directory
// inside dir, its entries. A part the client already put content before (a synthetic text part, as
// tandem's commands do), a data: URL, a missing file and a path that leads outside dir (.., a symlink)
// are left as they are.
func withFileContents(dir string, parts []PartInput) []PartInput {
	if dir == "" || !slices.ContainsFunc(parts, func(p PartInput) bool { return p.Type == "file" }) {
		return parts
	}
	out := make([]PartInput, 0, len(parts))
	for i, p := range parts {
		if p.Type == "file" && (i == 0 || !(parts[i-1].Type == "text" && parts[i-1].Synthetic)) {
			if rel, content, ok := readAttached(dir, p.URL); ok {
				out = append(out, PartInput{Type: "text", Synthetic: true,
					Text: "Contents of " + rel + " (attached with @" + rel + "):\n" + content})
			}
		}
		out = append(out, p)
	}
	return out
}

// readAttached reads the file (or lists the directory) a file:// URL names when it is inside dir:
// files.Resolve refuses a path that leaves it lexically or through a symlink, and files.OpenInside
// opens it through an os.Root, so a link swapped in after the check cannot lead outside either.
func readAttached(dir, raw string) (rel, content string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" || !filepath.IsAbs(u.Path) {
		return "", "", false
	}
	target, err := files.Resolve(dir, u.Path)
	if err != nil {
		return "", "", false
	}
	f, err := files.OpenInside(dir, target)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", "", false
	}
	rel = target.Rel
	if info.IsDir() {
		return listAttached(f, rel)
	}
	if !info.Mode().IsRegular() {
		return "", "", false
	}
	buf, err := io.ReadAll(io.LimitReader(f, attachedBytes+1))
	if err != nil {
		return "", "", false
	}
	switch {
	case bytes.IndexByte(buf, 0) >= 0:
		return rel, "(binary file, not shown)", true
	case len(buf) > attachedBytes:
		return rel, strings.ToValidUTF8(string(buf[:attachedBytes]), "") + "\n… (cut at " + strconv.Itoa(attachedBytes) + " bytes)", true
	}
	return rel, string(buf), true
}

// listAttached is an attached directory as the model reads it: its entries, one level, sorted,
// directories ending in "/", .git left out, at most attachedEntries.
func listAttached(f *os.File, rel string) (string, string, bool) {
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", "", false
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		switch {
		case e.Name() == ".git":
		case e.IsDir():
			names = append(names, e.Name()+"/")
		default:
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	more := ""
	if len(names) > attachedEntries {
		more = "\n… (" + strconv.Itoa(len(names)-attachedEntries) + " more)"
		names = names[:attachedEntries]
	}
	if rel == "." {
		rel = ""
	}
	return rel + "/", strings.Join(names, "\n") + more, true
}
