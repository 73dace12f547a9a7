package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed migrations/*.sql
var migrations embed.FS

// A migration is one name, recorded in the database's migrations table once applied:
// "migrations/0001_sessions.sql". Its SQL is the file of that name when both backends run it as it
// is, or NAME.sqlite.sql and NAME.postgres.sql where their DDL differs. A migration with one
// dialect's file only is that backend's alone (SQLite's full-text index, PostgreSQL's cluster
// tables). Names sort in the order they are applied.

// migration is one migration as the dialect runs it.
type migration struct {
	name string // as recorded
	file string // the file holding the dialect's SQL
}

// migrationsFor lists the dialect's migrations in order, and every name any dialect knows.
func migrationsFor(d dialect) (ours []migration, known map[string]bool, err error) {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, nil, err
	}
	known = map[string]bool{}
	byName := map[string]migration{}
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".sql")
		name, fileDialect, specific := strings.Cut(base, ".")
		recorded := "migrations/" + name + ".sql"
		known[recorded] = true
		if specific && fileDialect != sqliteDialect.String() && fileDialect != postgresDialect.String() {
			return nil, nil, fmt.Errorf("store: migration %s is for no known dialect", f)
		}
		if specific && fileDialect != d.String() {
			continue
		}
		if prev, ok := byName[recorded]; ok {
			return nil, nil, fmt.Errorf("store: migration %s has two files for %s: %s and %s", recorded, d, prev.file, f)
		}
		byName[recorded] = migration{name: recorded, file: f}
	}
	for _, m := range byName {
		ours = append(ours, m)
	}
	sort.Slice(ours, func(i, j int) bool { return ours[i].name < ours[j].name })
	return ours, known, nil
}

// NewerSchemaError is returned by Open for a database that records a migration this tandem does
// not have: a newer tandem migrated it, and this one could misread or damage what it stores.
type NewerSchemaError struct {
	Migration string
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("store: the database was migrated by a newer tandem (it records migration %q, which this tandem does not know): run that tandem version or newer against it", e.Migration)
}

// migrator is what migrations run on: the pool (SQLite) or one connection holding the migration
// lock (PostgreSQL).
type migrator interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// migrate applies the migrations the database does not record yet, each in its own transaction,
// after refusing a database that records one this tandem does not know.
func (s *DB) migrate(ctx context.Context, on migrator) error {
	if _, err := on.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("store: migrations table: %w", err)
	}
	ours, known, err := migrationsFor(s.dialect)
	if err != nil {
		return err
	}
	applied, err := appliedMigrations(ctx, on)
	if err != nil {
		return err
	}
	for _, name := range applied {
		if !known[name] {
			return &NewerSchemaError{Migration: name}
		}
	}
	done := map[string]bool{}
	for _, name := range applied {
		done[name] = true
	}
	for _, m := range ours {
		if done[m.name] {
			continue
		}
		if err := s.apply(ctx, on, m); err != nil {
			return err
		}
	}
	return nil
}

func appliedMigrations(ctx context.Context, on migrator) ([]string, error) {
	rows, err := on.QueryContext(ctx, `SELECT name FROM migrations ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("store: read migrations: %w", err)
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

func (s *DB) apply(ctx context.Context, on migrator, m migration) error {
	body, err := migrations.ReadFile(m.file)
	if err != nil {
		return err
	}
	tx, err := on.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO migrations (name) VALUES (?)`), m.name); err != nil {
		return fmt.Errorf("store: record migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.name, err)
	}
	return nil
}
