package testenv_test

import (
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestPostgresGivesEachCallADatabaseOfItsOwn(t *testing.T) {
	url := testenv.Postgres(t)
	out, err := exec.CommandContext(t.Context(), "psql", url, "-Atc", "SELECT current_database()").CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "t_") {
		t.Errorf("connected to %q, want a database made for the test", got)
	}
}

func TestSharePostgresGivesEachCallADatabaseOnOneServer(t *testing.T) {
	t.Setenv("TANDEM_TEST_DATABASE_URL", "") // restored when the test ends
	stop, err := testenv.SharePostgres(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	a, b := testenv.Postgres(t), testenv.Postgres(t)
	ua, err := url.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	ub, err := url.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if ua.Host != ub.Host || ua.Path == ub.Path {
		t.Errorf("got %s and %s, want two databases on one server", a, b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), "psql", a, "-Atc", "SELECT 1").CombinedOutput(); err == nil {
		t.Errorf("the server still answers after stop: %s", out)
	}
}
