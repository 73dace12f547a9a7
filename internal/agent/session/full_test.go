package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
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

// storeBreaker is a real model for the test: it streams a long answer and, before it finishes,
// makes the real SQLite database refuse writes the way a disk or a mount does (break), so the
// streamed text can no longer be stored.
type storeBreaker struct {
	answer string
	broke  func(ctx context.Context) error
}

func (b storeBreaker) Get(string) (provider.Provider, bool) { return b, true }
func (storeBreaker) Default() (string, string)              { return "breaker", "m" }
func (storeBreaker) Cost(string, string, provider.Usage) float64 {
	return 0
}
func (storeBreaker) ID() string { return "breaker" }

func (b storeBreaker) Stream(ctx context.Context, _ provider.Request, emit func(provider.Event) error) error {
	if err := emit(provider.Event{Kind: provider.TextDelta, Text: b.answer}); err != nil {
		return err
	}
	if err := b.broke(ctx); err != nil {
		return err
	}
	return emit(provider.Event{Kind: provider.Finished, Reason: provider.ReasonStop})
}

func TestAStoreThatFailsWhileTextStreamsEndsTheTurnOnce(t *testing.T) {
	// Random letters: SQLite stores them as they are, so they need pages the capped file lacks.
	answer := make([]byte, 200_000)
	for i := range answer {
		answer[i] = 'a' + byte(rand.IntN(26))
	}
	cases := []struct {
		name  string
		brake func(ctx context.Context, db *sql.DB) error
		hint  string
	}{
		{"the disk fills", func(ctx context.Context, db *sql.DB) error {
			var pages int
			if err := db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
				return err
			}
			_, err := db.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages))
			return err
		}, "free some space"},
		{"the database turns read-only", func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(ctx, "PRAGMA query_only = ON")
			return err
		}, "read-only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			db, err := store.Open(ctx, filepath.Join(t.TempDir(), "tandem.db"))
			if err != nil {
				t.Fatal(err)
			}
			// One connection, so what breaks it applies to every statement that follows.
			db.SQL().SetMaxOpenConns(1)
			b := bus.New(bus.Options{})
			breaker := storeBreaker{answer: string(answer), broke: func(ctx context.Context) error { return c.brake(ctx, db.SQL()) }}
			s := New(Options{DB: db, Bus: b, Version: "test", Agent: &Agent{Providers: breaker, MaxSteps: 3}})
			t.Cleanup(func() {
				stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				s.Shutdown(stop)
				b.Close()
				if err := db.Close(); err != nil {
					t.Error(err)
				}
			})
			sess, err := s.Create(ctx, t.TempDir(), CreateInput{Title: "no title to generate"})
			if err != nil {
				t.Fatal(err)
			}
			sub, _, err := b.Subscribe("", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()

			reply, err := s.Prompt(ctx, sess.ID, text("say a lot"))

			if err != nil {
				t.Fatal(err)
			}
			if reply.Info.Error == nil || !strings.Contains(fmt.Sprint(reply.Info.Error.Data["message"]), c.hint) {
				t.Errorf("the reply's error %+v does not say what to do (%q)", reply.Info.Error, c.hint)
			}
			if st := s.Statuses(); len(st) != 0 {
				t.Fatalf("the session is still %v after the failed turn", st)
			}
			evs, _ := sub.Take(nil)
			var errorsSeen int
			idle := false       // session.idle after the error
			var closed *Message // the assistant message as last announced
			announced := map[string]bool{}
			for _, ev := range evs {
				var env struct {
					Type       string `json:"type"`
					Properties struct {
						Part   Part            `json:"part"`
						Info   json.RawMessage `json:"info"`
						PartID string          `json:"partID"`
					} `json:"properties"`
				}
				if err := json.Unmarshal(ev.Payload, &env); err != nil {
					t.Fatal(err)
				}
				switch env.Type {
				case "session.error":
					errorsSeen++
				case "session.idle":
					idle = errorsSeen > 0
				case "message.updated":
					var m Message
					if err := json.Unmarshal(env.Properties.Info, &m); err != nil {
						t.Fatal(err)
					}
					if m.Role == RoleAssistant {
						closed = &m
					}
				case "message.part.updated":
					announced[env.Properties.Part.ID] = true
				case "message.part.removed":
					delete(announced, env.Properties.PartID)
				}
			}
			if errorsSeen != 1 {
				t.Errorf("session.error was sent %d times, want once", errorsSeen)
			}
			if closed == nil || closed.Error == nil || closed.Time.Completed == 0 {
				t.Fatalf("the assistant message was last announced as %+v: want it closed with the error", closed)
			}
			if !strings.Contains(fmt.Sprint(closed.Error.Data["message"]), c.hint) {
				t.Errorf("the announced error %v does not say what to do", closed.Error.Data)
			}
			if !idle {
				t.Error("no session.idle after the error")
			}
			// What is still announced is stored: the store can be read while it refuses writes.
			page, err := s.Messages(ctx, sess.ID, MessagesInput{})
			if err != nil {
				t.Fatal(err)
			}
			for _, wp := range page.Items {
				for _, p := range wp.Parts {
					delete(announced, p.ID)
				}
			}
			if len(announced) != 0 {
				t.Errorf("parts announced and neither stored nor withdrawn: %v", announced)
			}
		})
	}
}
