package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster returns what several nodes on the database coordinate through; false on SQLite, which
// has one node.
func (s *DB) Cluster() (Cluster, bool) {
	if s.dialect != postgresDialect {
		return nil, false
	}
	return pgCluster{s}, true
}

// pgCluster is Cluster on PostgreSQL. Times that decide liveness are the database's (now()), so
// nodes whose clocks disagree still agree on who is alive.
type pgCluster struct{ db *DB }

var _ Cluster = pgCluster{}

// eventsChannel is the NOTIFY channel of the event log's doorbell; its payload is the newest seq,
// a hint only (a listener re-reads the log from its own position).
const eventsChannel = "tandem_events"

func (c pgCluster) ClusterID(ctx context.Context) (string, error) {
	var id string
	err := c.db.queryRow(ctx, `SELECT id FROM cluster_meta`).Scan(&id)
	return id, wrap("cluster id", err)
}

func (c pgCluster) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if _, err := c.db.exec(ctx, `INSERT INTO cluster_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, candidate); err != nil {
		return nil, wrap("store secret", err)
	}
	var v []byte
	err := c.db.queryRow(ctx, `SELECT value FROM cluster_secrets WHERE name = $1`, name).Scan(&v)
	return v, wrap("read secret", err)
}

func (c pgCluster) Heartbeat(ctx context.Context, n Node) error {
	_, err := c.db.exec(ctx, `INSERT INTO nodes (id, url, started, heartbeat)
		VALUES ($1, $2, COALESCE(to_timestamp(NULLIF($3::bigint, 0) / 1000.0), now()), now())
		ON CONFLICT (id) DO UPDATE SET url = excluded.url, heartbeat = now(),
			started = CASE WHEN $3::bigint = 0 THEN nodes.started ELSE excluded.started END`,
		n.ID, n.URL, n.Started)
	return wrap("heartbeat", err)
}

// msOf is a timestamptz column as unix milliseconds.
func msOf(column string) string {
	return `(extract(epoch FROM ` + column + `) * 1000)::bigint`
}

func (c pgCluster) Nodes(ctx context.Context, staleAfter time.Duration) ([]Node, error) {
	rows, err := c.db.query(ctx, `SELECT id, url, `+msOf("started")+`, `+msOf("heartbeat")+`,
		heartbeat > now() - $1::float8 * interval '1 second' FROM nodes ORDER BY id`, staleAfter.Seconds())
	if err != nil {
		return nil, wrap("nodes", err)
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		var n Node
		if err := rows.Scan(&n.ID, &n.URL, &n.Started, &n.Heartbeat, &n.Alive); err != nil {
			return nil, wrap("nodes", err)
		}
		out = append(out, n)
	}
	return out, wrap("nodes", rows.Err())
}

func (c pgCluster) RemoveNode(ctx context.Context, id string, started int64) error {
	_, err := c.db.exec(ctx, `DELETE FROM nodes WHERE id = $1 AND ($2::bigint = 0 OR `+msOf("started")+` = $2)`, id, started)
	return wrap("remove node", err)
}

func (c pgCluster) AcquireSession(ctx context.Context, sessionID, node string, staleAfter time.Duration) (SessionLease, error) {
	var lease SessionLease
	var owned bool
	err := c.db.Tx(ctx, func(tx Tx) error {
		q := tx.(*Queries)
		if _, err := q.exec(ctx, `INSERT INTO session_owners (session_id, node, epoch) VALUES ($1, $2, 1)
			ON CONFLICT (session_id) DO NOTHING`, sessionID, node); err != nil {
			return err
		}
		// The row is locked until the commit: racing acquirers decide one after another.
		lease = SessionLease{SessionID: sessionID}
		if err := q.queryRow(ctx, `SELECT node, epoch FROM session_owners WHERE session_id = $1 FOR UPDATE`, sessionID).
			Scan(&lease.Node, &lease.Epoch); err != nil {
			return err
		}
		if lease.Node == node {
			return nil
		}
		// staleAfter <= 0: a registered owner is never taken over here, however stale (the
		// failover takes a dead node's sessions over, with their recovery).
		var alive bool
		err := q.queryRow(ctx, `SELECT $2::float8 <= 0 OR heartbeat > now() - $2::float8 * interval '1 second' FROM nodes WHERE id = $1`,
			lease.Node, staleAfter.Seconds()).Scan(&alive)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if alive {
			owned = true
			return nil
		}
		lease.Node = node
		return q.queryRow(ctx, `UPDATE session_owners SET node = $2, epoch = epoch + 1 WHERE session_id = $1 RETURNING epoch`,
			sessionID, node).Scan(&lease.Epoch)
	})
	if err != nil {
		return SessionLease{}, wrap("acquire session", err)
	}
	if owned {
		return lease, ErrOwnedElsewhere
	}
	return lease, nil
}

func (c pgCluster) SessionLease(ctx context.Context, sessionID string) (SessionLease, error) {
	l := SessionLease{SessionID: sessionID}
	err := c.db.queryRow(ctx, `SELECT node, epoch FROM session_owners WHERE session_id = $1`, sessionID).Scan(&l.Node, &l.Epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return SessionLease{}, ErrNotFound
	}
	return l, wrap("session lease", err)
}

func (c pgCluster) TakeOver(ctx context.Context, from, node string) ([]SessionLease, error) {
	rows, err := c.db.query(ctx, `UPDATE session_owners SET node = $2, epoch = epoch + 1 WHERE node = $1
		RETURNING session_id, node, epoch`, from, node)
	if err != nil {
		return nil, wrap("take over", err)
	}
	defer rows.Close()
	var out []SessionLease
	for rows.Next() {
		var l SessionLease
		if err := rows.Scan(&l.SessionID, &l.Node, &l.Epoch); err != nil {
			return nil, wrap("take over", err)
		}
		out = append(out, l)
	}
	return out, wrap("take over", rows.Err())
}

func (c pgCluster) AppendEvents(ctx context.Context, evs []LoggedEvent) ([]int64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(evs))
	nodes := make([]string, len(evs))
	dirs := make([]string, len(evs))
	types := make([]string, len(evs))
	payloads := make([][]byte, len(evs))
	ids := make([]*string, len(evs))
	err := c.db.Tx(ctx, func(tx Tx) error {
		q := tx.(*Queries)
		// The counter's row stays locked until the commit, so appends commit in seq order and a
		// reader never sees a seq while a smaller one is still uncommitted.
		var last int64
		if err := q.queryRow(ctx, `UPDATE event_counter SET seq = seq + $1 RETURNING seq`, int64(len(evs))).Scan(&last); err != nil {
			return err
		}
		for i, e := range evs {
			seqs[i] = last - int64(len(evs)) + 1 + int64(i)
			nodes[i], dirs[i], types[i], payloads[i] = e.Node, e.Directory, e.Type, e.Payload
			if payloads[i] == nil {
				payloads[i] = []byte{}
			}
			if e.ID != "" {
				ids[i] = &e.ID
			}
		}
		// An event logged already (a retry after a commit whose reply was lost) is skipped: its
		// seq stays unused, and readers take seqs as they come, never waiting for one.
		_, err := q.exec(ctx, `INSERT INTO events (seq, node, directory, type, payload, event_id)
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[])
			ON CONFLICT (event_id) DO NOTHING`,
			seqs, nodes, dirs, types, payloads, ids)
		return err
	})
	if err != nil {
		return nil, wrap("append events", err)
	}
	// The doorbell rings after the commit, outside the transaction: NOTIFY inside it would
	// serialise every committing transaction of the database behind a global lock. The events are
	// stored whether or not it rings (an error here would have them appended again); listeners
	// poll too.
	if _, err := c.db.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, eventsChannel, strconv.FormatInt(seqs[len(seqs)-1], 10)); err != nil {
		slog.Warn("store: the event doorbell did not ring", "seq", seqs[len(seqs)-1], "err", err)
	}
	return seqs, nil
}

func (c pgCluster) EventsAfter(ctx context.Context, after int64, limit int) ([]LoggedEvent, error) {
	rows, err := c.db.query(ctx, `SELECT seq, node, directory, type, payload FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
	if err != nil {
		return nil, wrap("events after", err)
	}
	defer rows.Close()
	out := make([]LoggedEvent, 0, min(max(limit, 0), 256))
	for rows.Next() {
		var e LoggedEvent
		if err := rows.Scan(&e.Seq, &e.Node, &e.Directory, &e.Type, &e.Payload); err != nil {
			return nil, wrap("events after", err)
		}
		out = append(out, e)
	}
	return out, wrap("events after", rows.Err())
}

// LastEventSeq reads the counter: it is the newest committed event's seq, pruned or not.
func (c pgCluster) LastEventSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := c.db.queryRow(ctx, `SELECT seq FROM event_counter`).Scan(&seq)
	return seq, wrap("last event seq", err)
}

// PruneEvents relies on seqs being consecutive: all but the newest keep are those at or below
// the counter minus keep.
func (c pgCluster) PruneEvents(ctx context.Context, keep int64) (int64, error) {
	res, err := c.db.exec(ctx, `DELETE FROM events WHERE seq <= (SELECT seq FROM event_counter) - $1`, max(keep, 0))
	if err != nil {
		return 0, wrap("prune events", err)
	}
	n, err := res.RowsAffected()
	return n, wrap("prune events", err)
}

// Listen keeps a connection of its own (the pool's connections are shared and cannot wait for
// notifications) listening to the doorbell, and opens another when it breaks, waiting from 50 ms
// up to 2 s between attempts.
func (c pgCluster) Listen(ctx context.Context, ring func()) error {
	const first, most = 50 * time.Millisecond, 2 * time.Second
	wait := first
	for {
		err := c.listenOnce(ctx, ring, func() { wait = first })
		if ctx.Err() != nil {
			return nil
		}
		slog.Warn("store: the event doorbell's connection broke; reconnecting", "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(wait*2, most)
	}
}

// listenOnce connects, listens and rings until the connection fails or ctx ends.
func (c pgCluster) listenOnce(ctx context.Context, ring, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, c.db.pg.config.Copy())
	if err != nil {
		return err
	}
	defer func() {
		closing, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(closing)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+eventsChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	connected()
	ring() // a doorbell may have rung while there was no listener
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		ring()
	}
}
