package permission

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// TestAResumedRequestsTimeoutCountsFromWhenItWasFirstAsked: a request asked two minutes before a
// restart, under a one-minute timeout, times out as soon as its resumed call waits for it.
func TestAResumedRequestsTimeoutCountsFromWhenItWasFirstAsked(t *testing.T) {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PutSession(t.Context(), store.Session{ID: "ses_1", Directory: "/p", Title: "t", Created: 1, Updated: 1, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	defer b.Close()
	s := New(Options{DB: db, Bus: b, Config: Config{Timeout: time.Minute}})
	req := Request{PermissionRequest: api.PermissionRequest{ID: id.NewSource().New(id.Permission), SessionID: "ses_1", Permission: "bash",
		Patterns: []string{"rm -rf build"}, Metadata: map[string]any{}, Always: []string{}}, directory: "/p", projectID: "global", ctx: t.Context()}
	req.Time.Created = time.Now().Add(-2 * time.Minute).UnixMilli()
	if err := s.persist(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Stored(t.Context(), nil)
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored %+v %v", stored, err)
	}
	s.Reserve(stored[0])
	if got := s.List("ses_1", ""); len(got) != 1 || got[0].ID != req.ID {
		t.Fatalf("listed %+v before the resumed call asked, want %s", got, req.ID)
	}
	gate := s.Resume(Scope{SessionID: "ses_1", Directory: "/p", ProjectID: "global"}, stored[0])

	// Were the minute counted from now, this deadline would end the wait first (a context error,
	// not a timeout).
	bounded, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = gate.Check(bounded, tool.Ask{Permission: "bash", Patterns: []string{"rm -rf build"}})

	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Check = %v, want the timeout of a request asked two minutes ago", err)
	}
	if rows, err := db.ListPending(t.Context(), "permission"); err != nil || len(rows) != 0 {
		t.Fatalf("still stored after the timeout: %+v %v", rows, err)
	}
}
