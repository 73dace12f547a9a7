package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"go.uber.org/goleak"
	"time"
)

// Postgres starts a throwaway PostgreSQL cluster for the test and returns the URL of a fresh
// database in it. TANDEM_TEST_DATABASE_URL, when set, names a server to use instead: each call
// then creates a database of its own there (the URL's user must be allowed to). Without either,
// the test ends through Missing (Debian: apt-get install postgresql).
//
// The cluster runs as the "postgres" user when the test runs as root (PostgreSQL refuses root),
// listens on 127.0.0.1 and a socket in its own directory only, and is stopped (immediate mode)
// and deleted when the test ends.
func Postgres(tb testing.TB) string {
	tb.Helper()
	if base := os.Getenv("TANDEM_TEST_DATABASE_URL"); base != "" {
		return createDatabase(tb, base)
	}
	base, stop, err := startPostgres(tb.Context())
	var missing errMissing
	if errors.As(err, &missing) {
		Missing(tb, "%s", missing)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Errorf("stop PostgreSQL: %v", err)
		}
	})
	return createDatabase(tb, base)
}

// SharePostgres starts one throwaway PostgreSQL cluster for a whole test binary (call it from
// TestMain, and stop after m.Run) and points TANDEM_TEST_DATABASE_URL at it, so that each Postgres
// call of the binary creates a database there rather than starting a cluster of its own (seconds
// each). When TANDEM_TEST_DATABASE_URL is set already, or PostgreSQL is not installed, it starts
// nothing: Postgres then behaves as it does without it.
func SharePostgres(ctx context.Context) (stop func() error, err error) {
	nothing := func() error { return nil }
	if os.Getenv("TANDEM_TEST_DATABASE_URL") != "" {
		return nothing, nil
	}
	base, stopCluster, err := startPostgres(ctx)
	var missing errMissing
	if errors.As(err, &missing) {
		return nothing, nil
	}
	if err != nil {
		return nil, err
	}
	if err := os.Setenv("TANDEM_TEST_DATABASE_URL", base); err != nil {
		return nil, errors.Join(err, stopCluster())
	}
	return func() error {
		os.Unsetenv("TANDEM_TEST_DATABASE_URL")
		return stopCluster()
	}, nil
}

// errMissing says PostgreSQL is not installed here.
type errMissing string

func (e errMissing) Error() string { return string(e) }

// startPostgres initialises and starts a cluster in a new temporary directory and returns the URL
// of its "postgres" database and a function that stops it (immediate mode) and deletes it.
func startPostgres(ctx context.Context) (base string, stop func() error, err error) {
	bin, err := postgresBin()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "tandem-pg-")
	if err != nil {
		return "", nil, err
	}
	attr, err := postgresUser(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	run := func(ctx context.Context, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.SysProcAttr = attr
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", name, err, out)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	data := filepath.Join(dir, "data")
	if err := run(ctx, "initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C"); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("initdb: %w", err)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", port, dir)
	if err := run(ctx, "pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start PostgreSQL: %w\n%s", err, log)
	}
	stop = func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := run(ctx, "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
		return errors.Join(err, os.RemoveAll(dir))
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// postgresBin finds the directory of initdb and pg_ctl: on PATH, or Debian's versioned directory.
func postgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if q, err := exec.LookPath("pg_ctl"); err == nil && filepath.Dir(p) == filepath.Dir(q) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errMissing("PostgreSQL's initdb is not installed (apt-get install postgresql)")
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// createDatabase makes a database named after the test on the server at base and returns its URL.
// It uses psql, which the PostgreSQL packages install beside the server.
func createDatabase(tb testing.TB, base string) string {
	tb.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		Missing(tb, "psql is not installed (apt-get install postgresql-client)")
	}
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, psql, base, "-v", "ON_ERROR_STOP=1", "-qc", "CREATE DATABASE "+name).CombinedOutput()
	if err != nil {
		tb.Fatalf("create database: %v\n%s", err, out)
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("TANDEM_TEST_DATABASE_URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// MainWithPostgres is a TestMain for a package whose tests use PostgreSQL: it runs them on one
// shared server (SharePostgres), stops it, checks that no goroutine outlived the tests, and returns
// the exit code.
func MainWithPostgres(m *testing.M) int {
	stop, err := SharePostgres(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		return 1
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop PostgreSQL:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}
