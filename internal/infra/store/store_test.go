package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

func put(t *testing.T, db *store.DB, s store.Session) {
	t.Helper()
	if s.Data == nil {
		s.Data = []byte(fmt.Sprintf(`{"id":%q}`, s.ID))
	}
	if err := db.PutSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func ids(rows []store.Session) string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return fmt.Sprint(out)
}

func TestOpenUsesWALAndForeignKeysAndMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tandem.db")
	ctx := context.Background()
	files := migrationNames(t, "sqlite")
	for range 2 {
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		var fk, applied int
		if err := db.SQL().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q (%v), want wal", mode, err)
		}
		if err := db.SQL().QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
			t.Errorf("foreign_keys = %d (%v), want 1", fk, err)
		}
		if err := db.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM migrations").Scan(&applied); err != nil || applied != len(files) {
			t.Errorf("%d migrations recorded (%v), want %d, once each", applied, err, len(files))
		}
		if db.Path() != path {
			t.Errorf("Path() = %q", db.Path())
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenReportsAnUnusablePath(t *testing.T) {
	if _, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "missing", "dir", "tandem.db")); err == nil {
		t.Fatal("Open in a directory that does not exist succeeded")
	}
}

func TestSessionQueries(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "alpha 100%", Created: 1, Updated: 10})
		put(t, db, store.Session{ID: "ses_b", Directory: "/p", Title: "beta_x", Created: 2, Updated: 20})
		put(t, db, store.Session{ID: "ses_c", Directory: "/p", ParentID: "ses_a", Title: "child", Created: 3, Updated: 30})
		put(t, db, store.Session{ID: "ses_d", Directory: "/q", Title: "elsewhere", Created: 4, Updated: 20})
		put(t, db, store.Session{ID: "ses_e", Directory: "/p", Title: "betaXx", Created: 5, Updated: 20})

		tests := []struct {
			name string
			q    store.SessionQuery
			want string
		}{
			{"everything, newest first, ties by ID descending", store.SessionQuery{}, "[ses_c ses_e ses_d ses_b ses_a]"},
			{"one directory", store.SessionQuery{Directory: "/p"}, "[ses_c ses_e ses_b ses_a]"},
			{"roots only", store.SessionQuery{Directory: "/p", RootsOnly: true}, "[ses_e ses_b ses_a]"},
			{"children of a parent", store.SessionQuery{ParentID: "ses_a"}, "[ses_c]"},
			{"updated since", store.SessionQuery{Since: 20}, "[ses_c ses_e ses_d ses_b]"},
			{"search is case-insensitive", store.SessionQuery{Search: "ALPHA"}, "[ses_a]"},
			{"search treats % literally", store.SessionQuery{Search: "100%"}, "[ses_a]"},
			{"search treats _ literally", store.SessionQuery{Search: "beta_"}, "[ses_b]"},
			{"a limit", store.SessionQuery{Limit: 2}, "[ses_c ses_e]"},
			{"after a position, inside a tie", store.SessionQuery{AfterUpdated: 20, AfterID: "ses_e"}, "[ses_d ses_b ses_a]"},
			{"after the last position", store.SessionQuery{AfterUpdated: 10, AfterID: "ses_a"}, "[]"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rows, err := db.ListSessions(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(rows); got != tt.want {
					t.Errorf("got %s, want %s", got, tt.want)
				}
			})
		}

		got, err := db.GetSession(ctx, "ses_c")
		if err != nil || got.ParentID != "ses_a" || got.Title != "child" || string(got.Data) != `{"id":"ses_c"}` {
			t.Errorf("GetSession = %+v, %v", got, err)
		}
		if _, err := db.GetSession(ctx, "ses_zzz"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown session: %v, want ErrNotFound", err)
		}
		put(t, db, store.Session{ID: "ses_c", Directory: "/p", Title: "renamed", Created: 3, Updated: 40})
		if got, _ := db.GetSession(ctx, "ses_c"); got.Title != "renamed" || got.Updated != 40 || got.ParentID != "" {
			t.Errorf("upsert: %+v", got)
		}
	})
}

func TestDeleteCascadesToMessagesPartsAndTodos(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		put(t, db, store.Session{ID: "ses_b", Directory: "/p", Title: "b", Created: 1, Updated: 1})
		for _, sid := range []string{"ses_a", "ses_b"} {
			if err := db.PutMessage(ctx, store.Message{ID: "msg_" + sid, SessionID: sid, Created: 1, Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if err := db.PutPart(ctx, store.Part{ID: "prt_" + sid, MessageID: "msg_" + sid, SessionID: sid, Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if err := db.PutTodos(ctx, sid, []byte(`[]`)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.DeleteSession(ctx, "ses_a"); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteSession(ctx, "ses_a"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete: %v, want ErrNotFound", err)
		}
		for table, want := range map[string]int{"messages": 1, "parts": 1, "todos": 1} {
			var n int
			if err := db.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil || n != want {
				t.Errorf("%s: %d rows (%v), want only the other session's %d", table, n, err, want)
			}
		}
		if todos, err := db.Todos(ctx, "ses_a"); err != nil || todos != nil {
			t.Errorf("todos of a deleted session: %s %v", todos, err)
		}
		if err := db.PutMessage(ctx, store.Message{ID: "msg_orphan", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)}); err == nil {
			t.Error("a message for a deleted session was accepted")
		}
	})
}

func TestDeletingAMessageOrAPart(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		put(t, db, store.Session{ID: "ses_b", Directory: "/p", Title: "b", Created: 1, Updated: 1})
		for _, m := range []struct{ sid, mid string }{{"ses_a", "msg_1"}, {"ses_a", "msg_2"}, {"ses_b", "msg_3"}} {
			if err := db.PutMessage(ctx, store.Message{ID: m.mid, SessionID: m.sid, Created: 1, Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"a", "b"} {
				if err := db.PutPart(ctx, store.Part{ID: "prt_" + m.mid + n, MessageID: m.mid, SessionID: m.sid, Data: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		count := func(table string) int {
			t.Helper()
			var n int
			if err := db.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		tests := []struct {
			name          string
			del           func() error
			want          error
			messages, prt int
		}{
			{"a message of another session is not found", func() error { return db.DeleteMessage(ctx, "ses_a", "msg_3") }, store.ErrNotFound, 3, 6},
			{"a part of another message is not found", func() error { return db.DeletePart(ctx, "ses_a", "msg_1", "prt_msg_2a") }, store.ErrNotFound, 3, 6},
			{"a part goes alone", func() error { return db.DeletePart(ctx, "ses_a", "msg_1", "prt_msg_1a") }, nil, 3, 5},
			{"a message goes with its parts", func() error { return db.DeleteMessage(ctx, "ses_a", "msg_2") }, nil, 2, 3},
			{"a message deleted twice is not found", func() error { return db.DeleteMessage(ctx, "ses_a", "msg_2") }, store.ErrNotFound, 2, 3},
			{"a deleted part is not found", func() error { return db.DeletePart(ctx, "ses_a", "msg_1", "prt_msg_1a") }, store.ErrNotFound, 2, 3},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := tt.del(); !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if m, p := count("messages"), count("parts"); m != tt.messages || p != tt.prt {
					t.Fatalf("%d messages and %d parts left, want %d and %d", m, p, tt.messages, tt.prt)
				}
			})
		}
	})
}

func TestMessagePaging(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		for i := range 5 {
			mid := fmt.Sprintf("msg_%d", i)
			if err := db.PutMessage(ctx, store.Message{ID: mid, SessionID: "ses_a", Created: int64(100 + i/2), Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			for j := range 2 {
				if err := db.PutPart(ctx, store.Part{ID: fmt.Sprintf("prt_%d_%d", i, 1-j), MessageID: mid, SessionID: "ses_a", Data: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A message without parts (an aborted reply) is listed too.
		if err := db.PutMessage(ctx, store.Message{ID: "msg_5", SessionID: "ses_a", Created: 103, Data: []byte(`{"n":5}`)}); err != nil {
			t.Fatal(err)
		}
		msgIDs := func(ms []store.Message) string {
			var out []string
			for _, m := range ms {
				out = append(out, m.ID)
			}
			return fmt.Sprint(out)
		}
		tests := []struct {
			name string
			q    store.MessageQuery
			want string
		}{
			{"all, oldest first", store.MessageQuery{SessionID: "ses_a"}, "[msg_0 msg_1 msg_2 msg_3 msg_4 msg_5]"},
			{"the newest two", store.MessageQuery{SessionID: "ses_a", Limit: 2}, "[msg_4 msg_5]"},
			{"a limit larger than the session is all of it", store.MessageQuery{SessionID: "ses_a", Limit: 50}, "[msg_0 msg_1 msg_2 msg_3 msg_4 msg_5]"},
			{"two before msg_3, across a created-time tie", store.MessageQuery{SessionID: "ses_a", Limit: 2, BeforeCreated: 101, BeforeID: "msg_3"}, "[msg_1 msg_2]"},
			{"everything before msg_1", store.MessageQuery{SessionID: "ses_a", BeforeCreated: 100, BeforeID: "msg_1"}, "[msg_0]"},
			{"from msg_3 on, across a created-time tie", store.MessageQuery{SessionID: "ses_a", FromCreated: 101, FromID: "msg_3"}, "[msg_3 msg_4 msg_5]"},
			{"from msg_1 up to msg_3", store.MessageQuery{SessionID: "ses_a", FromCreated: 100, FromID: "msg_1", BeforeCreated: 101, BeforeID: "msg_3"}, "[msg_1 msg_2]"},
			{"another session has none", store.MessageQuery{SessionID: "ses_none"}, "[]"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				msgs, parts, err := db.ListMessages(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if got := msgIDs(msgs); got != tt.want {
					t.Errorf("got %s, want %s", got, tt.want)
				}
				for _, m := range msgs {
					ps := parts[m.ID]
					if m.ID == "msg_5" {
						if len(ps) != 0 || string(m.Data) != `{"n":5}` {
							t.Errorf("msg_5: %s with parts %+v, want its document and no parts", m.Data, ps)
						}
						continue
					}
					if len(ps) != 2 || ps[0].ID > ps[1].ID || ps[0].MessageID != m.ID || ps[0].SessionID != "ses_a" {
						t.Errorf("parts of %s: %+v, want two in ID order", m.ID, ps)
					}
				}
			})
		}
		m, ps, err := db.GetMessage(ctx, "ses_a", "msg_2")
		if err != nil || m.Created != 101 || len(ps) != 2 || ps[0].ID != "prt_2_0" {
			t.Errorf("GetMessage: %+v %+v %v", m, ps, err)
		}
		if _, _, err := db.GetMessage(ctx, "ses_other", "msg_2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a message asked for through another session: %v", err)
		}
		if c, err := db.MessageCursor(ctx, "ses_a", "msg_4"); err != nil || c != 102 {
			t.Errorf("MessageCursor = %d, %v", c, err)
		}
		for _, c := range []struct {
			created int64
			id      string
			want    int
		}{{100, "msg_0", 0}, {101, "msg_3", 3}, {101, "msg_9", 4}, {200, "msg_0", 6}} {
			if n, err := db.CountMessagesBefore(ctx, "ses_a", c.created, c.id); err != nil || n != c.want {
				t.Errorf("CountMessagesBefore(%d, %s) = %d, %v; want %d", c.created, c.id, n, err, c.want)
			}
		}
	})
}

// The count of messages before a position comes from the session's message counter, which the
// database keeps through every insert, rewrite and delete.
func TestCountMessagesBeforeFollowsEveryChange(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		put(t, db, store.Session{ID: "ses_b", Directory: "/p", Title: "b", Created: 1, Updated: 1})
		putMessage := func(sessionID, id string, created int64) {
			t.Helper()
			if err := db.PutMessage(ctx, store.Message{ID: id, SessionID: sessionID, Created: created, Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		before := func(sessionID string, created int64, id string) int {
			t.Helper()
			n, err := db.CountMessagesBefore(ctx, sessionID, created, id)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		for i := range 4 {
			putMessage("ses_a", fmt.Sprintf("msg_%d", i), int64(10+i))
		}
		putMessage("ses_b", "msg_b", 11)
		steps := []struct {
			name   string
			change func()
			want   int // messages of ses_a before (13, msg_3)
		}{
			{"four messages, three of them before the last", func() {}, 3},
			{"a message written again is not counted twice", func() { putMessage("ses_a", "msg_1", 11) }, 3},
			{"a message inserted among the earlier ones is counted", func() { putMessage("ses_a", "msg_0a", 10) }, 4},
			{"a message after the position is not", func() { putMessage("ses_a", "msg_9", 50) }, 4},
			{"a deleted message no longer counts", func() {
				if err := db.DeleteMessage(ctx, "ses_a", "msg_0"); err != nil {
					t.Fatal(err)
				}
			}, 3},
			{"another session's messages never count", func() { putMessage("ses_b", "msg_b2", 1) }, 3},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				st.change()
				if got := before("ses_a", 13, "msg_3"); got != st.want {
					t.Errorf("CountMessagesBefore = %d, want %d", got, st.want)
				}
			})
		}
		if err := db.DeleteSession(ctx, "ses_a"); err != nil {
			t.Fatal(err)
		}
		if got := before("ses_a", 13, "msg_3"); got != 0 {
			t.Errorf("a deleted session counts %d messages, want 0", got)
		}
		if got := before("ses_b", 100, "msg_z"); got != 2 {
			t.Errorf("the other session counts %d messages after the first was deleted, want 2", got)
		}
	})
}

func TestCrashRecoveryQueries(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		msgs := map[string]string{
			"msg_done":    `{"role":"assistant","time":{"created":1,"completed":2}}`,
			"msg_running": `{"role":"assistant","time":{"created":1}}`,
			"msg_user":    `{"role":"user","time":{"created":1}}`,
		}
		for mid, data := range msgs {
			if err := db.PutMessage(ctx, store.Message{ID: mid, SessionID: "ses_a", Created: 1, Data: []byte(data)}); err != nil {
				t.Fatal(err)
			}
		}
		parts := map[string]string{
			"prt_pending": `{"type":"tool","state":{"status":"pending"}}`,
			"prt_running": `{"type":"tool","state":{"status":"running"}}`,
			"prt_done":    `{"type":"tool","state":{"status":"completed"}}`,
			"prt_text":    `{"type":"text","text":"running"}`,
		}
		for pid, data := range parts {
			if err := db.PutPart(ctx, store.Part{ID: pid, MessageID: "msg_running", SessionID: "ses_a", Data: []byte(data)}); err != nil {
				t.Fatal(err)
			}
		}
		unfinished, err := db.UnfinishedMessages(ctx)
		if err != nil || len(unfinished) != 1 || unfinished[0].ID != "msg_running" {
			t.Errorf("UnfinishedMessages = %+v, %v", unfinished, err)
		}
		running, err := db.RunningParts(ctx)
		got := map[string]bool{}
		for _, p := range running {
			got[p.ID] = true
		}
		if err != nil || len(running) != 2 || !got["prt_pending"] || !got["prt_running"] {
			t.Errorf("RunningParts = %+v, %v", running, err)
		}
	})
}

// TestConcurrentWritersDoNotFail proves the pool, WAL and busy timeout let writers queue instead of
// failing with SQLITE_BUSY.
func TestConcurrentWritersDoNotFail(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 400)
		for w := range 8 {
			wg.Go(func() {
				for i := range 50 {
					id := fmt.Sprintf("ses_%d_%d", w, i)
					errs <- db.PutSession(ctx, store.Session{ID: id, Directory: "/p", Title: id, Created: 1, Updated: int64(i), Data: []byte(`{}`)})
					if _, err := db.ListSessions(ctx, store.SessionQuery{Limit: 5}); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		rows, err := db.ListSessions(ctx, store.SessionQuery{})
		if err != nil || len(rows) != 400 {
			t.Fatalf("%d sessions stored (%v), want 400", len(rows), err)
		}
	})
}

func TestTxCommitsOrRollsBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		boom := errors.New("boom")
		err := db.Tx(ctx, func(tx store.Tx) error {
			if err := tx.PutSession(ctx, store.Session{ID: "ses_a", Directory: "/p", Title: "changed", Created: 1, Updated: 2, Data: []byte("{}")}); err != nil {
				return err
			}
			if err := tx.PutSession(ctx, store.Session{ID: "ses_b", Directory: "/p", Title: "b", Created: 1, Updated: 2, Data: []byte("{}")}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Tx returned %v, want the function's error", err)
		}
		if got, _ := db.GetSession(ctx, "ses_a"); got.Title != "a" {
			t.Fatalf("a failed transaction was committed: title %q", got.Title)
		}
		if _, err := db.GetSession(ctx, "ses_b"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a failed transaction stored its second row: %v", err)
		}
		if err := db.Tx(ctx, func(tx store.Tx) error {
			return tx.PutSession(ctx, store.Session{ID: "ses_a", Directory: "/p", Title: "changed", Created: 1, Updated: 2, Data: []byte("{}")})
		}); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.GetSession(ctx, "ses_a"); got.Title != "changed" {
			t.Fatalf("a committed transaction was lost: title %q", got.Title)
		}
	})
}

func TestTheDatabaseIsReadableByItsOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tandem.db")
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(f)
		if err != nil {
			continue // -wal and -shm exist only while written
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(f), mode)
		}
	}
}

func TestSessionsVersionChangesWithEveryCommittedSessionChange(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	changes := []struct {
		name    string
		change  func() error
		changed bool
	}{
		{"a session put on the pool", func() error {
			return db.PutSession(ctx, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1, Data: []byte(`{}`)})
		}, true},
		{"a message put", func() error {
			return db.PutMessage(ctx, store.Message{ID: "msg_1", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)})
		}, false},
		{"a session put in a committed transaction", func() error {
			return db.Tx(ctx, func(q store.Tx) error {
				return q.PutSession(ctx, store.Session{ID: "ses_b", Directory: "/p", Title: "b", Created: 2, Updated: 2, Data: []byte(`{}`)})
			})
		}, true},
		{"a session put in a transaction rolled back", func() error {
			err := db.Tx(ctx, func(q store.Tx) error {
				if err := q.PutSession(ctx, store.Session{ID: "ses_c", Directory: "/p", Title: "c", Created: 3, Updated: 3, Data: []byte(`{}`)}); err != nil {
					return err
				}
				return errors.New("boom")
			})
			if err == nil {
				return errors.New("the transaction did not fail")
			}
			return nil
		}, false},
		{"a transaction without sessions", func() error {
			return db.Tx(ctx, func(q store.Tx) error { return q.PutTodos(ctx, "ses_a", []byte(`[]`)) })
		}, false},
		{"a session deleted", func() error { return db.DeleteSession(ctx, "ses_b") }, true},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			before := db.SessionsVersion()
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
			if changed := db.SessionsVersion() != before; changed != c.changed {
				t.Errorf("version changed: %v, want %v", changed, c.changed)
			}
		})
	}
}

func TestAPendingRequestIsClaimedOnceAndKeptWhenFinished(t *testing.T) {
	ctx := t.Context()
	db := open(t)
	if err := db.PutSession(ctx, store.Session{ID: "ses_1", Directory: "/p", Created: 1, Updated: 1, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutPending(ctx, store.PendingRequest{ID: "per_1", Kind: "permission", SessionID: "ses_1", Created: 5, Data: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	row, won, err := db.ClaimPending(ctx, "per_1", store.PendingClaim{Reply: []byte(`{"reply":"once"}`), By: "curl", At: 10})
	if err != nil || !won || row.State != store.PendingClaimed || row.AnsweredBy != "curl" {
		t.Fatalf("first claim: won %v, row %+v, err %v", won, row, err)
	}
	row, won, err = db.ClaimPending(ctx, "per_1", store.PendingClaim{Reply: []byte(`{"reply":"reject"}`), By: "web", At: 11})
	if err != nil || won || string(row.Reply) != `{"reply":"once"}` || row.AnsweredBy != "curl" {
		t.Fatalf("second claim: won %v, row %+v, err %v (want the first claim's answer)", won, row, err)
	}
	if _, _, err := db.ClaimPending(ctx, "per_none", store.PendingClaim{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("claim of an unknown request: %v, want ErrNotFound", err)
	}
	if err := db.FinishPending(ctx, "per_1", 20); err != nil {
		t.Fatal(err)
	}
	if rows, err := db.ListPending(ctx, "permission"); err != nil || len(rows) != 0 {
		t.Errorf("a finished request is listed: %+v, %v", rows, err)
	}
	if row, err := db.GetPending(ctx, "per_1"); err != nil || row.State != store.PendingDone || row.AnsweredAt != 10 {
		t.Errorf("the finished request: %+v, %v (want kept as done, answered at 10)", row, err)
	}
	if n, err := db.PrunePending(ctx, 11); err != nil || n != 1 {
		t.Errorf("prune: %d, %v, want 1", n, err)
	}
}
