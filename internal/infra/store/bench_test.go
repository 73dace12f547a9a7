package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// BenchmarkListMessages reads a 1,000-message session (2,500 parts, documents of the sizes turns
// store) from the store: a page of the newest 100 (101 read, as the service asks for one more to
// know whether older ones exist) and all of it.
func BenchmarkListMessages(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "tandem.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	msgDoc := []byte(`{"id":"msg_x","sessionID":"ses_a","role":"assistant","time":{"created":1,"completed":2},"agent":"build","parentID":"msg_y","modelID":"demo","providerID":"demo","mode":"build","path":{"cwd":"/tmp/x","root":"/tmp/x"},"cost":0,"tokens":{"input":120,"output":30,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}`)
	partDoc := []byte(`{"id":"prt_x","sessionID":"ses_a","messageID":"msg_x","type":"text","text":"message 1: a few words of text, about as long as a short prompt or answer is","time":{"start":1,"end":2}}`)
	err = db.Tx(ctx, func(q store.Tx) error {
		if err := q.PutSession(ctx, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1, Data: []byte(`{}`)}); err != nil {
			return err
		}
		for i := range 1000 {
			mid := fmt.Sprintf("msg_%05d", i)
			if err := q.PutMessage(ctx, store.Message{ID: mid, SessionID: "ses_a", Created: int64(i), Data: msgDoc}); err != nil {
				return err
			}
			for j := range 2 + i%2 {
				if err := q.PutPart(ctx, store.Part{ID: fmt.Sprintf("prt_%05d_%d", i, j), MessageID: mid, SessionID: "ses_a", Data: partDoc}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{{"page=100", 101, 101}, {"all=1000", 0, 1000}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msgs, parts, err := db.ListMessages(ctx, store.MessageQuery{SessionID: "ses_a", Limit: tc.limit})
				if err != nil || len(msgs) != tc.want || len(parts[msgs[0].ID]) == 0 {
					b.Fatalf("%d messages, %v", len(msgs), err)
				}
			}
		})
	}
}

// BenchmarkPutPart stores a streamed text part again and again (a turn's deltas), on each backend;
// "fenced" is PostgreSQL's write under a session lease (a transaction checking the lease first).
func BenchmarkPutPart(b *testing.B) {
	for _, bk := range []struct {
		name   string
		target func(b *testing.B) string
		fence  bool
	}{
		{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "tandem.db") }, false},
		{"postgres", func(b *testing.B) string { return testenv.Postgres(b) }, false},
		{"postgres/fenced", func(b *testing.B) string { return testenv.Postgres(b) }, true},
	} {
		b.Run(bk.name, func(b *testing.B) {
			ctx := b.Context()
			db, err := store.Open(ctx, bk.target(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			if err := db.PutSession(ctx, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1, Data: []byte(`{}`)}); err != nil {
				b.Fatal(err)
			}
			if err := db.PutMessage(ctx, store.Message{ID: "msg_a", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)}); err != nil {
				b.Fatal(err)
			}
			if bk.fence {
				c, _ := db.Cluster()
				if err := c.Heartbeat(ctx, store.Node{ID: "node-a"}); err != nil {
					b.Fatal(err)
				}
				l, err := c.AcquireSession(ctx, "ses_a", "node-a", time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				ctx = store.WithFence(ctx, l)
			}
			doc := []byte(`{"id":"prt_a","sessionID":"ses_a","messageID":"msg_a","type":"text","text":"a few words of a streamed answer, about as long as one delta makes it"}`)
			b.ReportAllocs()
			for b.Loop() {
				if err := db.PutPart(ctx, store.Part{ID: "prt_a", MessageID: "msg_a", SessionID: "ses_a", Data: doc}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
