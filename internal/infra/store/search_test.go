package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

func textPart(t *testing.T, db *store.DB, sid, mid, pid, typ, text string) {
	t.Helper()
	data := fmt.Sprintf(`{"id":%q,"type":%q,"text":%q}`, pid, typ, text)
	if err := db.PutPart(context.Background(), store.Part{ID: pid, MessageID: mid, SessionID: sid, Data: []byte(data)}); err != nil {
		t.Fatal(err)
	}
}

func TestSearchTextFindsWhatTheConversationSays(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		put(t, db, store.Session{ID: "ses_old", Directory: "/p", Title: "old", Created: 1, Updated: 1})
		put(t, db, store.Session{ID: "ses_new", Directory: "/p", Title: "new", Created: 2, Updated: 2})
		put(t, db, store.Session{ID: "ses_elsewhere", Directory: "/q", Title: "q", Created: 3, Updated: 3})
		for _, sid := range []string{"ses_old", "ses_new", "ses_elsewhere"} {
			if err := db.PutMessage(ctx, store.Message{ID: "msg_" + sid, SessionID: sid, Created: 1, Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		textPart(t, db, "ses_old", "msg_ses_old", "prt_1", "text", "The Postgres migration failed")
		textPart(t, db, "ses_new", "msg_ses_new", "prt_2", "text", "we chose postgres for the queue")
		textPart(t, db, "ses_new", "msg_ses_new", "prt_3", "text", "postgres again, newer")
		textPart(t, db, "ses_new", "msg_ses_new", "prt_4", "tool", "postgres in a tool part is not conversation text")
		textPart(t, db, "ses_elsewhere", "msg_ses_elsewhere", "prt_5", "text", "postgres in another project")

		hits := func(q string) []string {
			t.Helper()
			got, err := db.SearchText(ctx, "/p", q, 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, h := range got {
				out = append(out, h.SessionID+"/"+h.PartID)
			}
			return out
		}
		tests := []struct {
			name, query string
			want        []string
		}{
			{name: "a word in any case finds every session of the directory, newest first, each with its newest hit", query: "POSTGRES", want: []string{"ses_new/prt_3", "ses_old/prt_1"}},
			{name: "a phrase inside a word matches", query: "igratio", want: []string{"ses_old/prt_1"}},
			{name: "a query shorter than a trigram still matches", query: "qu", want: []string{"ses_new/prt_2"}},
			{name: "LIKE wildcards are literal", query: "post%", want: nil},
			{name: "nothing matches nothing", query: "mysql", want: nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if got := hits(tc.query); !slices.Equal(got, tc.want) {
					t.Fatalf("%q found %v, want %v", tc.query, got, tc.want)
				}
			})
		}

		t.Run("an updated part is found by its new text only", func(t *testing.T) {
			textPart(t, db, "ses_old", "msg_ses_old", "prt_1", "text", "switched to SQLite")
			if got := hits("migration"); got != nil {
				t.Fatalf("the old text is still found: %v", got)
			}
			if got := hits("sqlite"); !slices.Equal(got, []string{"ses_old/prt_1"}) {
				t.Fatalf("the new text: %v", got)
			}
		})
		t.Run("a deleted session's text is gone", func(t *testing.T) {
			if err := db.DeleteSession(ctx, "ses_new"); err != nil {
				t.Fatal(err)
			}
			if got := hits("postgres"); got != nil {
				t.Fatalf("found after the delete: %v", got)
			}
		})
	})
}

// TestTheSearchIndexCoversPartsStoredBeforeIt: the migration indexes the text parts a database
// already held (here one from before the migration: the index, its triggers and its migration row
// removed, then the database opened again).
func TestTheSearchIndexCoversPartsStoredBeforeIt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tandem.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
	if err := db.PutMessage(ctx, store.Message{ID: "msg_a", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TRIGGER part_text_insert`, `DROP TRIGGER part_text_update`, `DROP TRIGGER part_text_delete`, `DROP TABLE part_text`,
		`DELETE FROM migrations WHERE name LIKE '%part_text_search%'`,
		`INSERT INTO parts (id, message_id, session_id, data) VALUES ('prt_a', 'msg_a', 'ses_a', CAST('{"id":"prt_a","type":"text","text":"written before the index"}' AS BLOB))`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.SearchText(ctx, "/p", "BEFORE THE", 10)
	if err != nil || len(got) != 1 || got[0].PartID != "prt_a" || got[0].Text != "written before the index" {
		t.Fatalf("%+v %v", got, err)
	}
}

// BenchmarkSearchText: a word said in a few of 20,000 text parts (200 sessions of 100), found
// through the trigram index; BenchmarkSearchTextScan is the same search as a LIKE over parts.
func BenchmarkSearchText(b *testing.B) {
	db, raw := searchCorpus(b)
	ctx := context.Background()
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			if got, err := db.SearchText(ctx, "/p", "needle-word", 50); err != nil || len(got) != 20 {
				b.Fatalf("%d hits, %v", len(got), err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			var n int
			if err := raw.QueryRowContext(ctx, `SELECT COUNT(DISTINCT session_id) FROM parts WHERE CAST(data AS TEXT) LIKE '%needle-word%'`).Scan(&n); err != nil || n != 20 {
				b.Fatalf("%d, %v", n, err)
			}
		}
	})
}

func searchCorpus(b *testing.B) (*store.DB, *sql.DB) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "tandem.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	err = db.Tx(ctx, func(q store.Tx) error {
		for s := range 200 {
			sid := fmt.Sprintf("ses_%03d", s)
			if err := q.PutSession(ctx, store.Session{ID: sid, Directory: "/p", Title: sid, Created: int64(s), Updated: int64(s), Data: []byte(`{}`)}); err != nil {
				return err
			}
			mid := "msg_" + sid
			if err := q.PutMessage(ctx, store.Message{ID: mid, SessionID: sid, Created: 1, Data: []byte(`{}`)}); err != nil {
				return err
			}
			for p := range 100 {
				text := fmt.Sprintf("part %d of %s: the model explains how the build works, which files it read and what it changed next", p, sid)
				if s%10 == 0 && p == 50 {
					text += " needle-word"
				}
				pid := fmt.Sprintf("prt_%s_%03d", sid, p)
				data := fmt.Sprintf(`{"id":%q,"type":"text","text":%q}`, pid, text)
				if err := q.PutPart(ctx, store.Part{ID: pid, MessageID: mid, SessionID: sid, Data: []byte(data)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	return db, raw
}
