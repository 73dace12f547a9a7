package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

// partsRead is every part document of a session as ListMessages returns them, message by message.
func partsRead(t *testing.T, q store.Messages, sessionID string) string {
	t.Helper()
	msgs, parts, err := q.ListMessages(context.Background(), store.MessageQuery{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		var docs []string
		for _, p := range parts[m.ID] {
			docs = append(docs, string(p.Data))
		}
		out = append(out, m.ID+":"+strings.Join(docs, ","))
	}
	return strings.Join(out, " ")
}

// TestReadsSeeEveryCommittedChangeToParts reads a session (so its parts are cached), changes it in
// each way the store can, and reads it again: every read shows what is stored.
func TestReadsSeeEveryCommittedChangeToParts(t *testing.T) {
	eachBackendOpener(t, readsSeeEveryCommittedChangeToParts)
}

func readsSeeEveryCommittedChangeToParts(t *testing.T, open func(t *testing.T) *store.DB) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, db *store.DB)
		want   string
	}{
		{"a part written on its own is read back", func(t *testing.T, db *store.DB) {
			if err := db.PutPart(ctx, store.Part{ID: "prt_1b", MessageID: "msg_1", SessionID: "ses_a", Data: []byte(`"1b"`)}); err != nil {
				t.Fatal(err)
			}
		}, `msg_1:"1a","1b" msg_2:"2a"`},
		{"a part rewritten in a transaction is read back after the commit", func(t *testing.T, db *store.DB) {
			err := db.Tx(ctx, func(q store.Tx) error {
				if err := q.PutPart(ctx, store.Part{ID: "prt_2a", MessageID: "msg_2", SessionID: "ses_a", Data: []byte(`"2a changed"`)}); err != nil {
					return err
				}
				// Inside the transaction, its own write is what a read sees.
				if got := partsRead(t, q, "ses_a"); got != `msg_1:"1a" msg_2:"2a changed"` {
					t.Errorf("inside the transaction: %s", got)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}, `msg_1:"1a" msg_2:"2a changed"`},
		{"a rolled back transaction leaves the parts as they were", func(t *testing.T, db *store.DB) {
			err := db.Tx(ctx, func(q store.Tx) error {
				if err := q.PutPart(ctx, store.Part{ID: "prt_2a", MessageID: "msg_2", SessionID: "ses_a", Data: []byte(`"lost"`)}); err != nil {
					return err
				}
				return fmt.Errorf("roll back")
			})
			if err == nil {
				t.Fatal("the transaction did not fail")
			}
		}, `msg_1:"1a" msg_2:"2a"`},
		{"a deleted part is gone", func(t *testing.T, db *store.DB) {
			if err := db.DeletePart(ctx, "ses_a", "msg_1", "prt_1a"); err != nil {
				t.Fatal(err)
			}
		}, `msg_1: msg_2:"2a"`},
		{"a deleted message is gone with its parts", func(t *testing.T, db *store.DB) {
			if err := db.DeleteMessage(ctx, "ses_a", "msg_2"); err != nil {
				t.Fatal(err)
			}
		}, `msg_1:"1a"`},
		{"a deleted and recreated session shows only its new parts", func(t *testing.T, db *store.DB) {
			if err := db.DeleteSession(ctx, "ses_a"); err != nil {
				t.Fatal(err)
			}
			put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
			if err := db.PutMessage(ctx, store.Message{ID: "msg_1", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}, `msg_1:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := open(t)
			put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
			for i, m := range []string{"msg_1", "msg_2"} {
				if err := db.PutMessage(ctx, store.Message{ID: m, SessionID: "ses_a", Created: int64(i), Data: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
				p := fmt.Sprintf("prt_%da", i+1)
				if err := db.PutPart(ctx, store.Part{ID: p, MessageID: m, SessionID: "ses_a", Data: fmt.Appendf(nil, `"%da"`, i+1)}); err != nil {
					t.Fatal(err)
				}
			}
			if got := partsRead(t, db, "ses_a"); got != `msg_1:"1a" msg_2:"2a"` {
				t.Fatalf("before: %s", got)
			}
			tc.change(t, db)
			if got := partsRead(t, db, "ses_a"); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestReadsRacingWritesNeverKeepAnOldPart reads a message while another goroutine rewrites its
// part again and again; once the writer is done, a read shows its last write.
func TestReadsRacingWritesNeverKeepAnOldPart(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, db *store.DB) {
		put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
		if err := db.PutMessage(ctx, store.Message{ID: "msg_1", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		const writes = 200
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range writes {
				if err := db.PutPart(ctx, store.Part{ID: "prt_1", MessageID: "msg_1", SessionID: "ses_a", Data: fmt.Appendf(nil, `%d`, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
		for range 2 {
			wg.Go(func() {
				for range writes {
					if _, _, err := db.ListMessages(ctx, store.MessageQuery{SessionID: "ses_a"}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if got, want := partsRead(t, db, "ses_a"), fmt.Sprintf("msg_1:%d", writes-1); got != want {
			t.Errorf("after the last write: %s, want %s", got, want)
		}
	})
}
