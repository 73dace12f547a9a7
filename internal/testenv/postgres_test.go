package testenv_test

import (
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
