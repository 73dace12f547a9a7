package permission

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

func TestDirectoriesAreThoseNamedExactlyAndAllowedWithoutAsking(t *testing.T) {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg, err := ParseConfig(json.RawMessage(`{"external_directory": {
		"*": "ask",
		"/srv/data/*": "allow",
		"/srv/cache/**": "allow",
		"/srv/cache/secret/*": "deny",
		"/srv/logs/**": "allow",
		"/home/*/notes/*": "allow",
		"relative/*": "allow",
		"/srv/asked/*": "ask"
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{DB: db, Config: cfg})
	sc := Scope{SessionID: "ses_1", Directory: "/p", ProjectID: "global",
		Rules: []Rule{{Permission: "external_directory", Pattern: "/srv/session/*", Action: Allow}}}
	got, err := gate{s: s, sc: sc}.Directories(t.Context(), "external_directory")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/srv/data", "/srv/logs", "/srv/session"}
	if !slices.Equal(got, want) {
		t.Fatalf("Directories = %v, want %v (a wildcard elsewhere, a relative path, an ask and a deny name none; a deny inside leaves a directory out)", got, want)
	}
}
