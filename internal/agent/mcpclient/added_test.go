package mcpclient

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

func TestServersAddedOverTheAPIOutliveARestartUntilRemoved(t *testing.T) {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := t.TempDir()
	var configured Config
	if err := json.Unmarshal([]byte(`{"type":"local","command":["/nonexistent/configured"],"enabled":false}`), &configured); err != nil {
		t.Fatal(err)
	}
	opts := Options{Directory: dir, Added: db, Servers: map[string]Config{"fromconfig": configured, "both": configured}}
	cfg, _ := stdioConfig(t)

	first := newEnv(t, opts)
	mustAdd(t, first, "added", cfg)
	if _, err := first.m.Add(t.Context(), "both", json.RawMessage(`{"type":"local","command":["/nonexistent/added"],"enabled":false}`)); err != nil {
		t.Fatal(err)
	}
	if err := first.m.Close(); err != nil {
		t.Fatal(err)
	}

	// The next start (the same store and directory) finds them again and connects them.
	second := newEnv(t, opts)
	if err := second.m.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	second.m.Start(t.Context())
	if st := second.m.Status(); st["added"].Status != Connected {
		t.Fatalf("after a restart: %+v", st)
	}
	other := newEnv(t, Options{Directory: t.TempDir(), Added: db})
	if err := other.m.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := other.m.Status(); len(st) != 0 {
		t.Fatalf("another project got this project's servers: %+v", st)
	}

	t.Run("removing an added server stops it, announces it and forgets it for later starts", func(t *testing.T) {
		st, err := second.m.Remove(t.Context(), "added")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st["added"]; ok {
			t.Fatalf("still listed: %+v", st)
		}
		second.waitEvent(t, "mcp.server.removed", func(p map[string]any) bool { return p["server"] == "added" })
		rows, err := db.MCPServers(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Name == "added" {
				t.Fatal("still stored")
			}
		}
	})
	t.Run("removing a server that replaced a configured one brings the configured one back", func(t *testing.T) {
		if _, err := second.m.Remove(t.Context(), "both"); err != nil {
			t.Fatal(err)
		}
		second.waitEvent(t, "mcp.status.changed", func(p map[string]any) bool { return p["server"] == "both" })
		if _, err := second.m.Remove(t.Context(), "both"); !errs.Is(err, errs.Conflict) {
			t.Fatalf("removing the configured one again = %v, want Conflict", err)
		}
	})
	t.Run("a server only the config file defines cannot be removed over the API", func(t *testing.T) {
		if _, err := second.m.Remove(t.Context(), "fromconfig"); !errs.Is(err, errs.Conflict) {
			t.Fatalf("Remove = %v, want Conflict", err)
		}
	})
	t.Run("an unknown server is not found", func(t *testing.T) {
		if _, err := second.m.Remove(t.Context(), "nope"); !errs.Is(err, errs.NotFound) {
			t.Fatalf("Remove = %v, want NotFound", err)
		}
	})
}
