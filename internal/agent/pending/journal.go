package pending

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Journal keeps the requests of one kind in the store while they wait, so that a restart knows
// what was pending when the process died. A nil store keeps nothing (tests of the domain alone).
type Journal struct {
	DB   store.Pending
	Kind string // "question", "elicitation"
	Log  *slog.Logger
	// Shared: several nodes share the store, and a resolved request is kept as done rather than
	// deleted (Broker.Shared).
	Shared bool
}

// Put stores a waiting request's document. A request without a session is not kept: it belongs to
// no turn that a restart could end or resume.
func (j Journal) Put(ctx context.Context, itemID, sessionID string, created int64, doc any) error {
	if j.DB == nil || sessionID == "" {
		return nil
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return j.DB.PutPending(ctx, store.PendingRequest{ID: itemID, Kind: j.Kind, SessionID: sessionID, Created: created, Data: data})
}

// Delete forgets a request once it is resolved; a failure is logged (the next start resolves the
// request again as cancelled, which is what it is by then).
func (j Journal) Delete(ctx context.Context, itemID string) {
	if j.DB == nil {
		return
	}
	if err := Forget(ctx, j.DB, j.Shared, itemID); err != nil && j.Log != nil {
		j.Log.Error("forget a resolved request", "kind", j.Kind, "id", itemID, "err", err)
	}
}

// Forget removes a resolved request from the store, or, when several nodes share it, keeps it as
// done so that a late answer at another node still learns who answered first.
func Forget(ctx context.Context, db store.Pending, shared bool, itemID string) error {
	if shared {
		return db.FinishPending(ctx, itemID, time.Now().UnixMilli())
	}
	return db.DeletePending(ctx, itemID)
}

// DrainExcept hands every request left by a previous run to ended (which announces its end) and
// forgets it, leaving the requests whose IDs are in kept (those a resumed turn waits for) and
// those of sessions only does not select (another node's). It returns how many it ended.
func (j Journal) DrainExcept(ctx context.Context, kept map[string]bool, only store.SessionFilter, ended func(data []byte) error) (int, error) {
	if j.DB == nil {
		return 0, nil
	}
	rows, err := j.DB.ListPending(ctx, j.Kind)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if kept[r.ID] || !only.Has(r.SessionID) {
			continue
		}
		n++
		if err := ended(r.Data); err != nil {
			return 0, err
		}
		if err := Forget(ctx, j.DB, j.Shared, r.ID); err != nil {
			return 0, err
		}
	}
	return n, nil
}
