package permission

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// newTestService is a Service over a real SQLite file with the sessions ids stored.
func newTestService(t *testing.T, ids ...string) *Service {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, sid := range ids {
		if err := db.PutSession(t.Context(), store.Session{ID: sid, Directory: "/p", Title: "t", Created: 1, Updated: 1, Data: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	b := bus.New(bus.Options{})
	t.Cleanup(b.Close)
	return New(Options{DB: db, Bus: b})
}

// checkAnswering runs the check of ask in sc; when it asks, the request is answered with key (it
// fails the test if it asked and key is empty). It returns whether it asked and the check's error.
func checkAnswering(t *testing.T, s *Service, sc Scope, ask tool.Ask, key string) (bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Gate(sc).Check(ctx, ask) }()
	select {
	case err := <-done:
		return false, err
	case <-time.After(200 * time.Millisecond):
	}
	if key == "" {
		cancel()
		<-done
		t.Fatalf("%s %v asked in %s", ask.Permission, ask.Patterns, sc.SessionID)
	}
	var waiting []Request
	testenv.Eventually(t, "the request is listed", func() bool { waiting = s.List(sc.SessionID, ""); return len(waiting) == 1 })
	if err := s.Reply(waiting[0].ID, Answer{Decision: key}, pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	return true, <-done
}

func TestSessionGrantsEndWithTheSession(t *testing.T) {
	s := newTestService(t, "ses_1", "ses_2")
	first := Scope{SessionID: "ses_1", Directory: "/p", ProjectID: "p"}
	second := Scope{SessionID: "ses_2", Directory: "/p", ProjectID: "p"}
	echo := func(arg string) tool.Ask {
		return tool.Ask{Permission: "bash", Patterns: []string{"echo " + arg}, Always: []string{"echo *"}}
	}

	if asked, err := checkAnswering(t, s, first, echo("a"), KeySession); err != nil || !asked {
		t.Fatalf("first call: %v (asked %v)", err, asked)
	}
	if asked, err := checkAnswering(t, s, first, echo("b"), ""); err != nil || asked {
		t.Fatalf("a call the session grant covers: %v (asked %v)", err, asked)
	}
	if asked, err := checkAnswering(t, s, second, echo("c"), KeyReject); !errors.Is(err, ErrRejected) || !asked {
		t.Fatalf("another session: %v (asked %v), want it asked and rejected", err, asked)
	}
	s.EndSession("ses_1")
	if asked, err := checkAnswering(t, s, first, echo("d"), KeyOnce); err != nil || !asked {
		t.Fatalf("after the session ended: %v (asked %v), want it asked", err, asked)
	}
}

// TestALastingAnswerSettlesTheWaitingRequestsItDecides: a deny-always refuses the other waiting
// requests one of whose patterns it matches, and stores nothing for them.
func TestALastingAnswerSettlesTheWaitingRequestsItDecides(t *testing.T) {
	s := newTestService(t, "ses_1", "ses_2")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sc := func(sid string) Scope { return Scope{SessionID: sid, Directory: "/p", ProjectID: "p"} }
	ask := func(cmd, family string) tool.Ask {
		return tool.Ask{Permission: "bash", Patterns: []string{cmd}, Always: []string{family}}
	}
	results := make(chan error, 3)
	go func() { results <- s.Gate(sc("ses_1")).Check(ctx, ask("rm a", "rm *")) }()
	go func() {
		results <- s.Gate(sc("ses_2")).Check(ctx, tool.Ask{Permission: "bash", Patterns: []string{"rm b", "echo x"}, Always: []string{"rm *", "echo *"}})
	}()
	testenv.Eventually(t, "both are waiting", func() bool { return len(s.List("", "")) == 2 })
	first := s.List("ses_1", "")[0]
	if err := s.Reply(first.ID, Answer{Decision: KeyDenyAlways}, pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-results; !errors.Is(err, ErrRejected) {
			t.Fatalf("a denied call: %v", err)
		}
	}
	if got := s.List("", ""); len(got) != 0 {
		t.Fatalf("still waiting: %+v", got)
	}
	// Only what the person answered is remembered, not the families of the requests it settled.
	grants, err := s.Grants(ctx, "p")
	if err != nil || len(grants) != 1 || grants[0].Pattern != "rm *" || grants[0].Action != Deny {
		t.Fatalf("grants %+v %v, want the one deny of rm *", grants, err)
	}
	history, err := s.History(ctx, "ses_2", 10)
	if err != nil || len(history) != 1 || history[0].Reply != KeyDenyAlways || history[0].Client != "tandem" {
		t.Fatalf("history of the settled session: %+v %v", history, err)
	}
}
