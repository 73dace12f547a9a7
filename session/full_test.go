package session

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tandem/bus"
	"tandem/provider"
	"tandem/store"
	"tandem/tool"
)

// TestADiskThatFillsMidTurnFailsTheTurnWithAClearMessage makes SQLite itself report a full
// database (max_page_count caps the file at its current size) while a turn runs.
func TestADiskThatFillsMidTurnFailsTheTurnWithAClearMessage(t *testing.T) {
	ctx := t.Context()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	builtins := tool.Builtins(tool.Options{})
	s := New(Options{DB: db, Bus: b, Version: "test", Agent: &Agent{Providers: demoOnly{provider.NewDemo()}, Tools: builtins.All}})
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		s.Shutdown(stop)
		b.Close()
		db.Close()
	})
	sess, err := s.Create(ctx, t.TempDir(), CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	// One connection, so the cap applies to every statement that follows.
	db.SQL().SetMaxOpenConns(1)
	var pages int
	if err := db.SQL().QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// The user message fits in the pages there are; the command's 60 KB of output does not.
	reply, err := s.Prompt(ctx, sess.ID, text("run: head -c 60000 /dev/zero | tr '\\0' x"))

	if err != nil || reply.Info.Error == nil {
		t.Fatalf("the turn ended with %v, error %+v: want a failed turn", err, reply.Info.Error)
	}
	evs, _ := sub.Take(nil)
	for _, ev := range evs {
		if ev.Type == "session.error" {
			if !strings.Contains(string(ev.Payload), "database or disk is full") || !strings.Contains(string(ev.Payload), "free some space") {
				t.Fatalf("session.error without the hint: %s", ev.Payload)
			}
			return
		}
	}
	t.Fatal("no session.error")
}
