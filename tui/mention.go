package tui

import (
	"context"
	"path"
	"slices"
	"strings"

	"tandem/session"
)

// fileLister is the one server call mentions need: the project's paths matching a query.
type fileLister interface {
	FindFiles(ctx context.Context, query string, limit int) ([]string, error)
}

// mentions lists the @paths a prompt's text names, each once, in order: an @ at the start or after
// white space, up to the next white space, without trailing punctuation.
func mentions(text string) []string {
	var out []string
	for _, w := range strings.Fields(text) {
		p, ok := strings.CutPrefix(w, "@")
		if !ok {
			continue
		}
		p = strings.TrimRight(p, ".,;:!?)]}\"'")
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// fileParts are the file parts of a prompt, as OpenCode's TUI sends them: one per @path that names a
// file of the project — completed from the server's list, or listed by it now — with its absolute
// path under dir (the session's directory, on the server's machine). A directory (path/), a path
// outside the project and a missing file stay text only; the text keeps every mention.
func fileParts(ctx context.Context, c fileLister, dir, text string, completed map[string]bool) []session.PartInput {
	if dir == "" {
		return nil
	}
	var out []session.PartInput
	for _, p := range mentions(text) {
		if strings.HasSuffix(p, "/") || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			continue
		}
		if !completed[p] {
			list, err := c.FindFiles(ctx, p, 20)
			if err != nil || !slices.Contains(list, p) {
				continue
			}
		}
		out = append(out, session.PartInput{Type: "file", Mime: "text/plain", Filename: p,
			URL: "file://" + path.Join(dir, p)})
	}
	return out
}
