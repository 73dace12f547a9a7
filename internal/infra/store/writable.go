package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// UnwritableError says the database cannot be written: a read-only file or directory, missing
// permissions, a read-only file system or a full disk. Open returns it instead of a database that
// would fail every write later; callers add how to fix it in their own terms (flags, env).
type UnwritableError struct {
	Path string
	Err  error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("cannot write the database %s: %v", e.Path, e.Err)
}

func (e *UnwritableError) Unwrap() error { return e.Err }

// SQLite's primary result codes that mean "this file cannot be written here".
const (
	sqlitePerm     = 3
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
)

// unwritable reports whether err means the database (or its directory) cannot be written.
func unwritable(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlitePerm, sqliteReadOnly, sqliteIOErr, sqliteFull, sqliteCantOpen:
			return true
		}
	}
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOSPC)
}

// ReadOnly reports whether err says the database cannot be written now that it is open: a file or
// file system made read-only while serving, or a PostgreSQL server that accepts only reads (a
// standby, default_transaction_read_only).
func ReadOnly(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteReadOnly || errors.Is(err, syscall.EROFS) ||
		pgCode(err) == pgReadOnly
}

// Full reports whether err is SQLite's "database or disk is full", a file write that found no
// space left on the device, or PostgreSQL's disk_full.
func Full(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteFull || errors.Is(err, syscall.ENOSPC) ||
		pgCode(err) == pgDiskFull
}

// PostgreSQL's SQLSTATEs for the same conditions.
const (
	pgReadOnly = "25006" // read_only_sql_transaction
	pgDiskFull = "53100" // disk_full
)

// pgCode is the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// probeWrite commits one small write, so that a database that opens but cannot be written (a
// read-only file left behind, a directory where the WAL cannot be created, a full disk) is found
// at start rather than by the first turn.
func (s *DB) probeWrite(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, s.dialect.rebind(`INSERT INTO store_meta (key, value) VALUES ('opened', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`), time.Now().Unix())
	return err
}
