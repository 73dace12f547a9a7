package routes_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestADatabaseThatTurnsReadOnlyGetsAClearError: the real SQLite file stops taking writes while the
// server runs (query_only, SQLite's own read-only refusal); a write is a 503 ReadOnlyStorageError
// that says what to do, reads still work, and the write succeeds once the database takes writes again.
func TestADatabaseThatTurnsReadOnlyGetsAClearError(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	s.createSession(t, `{"title":"before"}`)
	db := s.db.SQL()
	db.SetMaxOpenConns(1) // one connection, so the pragma holds for every statement that follows
	if _, err := db.ExecContext(t.Context(), "PRAGMA query_only = ON"); err != nil {
		t.Fatal(err)
	}

	status, h, body := s.send(t, s.newRequest(t, http.MethodPost, "/session", `{"title":"refused"}`))

	if status != http.StatusServiceUnavailable {
		t.Fatalf("POST /session on a read-only database: %d %s", status, body)
	}
	if e := requireErrorShape(t, h, body); e.Name != "ReadOnlyStorageError" || !strings.Contains(e.Data["message"].(string), "Make them writable") {
		t.Fatalf("error %+v", e)
	}
	var list []map[string]any
	s.call(t, http.MethodGet, "/session", "", http.StatusOK, &list)
	if len(list) != 1 {
		t.Fatalf("%d sessions listed, want the one stored before", len(list))
	}
	if _, err := db.ExecContext(t.Context(), "PRAGMA query_only = OFF"); err != nil {
		t.Fatal(err)
	}
	s.createSession(t, `{"title":"after"}`)
}
