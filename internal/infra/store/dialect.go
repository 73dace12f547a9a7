package store

import (
	"net/url"
	"strconv"
	"strings"
)

// dialect is the SQL a backend speaks where SQLite and PostgreSQL differ. Statements are written
// once, with ? placeholders; PostgreSQL's are rewritten to $1, $2, … (once per statement text).
type dialect int

const (
	sqliteDialect dialect = iota
	postgresDialect
)

func (d dialect) String() string {
	if d == postgresDialect {
		return "postgres"
	}
	return "sqlite"
}

// rebind rewrites a statement's ? placeholders for the dialect. Quoted text ('…', "…") is copied as
// it is: a ? inside a literal is not a placeholder.
func (d dialect) rebind(query string) string {
	if d != postgresDialect || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// like is the operator of a case-insensitive LIKE: SQLite's LIKE already ignores (ASCII) case.
func (d dialect) like() string {
	if d == postgresDialect {
		return "ILIKE"
	}
	return "LIKE"
}

// jsonText is the text at a path (keys from the top) of a JSON document stored as a BLOB/BYTEA
// column; SQL NULL where the path is missing or JSON null.
func (d dialect) jsonText(column string, path ...string) string {
	if d == postgresDialect {
		return "(convert_from(" + column + ", 'UTF8')::json #>> '{" + strings.Join(path, ",") + "}')"
	}
	return "json_extract(" + column + ", '$." + strings.Join(path, ".") + "')"
}

// isPostgresURL reports whether Open's target names a PostgreSQL server rather than a file.
func isPostgresURL(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// redactURL is a database URL without its password (in the user part or the query), for logs and
// DB.Path.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "postgres://(an unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
