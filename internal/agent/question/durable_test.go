package question

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

func TestAQuestionWaitingAtACrashIsEndedVisiblyAtTheNextStart(t *testing.T) {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PutSession(t.Context(), store.Session{ID: "ses_1", Directory: "/proj", Title: "t", Created: 1, Updated: 1, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, 0)
	h.svc = New(Options{Bus: h.svc.bus, DB: db})
	running, stop := context.WithCancel(t.Context())
	req, done := h.ask(t, running, colour)
	// The process that asked dies here: nothing resolves the question, its row stays.
	if rows, err := db.ListPending(t.Context(), "question"); err != nil || len(rows) != 1 || rows[0].ID != req.ID {
		t.Fatalf("stored while waiting: %+v %v", rows, err)
	}
	restarted := bus.New(bus.Options{})
	defer restarted.Close()
	sub, _, err := restarted.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	next := &harness{svc: New(Options{Bus: restarted, DB: db}), sub: sub}

	if err := next.svc.EndInterrupted(t.Context(), nil); err != nil {
		t.Fatal(err)
	}

	typ, props := next.next(t)
	if typ != "question.rejected" || props["requestID"] != req.ID || props["sessionID"] != "ses_1" || props["cause"] != "cancel" {
		t.Fatalf("at start: %s %v, want question.rejected for %s with cause cancel", typ, props, req.ID)
	}
	if rows, err := db.ListPending(t.Context(), "question"); err != nil || len(rows) != 0 {
		t.Fatalf("still stored after the start: %+v %v", rows, err)
	}
	sub.Close()
	stop()
	wait(t, done)
}
