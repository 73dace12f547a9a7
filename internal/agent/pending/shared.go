package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Shared connects a broker to the other nodes on one database. Every request is a stored row, and
// the first answer recorded on that row (store.ClaimPending, one conditional update) wins wherever
// it arrived: a reply at this node to a request another node asked claims the row and tells the
// asking node (Claimed), which applies the claim to its waiting turn (Apply). Lists and lookups
// include the requests other nodes asked.
type Shared[Req any] struct {
	// Ctx is the server's context, for the store reads and claims no request's context outlives.
	Ctx  context.Context
	DB   store.Pending
	Kind string // the rows' kind: "permission", "question", "elicitation"
	// Decode turns the document of a row another node stored into the request clients see.
	Decode func(store.PendingRequest) (Req, error)
	// Claimed tells the node that asked a request of this Kind that a claim made here won.
	Claimed func(kind, itemID, sessionID string)
	Log     *slog.Logger
}

// Share makes the broker settle its requests across nodes through sh. Call it before the broker is
// used.
func (b *Broker[Req, Rep]) Share(sh Shared[Req]) {
	if sh.Log == nil {
		sh.Log = slog.New(slog.DiscardHandler)
	}
	b.shared = &sh
}

// Shared reports whether the broker settles requests across nodes: a resolved request's row is then
// kept as done (store.FinishPending), not deleted, so that a late answer elsewhere learns the winner.
func (b *Broker[Req, Rep]) Shared() bool { return b.shared != nil }

// claimDoc is a resolution as a claim row stores it.
type claimDoc[Rep any] struct {
	Cause  Cause  `json:"cause"`
	Reply  Rep    `json:"reply"`
	Client string `json:"client,omitempty"`
	Addr   string `json:"addr,omitempty"`
	Reason string `json:"reason,omitempty"`
	At     int64  `json:"at"`
}

func decodeClaim[Rep any](row store.PendingRequest) (Resolution[Rep], error) {
	var d claimDoc[Rep]
	if err := json.Unmarshal(row.Reply, &d); err != nil {
		return Resolution[Rep]{}, fmt.Errorf("pending: the claim of %s: %w", row.ID, err)
	}
	return Resolution[Rep]{Reply: d.Reply, Cause: d.Cause, By: Who{Client: d.Client, Addr: d.Addr}, Reason: d.Reason, At: time.UnixMilli(d.At)}, nil
}

// claim settles r for itemID across nodes, then resolves the item here if it waits here (with r
// when r won, else with the answer that did). It returns whether r won and otherwise the winner.
// A request that was never stored (it belongs to no session) is settled here alone.
func (b *Broker[Req, Rep]) claim(itemID string, r Resolution[Rep]) (bool, *Resolution[Rep], error) {
	b.mu.Lock()
	prev, seen := b.decided[itemID]
	_, local := b.waiting[itemID]
	b.mu.Unlock()
	if seen {
		return false, &prev, nil
	}
	r.At = b.now()
	if r.Cause != Replied {
		r.Reply = b.fallback(r.Reason)
	}
	doc, err := json.Marshal(claimDoc[Rep]{Cause: r.Cause, Reply: r.Reply, Client: r.By.Client, Addr: r.By.Addr, Reason: r.Reason, At: r.At.UnixMilli()})
	if err != nil {
		return false, nil, err
	}
	row, won, err := b.shared.DB.ClaimPending(b.shared.Ctx, itemID, store.PendingClaim{Reply: doc, By: r.By.Client, At: r.At.UnixMilli()})
	switch {
	case errors.Is(err, store.ErrNotFound):
		if local {
			won, p := b.resolve(itemID, r)
			return won, p, nil
		}
		return false, nil, nil
	case err != nil:
		return false, nil, err
	}
	if !won {
		winner, err := decodeClaim[Rep](row)
		if err != nil {
			return false, nil, err
		}
		if local {
			b.resolve(itemID, winner)
		}
		return false, &winner, nil
	}
	if local {
		b.resolve(itemID, r)
	} else if b.shared.Claimed != nil {
		b.shared.Claimed(b.shared.Kind, itemID, row.SessionID)
	}
	return true, nil, nil
}

// settle ends an item waiting here as a timeout or a cancel. Across nodes the end is claimed like
// an answer: when an answer was claimed first, that answer is what the waiter gets. A claim the
// store cannot record is logged and the item ends here anyway, so no turn waits on a broken store.
func (b *Broker[Req, Rep]) settle(itemID string, r Resolution[Rep]) bool {
	if b.shared == nil {
		won, _ := b.resolve(itemID, r)
		return won
	}
	won, _, err := b.claim(itemID, r)
	if err != nil {
		b.shared.Log.Error("record the end of a pending request", "kind", b.shared.Kind, "id", itemID, "err", err)
		won, _ = b.resolve(itemID, r)
	}
	return won
}

// Apply resolves an item waiting here with the answer another node claimed for it (its
// Shared.Claimed signal arrived). It does nothing for an item not waiting here or not claimed.
func (b *Broker[Req, Rep]) Apply(itemID string) {
	if b.shared == nil {
		return
	}
	b.mu.Lock()
	_, local := b.waiting[itemID]
	b.mu.Unlock()
	if !local {
		return
	}
	row, err := b.shared.DB.GetPending(b.shared.Ctx, itemID)
	if err != nil {
		b.shared.Log.Error("read a claimed pending request", "kind", b.shared.Kind, "id", itemID, "err", err)
		return
	}
	if row.State == store.PendingWaiting {
		return
	}
	r, err := decodeClaim[Rep](row)
	if err != nil {
		b.shared.Log.Error("read a claimed pending request", "kind", b.shared.Kind, "id", itemID, "err", err)
		return
	}
	b.resolve(itemID, r)
}

// remote returns the waiting requests other nodes asked (rows not waiting here), or, with one ID,
// that request alone.
func (b *Broker[Req, Rep]) remote(itemID string) []Item[Req] {
	var rows []store.PendingRequest
	if itemID != "" {
		row, err := b.shared.DB.GetPending(b.shared.Ctx, itemID)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				b.shared.Log.Error("read a pending request", "kind", b.shared.Kind, "id", itemID, "err", err)
			}
			return nil
		}
		if row.Kind != b.shared.Kind {
			return nil
		}
		rows = []store.PendingRequest{row}
	} else {
		var err error
		if rows, err = b.shared.DB.ListPending(b.shared.Ctx, b.shared.Kind); err != nil {
			b.shared.Log.Error("list pending requests", "kind", b.shared.Kind, "err", err)
			return nil
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Item[Req]
	for _, row := range rows {
		if _, local := b.waiting[row.ID]; local || row.State != store.PendingWaiting {
			continue
		}
		req, err := b.shared.Decode(row)
		if err != nil {
			b.shared.Log.Warn("an unreadable pending request is not listed", "kind", b.shared.Kind, "id", row.ID, "err", err)
			continue
		}
		out = append(out, Item[Req]{ID: row.ID, SessionID: row.SessionID, Created: time.UnixMilli(row.Created), Request: req})
	}
	return out
}
