package session

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// SearchInput is GET /session/search.
type SearchInput struct {
	Query string `query:"query" required:"true" minLength:"1" maxLength:"1024" description:"Text to find in the conversation (case-insensitive substring)."`
	Limit int    `query:"limit" minimum:"1" maximum:"200" description:"At most this many sessions (default 50)."`
}

// SearchHit is a session whose conversation contains the query, with where (tandem extension).
type SearchHit struct {
	Session   Session `json:"session"`
	MessageID string  `json:"messageID"`
	PartID    string  `json:"partID"`
	// Snippet is the text around the newest match, on one line; Match is where the match starts in
	// it and how long it is, in UTF-16 code units as JavaScript counts them.
	Snippet string `json:"snippet"`
	Match   [2]int `json:"match"`
}

// searcher finds text in the sessions' conversations, through the store's text index.
type searcher struct {
	rows sessionRows
	db   interface {
		SearchText(ctx context.Context, directory, query string, limit int) ([]store.TextHit, error)
	}
}

// Search finds the sessions of a directory whose conversation (the text the user and the model
// wrote) contains query, most recently updated first, each with its newest match.
func (sr searcher) Search(ctx context.Context, directory string, in SearchInput) ([]SearchHit, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return nil, errs.E(errs.Invalid, "query: required")
	}
	if len(q) > 1024 {
		return nil, errs.E(errs.Invalid, "query: at most 1024 bytes, got %d", len(q))
	}
	limit := in.Limit
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	rows, err := sr.db.SearchText(ctx, directory, q, limit)
	if err != nil {
		return nil, err
	}
	out := make([]SearchHit, 0, len(rows))
	for _, r := range rows {
		sess, err := sr.rows.Get(ctx, r.SessionID)
		if errs.Is(err, errs.NotFound) {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		snippet, at, n := snippetOf(r.Text, q)
		out = append(out, SearchHit{Session: sess, MessageID: r.MessageID, PartID: r.PartID, Snippet: snippet, Match: [2]int{at, n}})
	}
	return out, nil
}

// snippetOf is the text around the first match of q in text (ASCII case folded, as SQLite's LIKE),
// on one line: about 40 characters before it and 80 after, with ellipses where it was cut. It
// returns where the match is in the snippet and its length, in UTF-16 units.
func snippetOf(text, q string) (string, int, int) {
	i := strings.Index(asciiLower(text), asciiLower(q))
	if i < 0 {
		i = 0
		q = ""
	}
	start, end := i, i+len(q)
	for n := 0; n < 40 && start > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(text[:start])
		start -= size
	}
	for n := 0; n < 80 && end < len(text); n++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	before, match, after := oneLine(text[start:i]), oneLine(text[i:i+len(q)]), oneLine(text[i+len(q):end])
	if start > 0 {
		before = "…" + before
	}
	if end < len(text) {
		after += "…"
	}
	return before + match + after, utf16Len(before), utf16Len(match)
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
}

// utf16Len is the length of s in UTF-16 code units, as JavaScript counts a string.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
