package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestMoreFencedWritersThanPooledConnectionsAllFinish: each fenced write holds a connection for its
// transaction; with more writers than the pool has connections they queue rather than deadlock.
func TestMoreFencedWritersThanPooledConnectionsAllFinish(t *testing.T) {
	db, c := clusterOf(t, testenv.Postgres(t))
	ctx := t.Context()
	heartbeat(t, c, "node-a")
	put(t, db, store.Session{ID: "ses_a", Directory: "/p", Title: "a", Created: 1, Updated: 1})
	if err := db.PutMessage(ctx, store.Message{ID: "msg_a", SessionID: "ses_a", Created: 1, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireSession(ctx, "ses_a", "node-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	fenced := store.WithFence(ctx, l)
	var wg sync.WaitGroup
	for w := range 40 {
		wg.Go(func() {
			for i := range 10 {
				err := db.Tx(fenced, func(q store.Tx) error {
					return q.PutPart(fenced, store.Part{ID: fmt.Sprintf("prt_%02d_%d", w, i), MessageID: "msg_a", SessionID: "ses_a", Data: []byte(`{}`)})
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, parts, err := db.GetMessage(ctx, "ses_a", "msg_a"); err != nil || len(parts) != 400 {
		t.Fatalf("%d parts stored (%v), want 400", len(parts), err)
	}
}
