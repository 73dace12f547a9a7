package store

import (
	"context"
	"strings"
	"unicode/utf8"
)

// TextHit is a text part whose text matches a search, with its session.
type TextHit struct {
	SessionID string
	MessageID string
	PartID    string
	Text      string
}

// SearchText finds the sessions of a directory whose conversation contains query (a
// case-insensitive substring, through the trigram index part_text), most recently updated first,
// at most limit of them, each with its newest matching text part. PostgreSQL has no such index
// here: the text parts of the directory's sessions are read with ILIKE.
func (s *Queries) SearchText(ctx context.Context, directory, query string, limit int) ([]TextHit, error) {
	if s.db.dialect == postgresDialect {
		return s.searchTextScan(ctx, directory, query, limit)
	}
	// A query of three characters or more is a phrase of trigrams, looked up in the index; a
	// shorter one has no trigram and is a LIKE over the indexed text.
	match, arg := `part_text MATCH ?`, `"`+strings.ReplaceAll(query, `"`, `""`)+`"`
	if utf8.RuneCountInString(query) < 3 {
		match, arg = `text LIKE ? ESCAPE '\'`, "%"+escapeLike(query)+"%"
	}
	return s.searchHits(ctx, `
		SELECT session_id, message_id, id, text FROM (
			SELECT p.session_id, p.message_id, p.id, t.text, s.updated, s.id AS sid,
				ROW_NUMBER() OVER (PARTITION BY p.session_id ORDER BY p.id DESC) AS n
			FROM (SELECT rowid, text FROM part_text WHERE `+match+`) t
			JOIN parts p ON p.rowid = t.rowid
			JOIN sessions s ON s.id = p.session_id
			WHERE s.directory = ?
		) WHERE n = 1
		ORDER BY updated DESC, sid DESC
		LIMIT ?`, arg, directory, limit)
}

// searchTextScan is SearchText on PostgreSQL.
func (s *Queries) searchTextScan(ctx context.Context, directory, query string, limit int) ([]TextHit, error) {
	d := s.db.dialect
	return s.searchHits(ctx, `
		SELECT session_id, message_id, id, text FROM (
			SELECT p.session_id, p.message_id, p.id, p.text, s.updated, s.id AS sid,
				ROW_NUMBER() OVER (PARTITION BY p.session_id ORDER BY p.id DESC) AS n
			FROM sessions s
			JOIN (SELECT session_id, message_id, id, `+d.jsonText("data", "type")+` AS type, `+d.jsonText("data", "text")+` AS text
				FROM parts) p ON p.session_id = s.id
			WHERE s.directory = ? AND p.type = 'text' AND p.text ILIKE ? ESCAPE '\'
		) hits WHERE n = 1
		ORDER BY updated DESC, sid DESC
		LIMIT ?`, directory, "%"+escapeLike(query)+"%", limit)
}

func (s *Queries) searchHits(ctx context.Context, query string, args ...any) ([]TextHit, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, wrap("search text", err)
	}
	defer rows.Close()
	var out []TextHit
	for rows.Next() {
		var h TextHit
		if err := rows.Scan(&h.SessionID, &h.MessageID, &h.PartID, &h.Text); err != nil {
			return nil, wrap("search text", err)
		}
		out = append(out, h)
	}
	return out, wrap("search text", rows.Err())
}
