package cluster

import (
	"context"
	"time"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// Sink takes an event the bus published on this node (the bus's Options.Sink): it is queued for
// the log, in publish order, and comes back through the tailer with its sequence number. It never
// blocks for long and never drops an event: the queue has no bound (a backlog past 100,000 events
// is logged as an error: the store is down or far too slow).
func (n *Node) Sink(ev *bus.Event) {
	ev.Origin = n.o.ID
	n.qmu.Lock()
	if n.stopped {
		n.qmu.Unlock()
		n.log.Error("cluster: an event published after the node stopped was not logged", "type", ev.Type)
		return
	}
	n.queue = append(n.queue, ev)
	if len(n.queue) >= queueWarn && !n.warned {
		n.warned = true
		n.log.Error("cluster: events are piling up before the log; is the database reachable?", "queued", len(n.queue))
	}
	n.qmu.Unlock()
	select {
	case n.qwake <- struct{}{}:
	default:
	}
}

// write appends the queued events to the log, up to appendBatch per transaction, in the order they
// were published, retrying a failed append with a growing pause. After Close it writes what is
// left and ends.
func (n *Node) write() {
	defer n.wg.Done()
	defer close(n.wdone)
	var rows []store.LoggedEvent
	for {
		n.qmu.Lock()
		batch := n.queue[:min(len(n.queue), appendBatch)]
		if len(n.queue) < queueWarn/2 {
			n.warned = false
		}
		n.qmu.Unlock()
		if len(batch) == 0 {
			select {
			case <-n.qwake:
				continue
			case <-n.flush:
				// The queue is empty and the node is closing; a last look catches an event
				// queued between the two.
				n.qmu.Lock()
				empty := len(n.queue) == 0
				n.qmu.Unlock()
				if empty {
					return
				}
				continue
			case <-n.ctx.Done():
				return
			}
		}
		rows = rows[:0]
		for _, ev := range batch {
			rows = append(rows, store.LoggedEvent{ID: ev.ID, Node: ev.Origin, Directory: ev.Directory, Type: ev.Type, Payload: ev.Payload})
		}
		pause := 20 * time.Millisecond
		for {
			seqs, err := n.o.Store.AppendEvents(n.ctx, rows)
			if err == nil {
				break
			}
			if len(seqs) == len(rows) {
				// Committed; only the doorbell failed. Appending again would log them twice; the
				// other nodes' polls find them.
				n.log.Warn("cluster: events logged but the doorbell did not ring", "err", err)
				break
			}
			if n.ctx.Err() != nil {
				return
			}
			n.log.Error("cluster: append events to the log; retrying", "events", len(rows), "err", err, "in", pause)
			select {
			case <-time.After(pause):
			case <-n.ctx.Done():
				return
			}
			pause = min(2*pause, 2*time.Second)
		}
		n.qmu.Lock()
		clear(n.queue[:len(batch)])
		n.queue = n.queue[len(batch):]
		if len(n.queue) == 0 {
			n.queue = nil // a burst's backing array is not kept
		}
		n.qmu.Unlock()
		n.ring() // this node's own events are in the log: no need to wait for the doorbell
	}
}

// ring wakes the tailer.
func (n *Node) ring() {
	select {
	case n.doorbell <- struct{}{}:
	default:
	}
}

// listen keeps the doorbell listener connected; Listen rings on each doorbell and after each
// reconnection, so the tailer re-reads from its position whatever the listener missed.
func (n *Node) listen() {
	defer n.wg.Done()
	pause := 100 * time.Millisecond
	for {
		err := n.o.Store.Listen(n.ctx, func() {
			n.listening.Store(true)
			n.ring()
		})
		n.listening.Store(false)
		if n.ctx.Err() != nil {
			return
		}
		n.log.Error("cluster: the event doorbell listener stopped; events arrive by polling until it is back", "err", err, "retry in", pause)
		select {
		case <-time.After(pause):
		case <-n.ctx.Done():
			return
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// tail delivers the log to the bus: on every doorbell, and every Poll in case a doorbell was lost,
// it reads the events after the last one delivered until there are none.
func (n *Node) tail(last uint64) {
	defer n.wg.Done()
	t := time.NewTicker(n.o.Poll)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.doorbell:
		case <-t.C:
		}
		for {
			evs, err := n.o.Store.EventsAfter(n.ctx, int64(last), readBatch)
			if err != nil {
				if n.ctx.Err() == nil {
					n.log.Error("cluster: read the event log", "after", last, "err", err)
				}
				break // the next poll tries again
			}
			for _, le := range evs {
				if uint64(le.Seq) != last+1 {
					n.log.Warn("cluster: events were pruned before this node read them", "after", last, "next", le.Seq)
				}
				ev := bus.FromLog(uint64(le.Seq), le.Directory, le.Type, le.Payload, le.Node)
				n.bus.Deliver(ev)
				last = ev.Seq
				n.delivered.Store(last)
				if ev.Type == typeLeft && ev.Origin != n.o.ID {
					n.left(ev)
				}
			}
			if len(evs) < readBatch {
				break
			}
		}
	}
}

// Backfill returns the logged events with after < Seq < before, oldest first: the bus's
// Options.Backfill, for a cursor older than its ring.
func (n *Node) Backfill(ctx context.Context, after, before uint64) ([]*bus.Event, error) {
	var out []*bus.Event
	for after+1 < before {
		evs, err := n.o.Store.EventsAfter(ctx, int64(after), int(min(uint64(readBatch), before-after-1)))
		if err != nil {
			return nil, err
		}
		for _, le := range evs {
			if uint64(le.Seq) >= before {
				return out, nil
			}
			out = append(out, bus.FromLog(uint64(le.Seq), le.Directory, le.Type, le.Payload, le.Node))
			after = uint64(le.Seq)
		}
		if len(evs) == 0 {
			break
		}
	}
	return out, nil
}

// prune keeps the log at Keep events.
func (n *Node) prune() {
	n.every(pruneEvery, func() {
		deleted, err := n.o.Store.PruneEvents(n.ctx, n.o.Keep)
		switch {
		case err != nil && n.ctx.Err() == nil:
			n.log.Error("cluster: prune the event log", "err", err)
		case deleted > 0:
			n.log.Debug("cluster: pruned the event log", "deleted", deleted)
		}
	})
}
