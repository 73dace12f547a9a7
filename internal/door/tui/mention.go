package tui

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/tandem-dev/tandem/api"
)

// fileLister is the one server call mentions need: the project's paths matching a query.
type fileLister interface {
	FindFiles(ctx context.Context, query string, limit int) ([]string, error)
}

// mention is an @path in a prompt's text; start and end locate "@path" in UTF-16 code units, as
// OpenCode's FilePartSource counts (a JavaScript string's indexes).
type mention struct {
	path       string
	start, end int
}

// mentions lists the @paths a prompt's text names, the first mention of each, in order: an @ at the
// start or after white space, up to the next white space, without trailing punctuation.
func mentions(text string) []mention {
	var out []mention
	units := 0 // UTF-16 units before i
	wordStart, wordUnits := -1, 0
	flush := func(end int) {
		if wordStart < 0 {
			return
		}
		w := text[wordStart:end]
		wordStart = -1
		p, ok := strings.CutPrefix(w, "@")
		if !ok {
			return
		}
		p = strings.TrimRight(p, ".,;:!?)]}\"'")
		if p == "" || slices.ContainsFunc(out, func(m mention) bool { return m.path == p }) {
			return
		}
		out = append(out, mention{path: p, start: wordUnits, end: wordUnits + len(utf16.Encode([]rune("@"+p)))})
	}
	for i, r := range text {
		if unicode.IsSpace(r) {
			flush(i)
		} else if wordStart < 0 {
			wordStart, wordUnits = i, units
		}
		units += utf16.RuneLen(r)
	}
	flush(len(text))
	return out
}

// fileSource is OpenCode's FilePartSource of a mentioned file.
type fileSource struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Text struct {
		Value string `json:"value"`
		Start int    `json:"start"`
		End   int    `json:"end"`
	} `json:"text"`
}

// fileParts are the file parts of a prompt, as OpenCode's TUI sends them: one per @path that names a
// file of the project — completed from the server's list, or listed by it now — with its absolute
// path under dir (the session's directory, on the server's machine) and where the text mentions it;
// a directory (path/, as the server lists it) goes as application/x-directory. A path outside the
// project and a missing file stay text only; the text keeps every mention.
func fileParts(ctx context.Context, c fileLister, dir, text string, completed map[string]bool) []api.PartInput {
	if dir == "" {
		return nil
	}
	var out []api.PartInput
	for _, m := range mentions(text) {
		p := m.path
		if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			continue
		}
		if !completed[p] {
			list, err := c.FindFiles(ctx, p, 20)
			if err != nil || !slices.Contains(list, p) {
				continue
			}
		}
		src := fileSource{Type: "file", Path: p}
		src.Text.Value, src.Text.Start, src.Text.End = "@"+p, m.start, m.end
		raw, err := json.Marshal(src)
		if err != nil {
			continue
		}
		mime := "text/plain"
		if strings.HasSuffix(p, "/") {
			mime = "application/x-directory" // the server lists it
		}
		out = append(out, api.PartInput{Type: "file", Mime: mime, Filename: p,
			URL: "file://" + path.Join(dir, p), Source: raw})
	}
	return out
}
