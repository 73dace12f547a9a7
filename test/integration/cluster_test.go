//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// These tests run several real `tandem serve` processes on one PostgreSQL database (issue #28):
// each node has a data directory of its own (config, keys, snapshots, its lease file) and serves
// the same project path, since sessions carry their directory. The model is the offline demo
// model, which answers from the conversation alone, so whichever node continues a turn gets the
// same answer.

// takeoverLimit is how soon after a node stops another must own its sessions: the bound.
// It is a requirement the tests check, not a hang guard.
const takeoverLimit = 15 * time.Second

// clusterNode is one `tandem serve` process of a cluster, and a client for it.
type clusterNode struct {
	*tandem
	name string // A, B, C: how the tests speak of it
	id   string // its --node-id
	cmd  *exec.Cmd
	done chan struct{}
	log  *nodeLog
}

// cluster is the nodes of one test and the database they share ("" for a single SQLite node).
type cluster struct {
	db         string
	project    string
	userConfig string
	nodes      []*clusterNode
}

// startNodes starts n nodes on a fresh PostgreSQL database and returns once each answers.
func startNodes(tb testing.TB, n int) *cluster {
	tb.Helper()
	return startCluster(tb, n, testenv.Postgres(tb), "")
}

// startCluster starts n nodes on the database at db; with db "" it starts one node on its own
// SQLite file (the single-node figures of the benchmarks). userConfig, when not empty, is every
// node's user tandem.json. The first node starts alone, so that it applies the migrations; the
// others start together.
func startCluster(tb testing.TB, n int, db, userConfig string) *cluster {
	tb.Helper()
	if db == "" && n != 1 {
		tb.Fatalf("%d nodes need a shared database", n)
	}
	c := &cluster{db: db, project: tb.TempDir(), userConfig: userConfig}
	if err := os.WriteFile(filepath.Join(c.project, "README.md"), []byte("# one project, several nodes\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	c.nodes = make([]*clusterNode, n)
	c.nodes[0] = c.start(tb, "A")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		c.nodes[i] = c.prepare(tb, string(rune('A'+i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.nodes[i].launch()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("node %s: %v", c.nodes[i].name, err)
		}
	}
	return c
}

// start prepares and launches one node, failing the test when it does not come up.
func (c *cluster) start(tb testing.TB, name string) *clusterNode {
	tb.Helper()
	node := c.prepare(tb, name)
	if err := node.launch(); err != nil {
		tb.Fatalf("node %s: %v", name, err)
	}
	return node
}

// prepare makes a node's data directory and command, and registers its stop for the test's end.
func (c *cluster) prepare(tb testing.TB, name string) *clusterNode {
	tb.Helper()
	data := tb.TempDir()
	id := "node-" + strings.ToLower(name)
	if c.userConfig != "" {
		dir := filepath.Join(data, "config", "tandem")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tandem.json"), []byte(c.userConfig), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	args := []string{"serve", "--port", strconv.Itoa(testenv.UnusedPort(tb)), "--data-dir", data, "--dir", c.project, "--print-logs"}
	if c.db != "" {
		args = append(args, "--database", c.db, "--node-id", id)
	}
	cmd := exec.Command(builtBinary(tb), args...)
	// Nothing of the developer's own setup reaches a node: no provider keys (the demo model
	// answers), no TANDEM_* settings, and HOME and XDG directories inside its data directory.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "TANDEM_") ||
			strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "HOME="+data, "XDG_CONFIG_HOME="+filepath.Join(data, "config"),
		"XDG_STATE_HOME="+filepath.Join(data, "state"), "XDG_CACHE_HOME="+filepath.Join(data, "cache"),
		"TANDEM_SERVER_PASSWORD="+testPassword)
	nl := &nodeLog{url: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = nl, nl
	// The node's watchdog inherits its output; once the node is gone the log is complete enough.
	cmd.WaitDelay = 5 * time.Second
	node := &clusterNode{name: name, id: id, cmd: cmd, done: make(chan struct{}), log: nl,
		tandem: &tandem{project: c.project, data: data,
			client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, ResponseHeaderTimeout: waitLimit}}}}
	tb.Cleanup(func() {
		node.stop(tb)
		node.client.CloseIdleConnections()
		if tb.Failed() {
			tb.Logf("node %s (%s) log:\n%s", name, id, nl.tail(80))
		}
	})
	return node
}

// launch starts the process and waits for it to print its URL. It never calls t.Fatal, so that
// several nodes can start at once.
func (n *clusterNode) launch() error {
	if err := n.cmd.Start(); err != nil {
		return err
	}
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	select {
	case u := <-n.log.url:
		n.base = strings.TrimSuffix(u, "/")
		return nil
	case <-n.done:
		return fmt.Errorf("exited before it listened: %s", n.log.tail(20))
	case <-time.After(waitLimit):
		return fmt.Errorf("printed no URL within %s: %s", waitLimit, n.log.tail(20))
	}
}

// kill ends the node with SIGKILL, as a crash or an OOM kill does: no shutdown code runs.
func (n *clusterNode) kill(tb testing.TB) {
	tb.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	testenv.Recv(tb, n.done, "node "+n.name+" exiting after SIGKILL")
}

// signal sends sig (SIGSTOP, SIGCONT) to the node.
func (n *clusterNode) signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	if err := n.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("%v to node %s: %v", sig, n.name, err)
	}
}

// stop ends a node that still runs: SIGCONT (it may be paused), SIGTERM, and SIGKILL when it has
// not stopped within 15 s.
func (n *clusterNode) stop(tb testing.TB) {
	tb.Helper()
	if n.cmd.Process == nil {
		return
	}
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGCONT)
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(15 * time.Second):
		tb.Errorf("node %s did not stop within 15 s of SIGTERM", n.name)
		_ = n.cmd.Process.Kill()
		testenv.Recv(tb, n.done, "node "+n.name+" exiting after SIGKILL")
	}
}

// health is the node's GET /global/health.
func (n *clusterNode) health(tb testing.TB) map[string]any {
	tb.Helper()
	var h map[string]any
	n.call(tb, http.MethodGet, "/global/health", "", http.StatusOK, &h)
	return h
}

// nodeLog keeps what a node prints and finds the URL it listens on.
type nodeLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	url  chan string
	sent bool
}

var listeningOn = regexp.MustCompile(`listening on (http://\S+)`)

func (l *nodeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.sent {
		if m := listeningOn.FindSubmatch(l.buf.Bytes()); m != nil {
			l.url <- string(m[1])
			l.sent = true
		}
	}
	return len(p), nil
}

// size is how much the node has printed so far, for since.
func (l *nodeLog) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len()
}

// since is what the node printed after size returned at.
func (l *nodeLog) since(at int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf.Bytes()[at:])
}

// tail is the last n lines.
func (l *nodeLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(l.buf.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lease is the session's owner and epoch as the shared database holds them, read with psql (the
// database's own client, not tandem's code); "" when no node has run the session.
func (c *cluster) lease(tb testing.TB, sid string) (node string, epoch int64) {
	tb.Helper()
	out := c.psql(tb, `SELECT node || ' ' || epoch FROM session_owners WHERE session_id = :'v'`, sid)
	if out == "" {
		return "", 0
	}
	node, e, _ := strings.Cut(out, " ")
	epoch, err := strconv.ParseInt(e, 10, 64)
	if err != nil {
		tb.Fatalf("session_owners row %q", out)
	}
	return node, epoch
}

// psql runs one query with :'v' bound to v and returns its unaligned output.
func (c *cluster) psql(tb testing.TB, query, v string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", c.db, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-v", "v="+v)
	cmd.Stdin = strings.NewReader(query + ";\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("psql %s: %v\n%s", query, err, out)
	}
	return strings.TrimSpace(string(out))
}

// awaitTakeover waits for a node other than from to own the session, at most takeoverLimit after
// since, and returns the new owner, its epoch and how long it took.
func (c *cluster) awaitTakeover(tb testing.TB, sid, from string, since time.Time) (string, int64, time.Duration) {
	tb.Helper()
	for {
		node, epoch := c.lease(tb, sid)
		if node != "" && node != from {
			return node, epoch, time.Since(since)
		}
		if time.Since(since) > takeoverLimit {
			tb.Fatalf("no other node owns session %s %s after node %s stopped (owner %q epoch %d)", sid, takeoverLimit, from, node, epoch)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// node returns the cluster's node with the ID.
func (c *cluster) node(tb testing.TB, id string) *clusterNode {
	tb.Helper()
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	tb.Fatalf("no node %q", id)
	return nil
}

// startBalancer runs deploy/nginx-cluster.conf in a real nginx on a free loopback port in front of
// the cluster's nodes, and returns its base URL.
func (c *cluster) startBalancer(tb testing.TB) string {
	tb.Helper()
	nginx := testenv.Program(tb, "nginx", "apt-get install nginx")
	shipped, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(tb), "deploy", "nginx-cluster.conf"))
	if err != nil {
		tb.Fatal(err)
	}
	conf := string(shipped)
	var servers strings.Builder
	for i, n := range c.nodes {
		old := fmt.Sprintf("    server 127.0.0.1:%d;\n", 4801+i)
		if !strings.Contains(conf, old) {
			tb.Fatalf("deploy/nginx-cluster.conf no longer lists %q; update this test", old)
		}
		conf = strings.Replace(conf, old, "", 1)
		fmt.Fprintf(&servers, "    server %s;\n", strings.TrimPrefix(n.base, "http://"))
	}
	conf = strings.Replace(conf, "upstream tandem_nodes {\n", "upstream tandem_nodes {\n"+servers.String(), 1)
	listen := "127.0.0.1:" + strconv.Itoa(testenv.UnusedPort(tb))
	conf = strings.Replace(conf, "listen 127.0.0.1:8080;", "listen "+listen+";", 1)
	dir := tb.TempDir()
	errorLog := filepath.Join(dir, "error.log")
	main := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[2]s info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[3]s
}
`, dir, errorLog, conf)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", errorLog)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		testenv.Recv(tb, exited, "nginx exiting")
		if tb.Failed() {
			b, _ := os.ReadFile(errorLog)
			tb.Logf("nginx's error log:\n%s", b)
		}
	})
	lb := "http://" + listen
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	testenv.Eventually(tb, "nginx answering on "+listen, func() bool {
		select {
		case <-exited:
			b, _ := os.ReadFile(errorLog)
			tb.Fatalf("nginx exited:\n%s", b)
		default:
		}
		res, err := probe.Get(lb + "/global/health")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})
	return lb
}

// countedCommand appends a line to ran.txt in the project on each run and prints a word the
// model's answer repeats.
const countedCommand = "echo ran | tee -a ran.txt"

// runs counts the command's runs: the lines of ran.txt.
func (c *cluster) runs(tb testing.TB) int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(c.project, "ran.txt"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// awaitListed waits until the node's GET /permission lists the request.
func (n *clusterNode) awaitListed(tb testing.TB, sid, requestID string) {
	tb.Helper()
	testenv.Eventually(tb, "GET /permission on node "+n.name+" listing "+requestID, func() bool {
		for _, r := range n.pending(tb, "") {
			if r.ID == requestID && r.SessionID == sid {
				return true
			}
		}
		return false
	})
}

// finishedTurn checks the session's stored end: the tool completed with the command's output and
// the model's answer repeating it, read on the node.
func (n *clusterNode) finishedTurn(tb testing.TB, sid string) {
	tb.Helper()
	msgs := n.messages(tb, sid)
	tools := toolParts(msgs)
	if len(tools) != 1 || tools[0].State == nil || tools[0].State.Status != "completed" || tools[0].State.Output == nil || !strings.Contains(*tools[0].State.Output, "ran") {
		tb.Fatalf("node %s: the session's tool parts are %+v, want one completed run of %q", n.name, tools, countedCommand)
	}
	last := msgs[len(msgs)-1]
	if last.Info.Role != "assistant" || last.Info.Error != nil || !strings.Contains(textOf(last), "ran") {
		tb.Fatalf("node %s: the turn ended with %+v (text %q), want the model's answer reporting the output", n.name, last.Info, textOf(last))
	}
}

// settled returns the session's messages once what is stored after a turn's end (its diff
// summary) has landed: two reads half a second apart agree.
func (n *clusterNode) settled(tb testing.TB, sid string) []session.WithParts {
	tb.Helper()
	var msgs []session.WithParts
	testenv.Eventually(tb, "session "+sid+" settling on node "+n.name, func() bool {
		prev := n.messages(tb, sid)
		time.Sleep(500 * time.Millisecond)
		msgs = n.messages(tb, sid)
		return cmp.Equal(prev, msgs)
	})
	return msgs
}

// ofSession keeps the events with a cursor that concern the session.
func ofSession(evs []event, sid string) []event {
	var out []event
	for _, e := range evs {
		if e.cursor != "" && strings.Contains(string(e.Properties), sid) {
			out = append(out, e)
		}
	}
	return out
}

// through cuts evs after the first event that matches.
func through(evs []event, pred func(event) bool) []event {
	for i, e := range evs {
		if pred(e) {
			return evs[:i+1]
		}
	}
	return evs
}

// frames names each event by its cursor, its ID and its type, for comparing streams.
func frames(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.cursor + " " + e.ID + " " + e.Type
	}
	return out
}

func TestClusterOfThreeNodesAsksOnceAnswersOnceAndStreamsTheTurnEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three real servers on PostgreSQL")
	}
	c := startNodes(t, 3)
	a, b, cn := c.nodes[0], c.nodes[1], c.nodes[2]
	for _, n := range c.nodes {
		h := n.health(t)
		if !jsonContains(h["node"], n.id) || !jsonContains(h["store"], "postgres") || h["cluster"] == nil {
			t.Errorf("node %s: GET /global/health is %v; want its node %q, the store postgres and the cluster", n.name, h, n.id)
		}
	}

	sid := a.newSession(t)
	onC := cn.subscribe(t)
	onB := b.subscribe(t)
	a.promptAsync(t, sid, "run: "+countedCommand)
	asked := onC.waitFor(t, "permission.asked on node C", ofType("permission.asked", sid)).permission()
	if onB.waitFor(t, "permission.asked on node B", ofType("permission.asked", sid)).ID == "" {
		t.Fatal("permission.asked on node B has no event ID")
	}
	for _, n := range []*clusterNode{b, cn} {
		n.awaitListed(t, sid, asked.ID)
	}
	if owner, _ := c.lease(t, sid); owner != a.id {
		t.Fatalf("session %s is owned by %q, want node A (%s), where it was prompted", sid, owner, a.id)
	}

	// B's client drops mid-turn, before the answer; it comes back on C with its cursor.
	onB.close()
	readOnB := ofSession(onB.since(0), sid)
	if len(readOnB) == 0 {
		t.Fatal("the client on node B read no event of the session with a cursor")
	}
	lastOnB := readOnB[len(readOnB)-1].cursor

	t.Run("twenty racing replies over the three nodes give one 200 and nineteen 409s naming the winner", func(t *testing.T) {
		type result struct {
			client string
			status int
			body   []byte
			err    error
		}
		results := make([]result, 20)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range results {
			n := c.nodes[i%3]
			client := fmt.Sprintf("racer-%d-on-%s", i, n.name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				status, body, err := n.try(http.MethodPost, "/permission/"+asked.ID+"/reply", `{"reply":"once"}`, "X-Tandem-Client", client)
				results[i] = result{client, status, body, err}
			}()
		}
		close(start)
		wg.Wait()
		winner := ""
		for _, r := range results {
			if r.err == nil && r.status == http.StatusOK {
				if winner != "" {
					t.Fatalf("two replies won: %s and %s", winner, r.client)
				}
				winner = r.client
			}
		}
		if winner == "" {
			t.Fatalf("no reply won: %+v", results)
		}
		for _, r := range results {
			if r.client == winner {
				continue
			}
			var e errorBody
			if r.err != nil || r.status != http.StatusConflict || json.Unmarshal(r.body, &e) != nil ||
				e.Name != "AlreadyResolvedError" || e.Data["requestID"] != asked.ID || !strings.Contains(fmt.Sprint(e.Data["client"]), winner) {
				t.Errorf("%s: %d %s (%v); want 409 AlreadyResolvedError naming %s", r.client, r.status, r.body, r.err, winner)
			}
		}
	})

	t.Run("node C's stream shows the whole turn and the command ran once", func(t *testing.T) {
		replied := onC.waitFor(t, "permission.replied on node C", ofType("permission.replied", sid))
		if id, reply := replied.replied(); id != asked.ID || reply != "once" {
			t.Fatalf("permission.replied %s %s, want %s once", id, reply, asked.ID)
		}
		onC.waitFor(t, "the tool completed on node C", toolIn(sid, "completed"))
		onC.waitFor(t, "session.idle on node C", idle(sid))
		if n := c.runs(t); n != 1 {
			t.Fatalf("the command ran %d times, want once", n)
		}
		for _, n := range c.nodes {
			n.finishedTurn(t, sid)
			if left := n.pending(t, sid); len(left) != 0 {
				t.Errorf("node %s still lists %+v", n.name, left)
			}
		}
	})

	t.Run("a client that moves from node B to node C with Last-Event-ID reads every event once", func(t *testing.T) {
		resumed := cn.subscribeAfter(t, lastOnB)
		resumed.waitFor(t, "session.idle on the resumed stream", idle(sid))
		moved := append(readOnB, through(ofSession(resumed.since(0), sid), idle(sid))...)
		whole := through(ofSession(onC.since(0), sid), idle(sid))
		for len(whole) > 0 && whole[0].cursor != moved[0].cursor {
			whole = whole[1:] // C's client connected first and may have read more before B's did
		}
		if diff := cmp.Diff(frames(whole), frames(moved)); diff != "" {
			t.Fatalf("the moved client's events differ from an uninterrupted client's (-C +B then C):\n%s", diff)
		}
		seen := map[string]bool{}
		for _, e := range moved {
			if seen[e.cursor] {
				t.Fatalf("event %s read twice", e.cursor)
			}
			seen[e.cursor] = true
		}
	})

	t.Run("deploy/nginx-cluster.conf spreads requests over the nodes and each answers the same", func(t *testing.T) {
		lb := &tandem{base: c.startBalancer(t), client: &http.Client{Transport: &http.Transport{}}}
		defer lb.client.CloseIdleConnections()
		want := a.settled(t, sid)
		nodes := map[string]bool{}
		for range 3 * len(c.nodes) {
			var h map[string]any
			lb.call(t, http.MethodGet, "/global/health", "", http.StatusOK, &h)
			node, _ := json.Marshal(h["node"])
			nodes[string(node)] = true
			if diff := cmp.Diff(want, lb.messages(t, sid)); diff != "" {
				t.Fatalf("the session's messages through the balancer differ from node A's (-A +balancer):\n%s", diff)
			}
		}
		if len(nodes) != len(c.nodes) {
			t.Errorf("the balancer reached the nodes %v, want all %d", nodes, len(c.nodes))
		}
		events := lb.subscribe(t)
		other := lb.newSession(t)
		events.waitFor(t, "session.created through the balancer", func(e event) bool {
			return e.Type == "session.created" && strings.Contains(string(e.Properties), other)
		})
	})
}

func TestFailoverGivesAKilledNodesSessionToAnotherNodeAndItsWaitingApprovalFinishesTheTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three real servers on PostgreSQL")
	}
	// Every node's user config allows sleep, so that a command is running on A when it dies.
	c := startCluster(t, 3, testenv.Postgres(t), `{"permission": {"bash": {"sleep *": "allow"}}}`)
	a, b, cn := c.nodes[0], c.nodes[1], c.nodes[2]
	sid := a.newSession(t)
	onB := b.subscribe(t)
	a.promptAsync(t, sid, "run: "+countedCommand)
	asked := onB.waitFor(t, "permission.asked on node B", ofType("permission.asked", sid)).permission()
	b.awaitListed(t, sid, asked.ID)
	cn.awaitListed(t, sid, asked.ID)
	sleeping := a.newSession(t)
	a.promptAsync(t, sleeping, "run: sleep 30")
	onB.waitFor(t, "sleep running on node A", toolIn(sleeping, "running"))
	owner, epoch := c.lease(t, sid)
	if owner != a.id {
		t.Fatalf("session %s is owned by %q, want node A (%s)", sid, owner, a.id)
	}

	killed := time.Now()
	a.kill(t)
	newOwner, newEpoch, took := c.awaitTakeover(t, sid, a.id, killed)
	t.Logf("node %s owns the session %s after node A's SIGKILL (limit %s)", newOwner, took.Round(time.Millisecond), takeoverLimit)
	if newEpoch <= epoch {
		t.Errorf("the takeover kept epoch %d (was %d); a new owner must fence the old one", newEpoch, epoch)
	}
	survivor := c.node(t, newOwner)
	if h := survivor.health(t); !jsonContains(h["node"], survivor.id) {
		t.Errorf("node %s's health %v does not name it", survivor.name, h)
	}
	testenv.Eventually(t, "node "+survivor.name+"'s health counting two live nodes and the sessions it took", func() bool {
		cl, _ := survivor.health(t)["cluster"].(map[string]any)
		taken, _ := cl["sessions"].(float64)
		return cl["nodes"] == float64(2) && taken >= 1
	})

	// Still waiting, with the same ID, on both survivors; the answer goes to the one that does not
	// own the session.
	b.awaitListed(t, sid, asked.ID)
	cn.awaitListed(t, sid, asked.ID)
	other := b
	if other == survivor {
		other = cn
	}
	other.reply(t, asked.ID, "once", "")
	onB.waitFor(t, "permission.replied", func(e event) bool {
		id, _ := e.replied()
		return e.Type == "permission.replied" && id == asked.ID
	})
	onB.waitFor(t, "the tool completed", toolIn(sid, "completed"))
	onB.waitFor(t, "session.idle", idle(sid))
	if n := c.runs(t); n != 1 {
		t.Fatalf("the command ran %d times, want once", n)
	}
	b.finishedTurn(t, sid)
	cn.finishedTurn(t, sid)

	// The command that ran on A died with it.
	t.Run("the command that was running on the killed node is stored as interrupted", func(t *testing.T) {
		var tools []session.Part
		testenv.Eventually(t, "the sleep's tool call ending", func() bool {
			tools = toolParts(b.messages(t, sleeping))
			return len(tools) == 1 && tools[0].State != nil && tools[0].State.Status != "running"
		})
		if tools[0].State.Status != "error" || !strings.Contains(tools[0].State.Error, "interrupted") {
			t.Fatalf("the sleep that ran on node A: %+v; want its tool call recorded as interrupted", tools[0].State)
		}
	})
	t.Run("a client of another node sees that command end and its session go idle", func(t *testing.T) {
		testenv.Eventually(t, "node B's stream showing the interrupted tool call", func() bool {
			for _, e := range onB.since(0) {
				if p, ok := e.part(); ok && p.SessionID == sleeping && p.Type == "tool" && p.State != nil && p.State.Status == "error" {
					return true
				}
			}
			return false
		})
		testenv.Eventually(t, "node B's stream showing the session idle", func() bool {
			for _, e := range onB.since(0) {
				if e.Type == "session.idle" && e.sessionID() == sleeping {
					return true
				}
			}
			return false
		})
	})
}

func TestFencingKeepsAPausedNodeFromWritingAfterItsSessionWasTakenOver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three real servers on PostgreSQL")
	}
	c := startNodes(t, 3)
	a, b := c.nodes[0], c.nodes[1]
	sid := a.newSession(t)
	onB := b.subscribe(t)
	a.promptAsync(t, sid, "run: "+countedCommand)
	asked := onB.waitFor(t, "permission.asked on node B", ofType("permission.asked", sid)).permission()
	b.awaitListed(t, sid, asked.ID)

	paused := time.Now()
	a.signal(t, syscall.SIGSTOP)
	newOwner, _, took := c.awaitTakeover(t, sid, a.id, paused)
	t.Logf("node %s owns the session %s after node A's SIGSTOP (limit %s)", newOwner, took.Round(time.Millisecond), takeoverLimit)

	b.reply(t, asked.ID, "once", "")
	onB.waitFor(t, "the tool completed", toolIn(sid, "completed"))
	onB.waitFor(t, "session.idle", idle(sid))
	b.finishedTurn(t, sid)
	before := b.settled(t, sid)
	mark := onB.mark()

	resumedAt := a.log.size()
	a.signal(t, syscall.SIGCONT)
	// A runs again: it answers, and its loops (heartbeat, tailer, the waiter of its old turn) get
	// a few seconds to try whatever they had left to do.
	testenv.Eventually(t, "node A answering after SIGCONT", func() bool {
		status, _, err := a.try(http.MethodGet, "/global/health", "")
		return err == nil && status == http.StatusOK
	})
	for watch := time.Now(); time.Since(watch) < 4*time.Second; time.Sleep(200 * time.Millisecond) {
		if diff := cmp.Diff(before, b.messages(t, sid)); diff != "" {
			t.Fatalf("the session changed after node A resumed (-before +after):\n%s", diff)
		}
	}
	if n := c.runs(t); n != 1 {
		t.Errorf("the command ran %d times, want once", n)
	}
	// Nothing of the turn A had run is announced again: no permission event, no tool update.
	for _, e := range ofSession(onB.since(mark), sid) {
		if p, ok := e.part(); strings.HasPrefix(e.Type, "permission.") || ok && p.Type == "tool" {
			t.Errorf("after node A resumed: %s %s", e.Type, e.Properties)
		}
	}
	if owner, _ := c.lease(t, sid); owner != newOwner {
		t.Errorf("after node A resumed the session is owned by %q, want %q", owner, newOwner)
	}
	t.Logf("node A's log after SIGCONT:\n%s", a.log.since(resumedAt))
}

// A terminal's process runs on the node that started it; the issue asks that its routes and its
// WebSocket be served by, or proxied to, that node, so that a client behind a load balancer
// reaches it from any node.
func TestClusterNodesServeATerminalFromTheNodeThatRunsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two real servers on PostgreSQL")
	}
	c := startNodes(t, 2)
	a, b := c.nodes[0], c.nodes[1]
	var pty struct {
		ID string `json:"id"`
	}
	a.call(t, http.MethodPost, "/pty", `{"command":"sh","args":["-c","echo terminal-on-a; exec sleep 60"]}`, http.StatusOK, &pty)

	status, body := b.request(t, http.MethodGet, "/pty/"+pty.ID, "")
	if status != http.StatusOK || !strings.Contains(string(body), pty.ID) {
		t.Fatalf("GET /pty/%s on node B: %d %s; want node A's terminal", pty.ID, status, body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	header := http.Header{}
	header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPassword)))
	conn, res, err := websocket.Dial(ctx, strings.Replace(b.base, "http://", "ws://", 1)+"/pty/"+pty.ID+"/connect", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		t.Fatalf("the terminal's WebSocket on node B: %d %v", status, err)
	}
	defer conn.CloseNow()
	var out strings.Builder
	for !strings.Contains(out.String(), "terminal-on-a") {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading node A's terminal through node B: %v (read %q)", err, out.String())
		}
		if typ == websocket.MessageText {
			out.Write(data)
		}
	}
}
