package store_test

import (
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestMain runs the tests on one shared PostgreSQL server, a database each.
func TestMain(m *testing.M) { os.Exit(testenv.MainWithPostgres(m)) }

// backend is a kind of database the store runs on, and how a test gets a fresh one.
type backend struct {
	name   string
	target func(t *testing.T) string
}

func backends() []backend {
	return []backend{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "tandem.db") }},
		{"postgres", func(t *testing.T) string { return testenv.Postgres(t) }},
	}
}

// eachBackend runs fn once per backend, as subtests named for them, each with a fresh database.
func eachBackend(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	eachBackendOpener(t, func(t *testing.T, open func(t *testing.T) *store.DB) { fn(t, open(t)) })
}

// eachBackendOpener runs fn once per backend with a function that opens a fresh database of it.
func eachBackendOpener(t *testing.T, fn func(t *testing.T, open func(t *testing.T) *store.DB)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			fn(t, func(t *testing.T) *store.DB { return openAt(t, b.target(t)) })
		})
	}
}

// open opens a fresh SQLite database (for the tests of what only SQLite does).
func open(t *testing.T) *store.DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "tandem.db"))
}

func openAt(t *testing.T, target string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

// migrationNames are the names of the migrations a dialect runs, as the migrations table records
// them: one per name, whichever file (shared or the dialect's) holds it.
func migrationNames(t *testing.T, dialect string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	out := map[string]bool{}
	for _, f := range files {
		name, d, specific := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".sql"), ".")
		if !specific || d == dialect {
			out["migrations/"+name+".sql"] = true
		}
	}
	return out
}

func TestEveryBackendMigratesOnceAndRecordsEachMigrationByName(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			want := migrationNames(t, b.name)
			for range 2 {
				db := openAt(t, target)
				rows, err := db.SQL().QueryContext(t.Context(), "SELECT name FROM migrations")
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]bool{}
				for rows.Next() {
					var name string
					if err := rows.Scan(&name); err != nil {
						t.Fatal(err)
					}
					got[name] = true
				}
				rows.Close()
				if len(got) != len(want) {
					t.Errorf("recorded %d migrations, want %d: %v", len(got), len(want), got)
				}
				for name := range want {
					if !got[name] {
						t.Errorf("migration %s is not recorded", name)
					}
				}
			}
		})
	}
}

func TestANodeRefusesADatabaseMigratedByANewerTandem(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			db, err := store.Open(t.Context(), target)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.SQL().ExecContext(t.Context(), "INSERT INTO migrations (name) VALUES ('migrations/9999_from_the_future.sql')"); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = store.Open(t.Context(), target)
			var newer *store.NewerSchemaError
			if !errors.As(err, &newer) || newer.Migration != "migrations/9999_from_the_future.sql" {
				t.Fatalf("Open = %v, want a NewerSchemaError naming the unknown migration", err)
			}
			if !strings.Contains(err.Error(), "migrated by a newer tandem") {
				t.Errorf("the error does not say why: %v", err)
			}
		})
	}
}

// TestSeveralNodesStartingAtOnceOnAnEmptyDatabaseAllMigrateIt: the migration lock queues them.
func TestSeveralNodesStartingAtOnceOnAnEmptyDatabaseAllMigrateIt(t *testing.T) {
	url := testenv.Postgres(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := store.Open(t.Context(), url)
			if err == nil {
				err = db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestAPostgreSQLDatabaseIsNamedWithoutItsPassword(t *testing.T) {
	url := strings.Replace(testenv.Postgres(t), "postgres@", "postgres:s3cret@", 1)
	db := openAt(t, url)
	if strings.Contains(db.Path(), "s3cret") || !strings.HasPrefix(db.Path(), "postgres://postgres@127.0.0.1:") {
		t.Errorf("Path() = %q, want the URL without the password", db.Path())
	}
	if db.Dialect() != "postgres" {
		t.Errorf("Dialect() = %q", db.Dialect())
	}
	if _, ok := db.Cluster(); !ok {
		t.Error("a PostgreSQL store has no Cluster")
	}
	if _, ok := open(t).Cluster(); ok {
		t.Error("a SQLite store has a Cluster")
	}
}

func TestOpenReportsAnUnreachablePostgreSQL(t *testing.T) {
	port := testenv.UnusedPort(t)
	_, err := store.Open(t.Context(), fmt.Sprintf("postgres://tandem:hunter2@127.0.0.1:%d/tandem?connect_timeout=5", port))
	if err == nil {
		t.Fatal("Open of a server nobody runs succeeded")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestPendingClaims(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		if err := db.PutPending(ctx, store.PendingRequest{ID: "per_1", Kind: "permission", SessionID: "ses_a", Created: 5, Data: []byte(`{"id":"per_1"}`)}); err != nil {
			t.Fatal(err)
		}
		t.Run("a stored request waits with no answer", func(t *testing.T) {
			r, err := db.GetPending(ctx, "per_1")
			if err != nil || r.State != store.PendingWaiting || r.Reply != nil || r.AnsweredBy != "" || string(r.Data) != `{"id":"per_1"}` {
				t.Fatalf("GetPending = %+v, %v", r, err)
			}
		})
		t.Run("of racing claims exactly one wins and every loser sees the winner's answer", func(t *testing.T) {
			type result struct {
				r   store.PendingRequest
				won bool
				err error
				by  string
			}
			results := make(chan result, 10)
			var wg sync.WaitGroup
			for i := range 10 {
				by := fmt.Sprintf("node-%d", i)
				wg.Go(func() {
					r, won, err := db.ClaimPending(ctx, "per_1", store.PendingClaim{Reply: []byte(`"` + by + `"`), By: by, At: int64(100 + i)})
					results <- result{r, won, err, by}
				})
			}
			wg.Wait()
			close(results)
			var winner string
			var all []result
			for res := range results {
				if res.err != nil {
					t.Fatal(res.err)
				}
				if res.won {
					if winner != "" {
						t.Fatalf("two claims won: %s and %s", winner, res.by)
					}
					winner = res.by
				}
				all = append(all, res)
			}
			if winner == "" {
				t.Fatal("no claim won")
			}
			for _, res := range all {
				if res.r.State != store.PendingClaimed || res.r.AnsweredBy != winner || string(res.r.Reply) != `"`+winner+`"` {
					t.Errorf("%s (won %v) sees %+v, want the winner %s's answer", res.by, res.won, res.r, winner)
				}
			}
			stored, err := db.GetPending(ctx, "per_1")
			if err != nil || stored.AnsweredBy != winner || stored.State != store.PendingClaimed {
				t.Errorf("stored: %+v, %v", stored, err)
			}
		})
		t.Run("a claim of an unknown request is not found", func(t *testing.T) {
			if _, won, err := db.ClaimPending(ctx, "per_none", store.PendingClaim{Reply: []byte(`"x"`), By: "me", At: 1}); !errors.Is(err, store.ErrNotFound) || won {
				t.Fatalf("won %v, err %v; want ErrNotFound", won, err)
			}
			if _, err := db.GetPending(ctx, "per_none"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetPending: %v, want ErrNotFound", err)
			}
		})
	})
}

// TestOnPostgreSQLTheSessionsVersionChangesOnEveryRead: other nodes change the sessions table
// unseen, so nothing derived from it may be kept.
func TestOnPostgreSQLTheSessionsVersionChangesOnEveryRead(t *testing.T) {
	db := openAt(t, testenv.Postgres(t))
	if a, b := db.SessionsVersion(), db.SessionsVersion(); a == b {
		t.Errorf("SessionsVersion read %d twice", a)
	}
}

func TestAPostgreSQLThatAcceptsOnlyReadsIsReportedAsReadOnly(t *testing.T) {
	url := testenv.Postgres(t)
	db := openAt(t, url)
	if _, err := db.SQL().ExecContext(t.Context(), `ALTER DATABASE `+strings.TrimPrefix(dbName(t, url), "/")+` SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	// Connections made from now on start read-only; the pool's existing ones are dropped first.
	db.SQL().SetMaxIdleConns(0)
	db.SQL().SetMaxIdleConns(16)
	err := db.PutSession(t.Context(), store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1, Data: []byte(`{}`)})
	if !store.ReadOnly(err) || store.Full(err) {
		t.Fatalf("a write to a read-only database: %v, want ReadOnly", err)
	}
	if _, err := store.Open(t.Context(), url); err == nil {
		t.Fatal("Open of a read-only database succeeded")
	}
}

func dbName(t *testing.T, raw string) string {
	t.Helper()
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}
