package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// postgres is what a PostgreSQL store keeps beside the pool: the parsed connection settings, from
// which Listen opens its own connection.
type postgres struct {
	config *pgx.ConnConfig
}

// pgPoolSize bounds the connections a node opens: enough for concurrent turns, readers and the
// event pipeline, few enough that several nodes fit in PostgreSQL's default max_connections (100).
const pgPoolSize = 16

// migrationLock is the pg_advisory_lock key migrations run under, so that several nodes starting
// at once on an empty database apply each migration once, one after another ("tandem" in ASCII).
const migrationLock = 0x74616e64656d

// openPostgres opens the PostgreSQL database at url (pgx through database/sql, so the one Queries
// serves both backends) and applies pending migrations under the migration lock.
func openPostgres(ctx context.Context, url string) (*DB, error) {
	shown := redactURL(url)
	config, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", shown, err)
	}
	db := stdlib.OpenDB(*config.Copy())
	db.SetMaxOpenConns(pgPoolSize)
	db.SetMaxIdleConns(pgPoolSize)
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", shown, err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fail(err)
	}
	s := &DB{db: db, path: shown, dialect: postgresDialect, pg: &postgres{config: config}}
	s.Queries = Queries{db: s}
	if err := s.migrateLocked(ctx); err != nil {
		return fail(err)
	}
	if err := s.probeWrite(ctx); err != nil {
		return fail(err)
	}
	return s, nil
}

// migrateLocked migrates on one connection holding the migration lock (a session-level advisory
// lock, released before the connection goes back to the pool).
func (s *DB) migrateLocked(ctx context.Context) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("store: take the migration lock: %w", err)
	}
	defer func() {
		_, uerr := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
		if err == nil && uerr != nil {
			err = fmt.Errorf("store: release the migration lock: %w", uerr)
		}
	}()
	return s.migrate(ctx, conn)
}

var _ migrator = (*sql.Conn)(nil)
