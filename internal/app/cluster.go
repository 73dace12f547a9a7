package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/infra/cluster"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// member is this process's part when several tandem nodes share one PostgreSQL database: it runs
// the sessions it holds a lease on (session.Runner), sends requests for the others to the node
// that runs them (routes.Owners), recovers the sessions of a node that died when it takes them
// over, and applies to its own waiting requests the answers other nodes claimed.
type member struct {
	m     *Main
	node  *cluster.Node
	db    store.Cluster
	stale time.Duration

	mu    sync.Mutex
	terms map[string]remoteTerminal // the terminals other nodes run, by ID, from their events
}

// remoteTerminal is a terminal another node runs, as its events describe it.
type remoteTerminal struct {
	node string
	info api.PtyInfo
}

// Internal signals between nodes, carried by the event log and never shown to clients.
const (
	signalLoggedOut = cluster.InternalPrefix + "loggedout" // a browser session ended at one node
	signalClaimed   = cluster.InternalPrefix + "claimed"   // an answer claimed at one node for a request another asked
	signalTakenOver = cluster.InternalPrefix + "takenover" // a node took over the sessions of another
)

type claimedSignal struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
}

type loggedOutSignal struct {
	Nonce   string `json:"nonce"`
	Expires int64  `json:"expires"` // unix seconds
}

type takenOverSignal struct {
	By       string   `json:"by"`
	Sessions []string `json:"sessions"`
}

// defaultNodeID names a node that was given no --node-id: unique, so that two processes on one host
// never take each other for a restart of the same node.
func defaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// joinCluster prepares this node for a database several nodes share: the bus it returns logs every
// event to the shared log and delivers every node's events in the log's order. Nothing runs until
// start.
func joinCluster(ctx context.Context, m *Main, db store.Cluster, o Options) (*member, *bus.Bus, error) {
	id := o.NodeID
	if id == "" {
		id = defaultNodeID()
	}
	c := &member{m: m, db: db, stale: cluster.DefaultStaleAfter, terms: map[string]remoteTerminal{}}
	node, err := cluster.New(ctx, cluster.Options{Store: db, ID: id, URL: o.Advertise, Log: o.Logger,
		OnTakeOver: c.takeOver})
	if err != nil {
		return nil, nil, err
	}
	c.node = node
	b := bus.New(bus.Options{Boot: node.ClusterID(), Sink: node.Sink, Backfill: node.Backfill})
	return c, b, nil
}

// start registers the node (with the URL it serves at, when --advertise named none), takes back
// the sessions of its own previous life, and starts following the log.
func (c *member) start(ctx context.Context, url string) error {
	c.node.SetURL(url)
	sub, _, err := c.m.bus.Subscribe("", func(ev *bus.Event) bool {
		switch ev.Type {
		case signalClaimed, signalTakenOver:
			return true
		case signalLoggedOut:
			return ev.Origin != c.node.ID()
		case api.EventPtyCreated, api.EventPtyUpdated, api.EventPtyExited, api.EventPtyDeleted:
			return ev.Origin != c.node.ID()
		}
		return false
	})
	if err != nil {
		return err
	}
	go c.follow(sub)
	return c.node.Start(ctx, c.m.bus)
}

// share makes the pending requests of every kind settle across the nodes.
func (c *member) share() {
	c.m.perms.Share(c.m.base, c.claimed)
	c.m.questions.Share(c.m.base, c.claimed)
	c.m.mcp.ShareElicitations(c.m.base, c.claimed)
}

// follow acts on the signals of the other nodes, and prunes the requests resolved long ago, until
// the bus closes.
func (c *member) follow(sub *bus.Subscription) {
	defer sub.Close()
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	var batch []*bus.Event
	for {
		select {
		case <-sub.Ready():
		case <-prune.C:
			c.prunePending()
			continue
		}
		var err error
		batch, err = sub.Take(batch[:0])
		for _, ev := range batch {
			c.signal(ev)
		}
		if err != nil {
			return
		}
	}
}

// keepResolved is how long a resolved request stays stored, so that a late answer at any node
// still learns who answered first.
const keepResolved = time.Hour

func (c *member) prunePending() {
	if _, err := c.m.db.PrunePending(c.m.base, time.Now().Add(-keepResolved).UnixMilli()); err != nil {
		c.m.log.Warn("cluster: prune resolved requests", "err", err)
	}
}

func (c *member) signal(ev *bus.Event) {
	var env struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(ev.Payload, &env); err != nil {
		return
	}
	switch ev.Type {
	case signalClaimed:
		var s claimedSignal
		if json.Unmarshal(env.Properties, &s) == nil {
			c.apply(s)
		}
	case signalTakenOver:
		var s takenOverSignal
		if json.Unmarshal(env.Properties, &s) == nil && s.By != c.node.ID() {
			c.lost(s.Sessions)
		}
	case signalLoggedOut:
		var s loggedOutSignal
		if json.Unmarshal(env.Properties, &s) == nil {
			if err := c.m.auth.Ended(s.Nonce, time.Unix(s.Expires, 0)); err != nil {
				c.m.log.Error("cluster: record a logout made at another node", "err", err)
			}
		}
	case api.EventPtyCreated, api.EventPtyUpdated:
		var p api.PtyChanged
		if json.Unmarshal(env.Properties, &p) == nil {
			c.mu.Lock()
			c.terms[p.Info.ID] = remoteTerminal{node: ev.Origin, info: p.Info}
			c.mu.Unlock()
		}
	case api.EventPtyExited:
		var p api.PtyExited
		if json.Unmarshal(env.Properties, &p) == nil {
			c.mu.Lock()
			if t, ok := c.terms[p.ID]; ok {
				code := p.ExitCode
				t.info.Status, t.info.ExitCode = api.PtyStatusExited, &code
				c.terms[p.ID] = t
			}
			c.mu.Unlock()
		}
	case api.EventPtyDeleted:
		var p api.PtyDeleted
		if json.Unmarshal(env.Properties, &p) == nil {
			c.mu.Lock()
			delete(c.terms, p.ID)
			c.mu.Unlock()
		}
	}
}

// Terminal implements routes.Owners: a terminal another live node runs is served there.
func (c *member) Terminal(ctx context.Context, ptyID string) (*url.URL, error) {
	if _, err := c.m.ptys.Get(ptyID); err == nil {
		return nil, nil // this node's own
	}
	c.mu.Lock()
	t, ok := c.terms[ptyID]
	c.mu.Unlock()
	if !ok {
		// Perhaps created a moment ago at another node whose event has not reached this one yet:
		// ask the live nodes.
		return c.findTerminal(ctx, ptyID)
	}
	u, alive, err := c.nodeURL(ctx, t.node)
	if err != nil {
		return nil, err
	}
	if !alive {
		c.forgetTerminals(t.node)
		return nil, errs.E(errs.NotFound, "terminal %s ended with its node (%s), which stopped", ptyID, t.node)
	}
	return u, nil
}

// findTerminal asks every other live node whether it runs the terminal, and returns the URL of the
// one that does (nil when none does: this node answers 404).
func (c *member) findTerminal(ctx context.Context, ptyID string) (*url.URL, error) {
	nodes, err := c.db.Nodes(ctx, c.stale)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, n := range nodes {
		if n.ID == c.node.ID() || !n.Alive || n.URL == "" {
			continue
		}
		u, err := url.Parse(n.URL)
		if err != nil {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.JoinPath("pty", ptyID).String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set(routes.ForwardedHeader, "1")
		c.Authorize(req.Header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // that node is going away, and its terminals with it
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			return u, nil
		}
	}
	return nil, nil
}

// Terminals implements routes.Owners: the terminals of the other nodes, oldest first by ID.
func (c *member) Terminals() []api.PtyInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]api.PtyInfo, 0, len(c.terms))
	for _, t := range c.terms {
		out = append(out, t.info)
	}
	slices.SortFunc(out, func(a, b api.PtyInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (c *member) forgetTerminals(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range c.terms {
		if t.node == node {
			delete(c.terms, id)
		}
	}
}

// nodeURL is where a node serves, and whether it is alive.
func (c *member) nodeURL(ctx context.Context, node string) (*url.URL, bool, error) {
	nodes, err := c.db.Nodes(ctx, c.stale)
	if err != nil {
		return nil, false, err
	}
	for _, n := range nodes {
		if n.ID != node || !n.Alive {
			continue
		}
		if n.URL == "" {
			return nil, false, errs.E(errs.Unavailable, "node %s did not say where it serves (--advertise)", n.ID)
		}
		u, err := url.Parse(n.URL)
		return u, err == nil, err
	}
	return nil, false, nil
}

// apply gives a request waiting here the answer another node claimed for it.
func (c *member) apply(s claimedSignal) {
	switch s.Kind {
	case "permission":
		c.m.perms.Apply(s.ID)
	case "question":
		c.m.questions.Apply(s.ID)
	case "elicitation":
		c.m.mcp.ApplyElicitation(s.ID)
	}
}

// claimed is the services' Shared.Claimed: it tells the node that asked a request that an answer
// given here won.
func (c *member) claimed(kind, itemID, sessionID string) {
	c.m.bus.Emit(c.m.log, "", signalClaimed, claimedSignal{Kind: kind, ID: itemID, SessionID: sessionID})
}

// takeOver recovers the sessions this node has just taken over (from a node that died, or from
// its own previous life): what waited for a person is asked again with the same IDs and resumes,
// what was running is marked interrupted.
func (c *member) takeOver(ctx context.Context, leases []store.SessionLease) {
	ids := make(map[string]bool, len(leases))
	list := make([]string, 0, len(leases))
	for _, l := range leases {
		ids[l.SessionID] = true
		list = append(list, l.SessionID)
	}
	// A node that was only paused learns from this that its sessions are gone.
	c.m.bus.Emit(c.m.log, "", signalTakenOver, takenOverSignal{By: c.node.ID(), Sessions: list})
	if _, err := c.m.recover(ctx, func(sessionID string) bool { return ids[sessionID] }); err != nil {
		c.m.log.Error("cluster: recover the sessions taken over", "sessions", len(list), "err", err)
	}
}

// lost stops, without a word to the store, the turns of sessions another node took over while this
// one was paused: their writes are fenced already, and their requests are the new owner's. A
// session with no turn here is left alone.
func (c *member) lost(sessionIDs []string) {
	n := 0
	for _, id := range sessionIDs {
		if c.m.sessions.Running(id) {
			c.m.sessions.Release(id)
			n++
		}
	}
	if n > 0 {
		c.m.log.Warn("cluster: another node took over sessions this node was running (this node was not heard from in time)", "sessions", n)
	}
}

// openAuth opens the browser sessions' authority with the signing secret every node shares, and
// tells the other nodes of every logout here.
func (c *member) openAuth(ctx context.Context, creds auth.Credentials, keyFile string, bindPassword bool) (*auth.Authority, error) {
	candidate := make([]byte, 32)
	if _, err := rand.Read(candidate); err != nil {
		return nil, err
	}
	secret, err := c.db.Secret(ctx, "browser-sessions", candidate)
	if err != nil {
		return nil, err
	}
	a, err := auth.OpenShared(creds, keyFile, bindPassword, secret)
	if err != nil {
		return nil, err
	}
	a.OnEnded(func(nonce string, exp time.Time) {
		c.m.bus.Emit(c.m.log, "", signalLoggedOut, loggedOutSignal{Nonce: nonce, Expires: exp.Unix()})
	})
	return a, nil
}

// Run implements session.Runner: a turn runs here under the session's lease, acquired for a
// session no node runs yet. A session whose node was not heard from is never taken here: the
// failover takes it over with its recovery.
func (c *member) Run(ctx context.Context, sessionID string) (context.Context, error) {
	l, err := c.node.Lease(ctx, sessionID)
	if errors.Is(err, store.ErrOwnedElsewhere) {
		return nil, errs.E(errs.Conflict, "session %s runs on node %s; send this to that node (any node forwards it)", sessionID, l.Node)
	}
	if err != nil {
		return nil, err
	}
	return store.WithFence(ctx, l), nil
}

// Holds implements session.Runner.
func (c *member) Holds(ctx context.Context) error {
	l, ok := store.FenceOf(ctx)
	if !ok {
		return nil
	}
	cur, err := c.db.SessionLease(ctx, l.SessionID)
	if err != nil {
		return err
	}
	if cur.Node != l.Node || cur.Epoch != l.Epoch {
		return fmt.Errorf("session %s: %w (node %s runs it now)", l.SessionID, store.ErrFenced, cur.Node)
	}
	return nil
}

// Owner implements routes.Owners.
func (c *member) Owner(ctx context.Context, sessionID string) (*url.URL, error) {
	l, err := c.db.SessionLease(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if l.Node == c.node.ID() {
		return nil, nil
	}
	u, alive, err := c.nodeURL(ctx, l.Node)
	if err != nil || alive {
		return u, err
	}
	return nil, errs.E(errs.Unavailable, "the node that ran session %s (%s) stopped; another node takes the session over within %s: retry then",
		sessionID, l.Node, c.stale+cluster.DefaultHeartbeat)
}

// Authorize implements routes.Owners: nodes share the server's credentials.
func (c *member) Authorize(h http.Header) {
	h.Del("Cookie")
	if c.m.password != "" {
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.m.Username()+":"+c.m.password)))
	}
}

// health is the cluster part of GET /global/health.
func (c *member) health() *routes.ClusterHealth {
	h := c.node.Health()
	return &routes.ClusterHealth{ID: h.Cluster, Nodes: h.Alive, Sessions: h.Sessions, Listening: h.Listening, Delivered: h.Delivered, Queued: h.Queued}
}

var _ routes.Owners = (*member)(nil)
