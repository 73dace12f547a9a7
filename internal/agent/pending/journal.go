package pending

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Journal keeps the requests of one kind in the store while they wait, so that a restart knows
// what was pending when the process died. A nil store keeps nothing (tests of the domain alone).
type Journal struct {
	DB   store.Pending
	Kind string // "question", "elicitation"
	Log  *slog.Logger
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
	if err := j.DB.DeletePending(ctx, itemID); err != nil && j.Log != nil {
		j.Log.Error("forget a resolved request", "kind", j.Kind, "id", itemID, "err", err)
	}
}

// Drain hands every request left by a previous run to ended (which announces its end) and forgets
// it. It returns how many there were.
func (j Journal) Drain(ctx context.Context, ended func(data []byte) error) (int, error) {
	return j.DrainExcept(ctx, nil, ended)
}

// DrainExcept is Drain, leaving the requests whose IDs are in kept (those a resumed turn waits for).
func (j Journal) DrainExcept(ctx context.Context, kept map[string]bool, ended func(data []byte) error) (int, error) {
	if j.DB == nil {
		return 0, nil
	}
	rows, err := j.DB.ListPending(ctx, j.Kind)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if kept[r.ID] {
			continue
		}
		n++
		if err := ended(r.Data); err != nil {
			return 0, err
		}
		if err := j.DB.DeletePending(ctx, r.ID); err != nil {
			return 0, err
		}
	}
	return n, nil
}
