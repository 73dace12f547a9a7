//go:build linux

package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// The cluster's figures beside one node's, each on real `tandem serve` processes:
//
//	go test -run '^$' -bench Cluster -benchtime 200x ./test/integration
//
// "one node on SQLite" is tandem as it runs by default; "three nodes on PostgreSQL" is three
// processes sharing one throwaway PostgreSQL (testenv.Postgres), where every event goes through
// the shared log before any node's /event carries it.

// clusterShapes are the two set-ups every cluster benchmark measures.
var clusterShapes = []struct {
	name  string
	nodes int
}{
	{"one node on SQLite", 1},
	{"three nodes on PostgreSQL", 3},
}

func startShape(b *testing.B, nodes int) *cluster {
	b.Helper()
	if nodes == 1 {
		return startCluster(b, 1, "", "")
	}
	return startCluster(b, nodes, testenv.Postgres(b), "")
}

// approvalWorkers is how many sessions ask and are answered at once.
const approvalWorkers = 6

// BenchmarkClusterApprovals is approvals per second: six sessions at once, each prompting
// `run: echo …` on one node, its client reading permission.asked on the next node's /event,
// answering there (POST /permission/{id}/reply, once) and reading session.idle; an approval
// counts when its turn has ended. With one node every step is on that node.
func BenchmarkClusterApprovals(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			c := startShape(b, shape.nodes)
			workers := make([]*approvalWorker, approvalWorkers)
			for i := range workers {
				owner, answerer := c.nodes[i%len(c.nodes)], c.nodes[(i+1)%len(c.nodes)]
				workers[i] = &approvalWorker{owner: owner, answerer: answerer, sid: owner.newSession(b), events: answerer.subscribe(b)}
			}
			var next atomic.Int64
			errs := make(chan error, len(workers))
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if err := w.approve(i); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			var replies []time.Duration
			for _, w := range workers {
				replies = append(replies, w.replies...)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "approvals/s")
			slices.Sort(replies)
			b.ReportMetric(float64(replies[len(replies)/2])/float64(time.Millisecond), "ms-median-reply-POST")
		})
	}
}

// approvalWorker is one session of BenchmarkClusterApprovals and its client.
type approvalWorker struct {
	owner, answerer *clusterNode // the node prompted, and the node whose /event is read and answered on
	sid             string
	events          *stream         // on answerer
	replies         []time.Duration // each reply POST's time
}

// approve runs the worker's i-th approval to the end of its turn. It returns an error rather than
// failing the benchmark: it runs on a goroutine of its own.
func (w *approvalWorker) approve(i int64) error {
	status, body, err := w.owner.try(http.MethodPost, "/session/"+w.sid+"/prompt_async", promptBody(fmt.Sprintf("run: echo approval-%d", i)))
	if err != nil || status != http.StatusNoContent {
		return fmt.Errorf("prompt on node %s: %d %s %v", w.owner.name, status, body, err)
	}
	asked, err := w.events.next("permission.asked", ofType("permission.asked", w.sid))
	if err != nil {
		return err
	}
	sent := time.Now()
	status, body, err = w.answerer.try(http.MethodPost, "/permission/"+asked.permission().ID+"/reply", `{"reply":"once"}`)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("reply on node %s: %d %s %v", w.answerer.name, status, body, err)
	}
	w.replies = append(w.replies, time.Since(sent))
	_, err = w.events.next("session.idle", idle(w.sid))
	return err
}

// BenchmarkClusterEventLatency is the time from sending POST /session to one node until a client
// of another node's /event reads its session.created (with one node, the same node's /event):
// the commit, the shared log, the doorbell and the other node's tail, one event at a time.
func BenchmarkClusterEventLatency(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			c := startShape(b, shape.nodes)
			writer, reader := c.nodes[0], c.nodes[len(c.nodes)-1]
			events := reader.subscribe(b)
			latencies := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				sent := time.Now()
				var s struct {
					ID string `json:"id"`
				}
				writer.call(b, http.MethodPost, "/session", "{}", http.StatusOK, &s)
				seen := events.waitFor(b, "session.created on node "+reader.name, func(e event) bool {
					return e.Type == "session.created" && strings.Contains(string(e.Properties), s.ID)
				})
				latencies = append(latencies, seen.at.Sub(sent))
			}
			b.StopTimer()
			reportMillis(b, latencies)
		})
	}
}

// BenchmarkClusterPrompt is a prompt's round trip: POST /session/{id}/message with the demo model,
// from sending it until the whole turn is answered. With three nodes it is sent in turn to the node
// that runs the session (which writes it through the shared log) and to the other two (which
// forward it to that node), and each is reported apart.
func BenchmarkClusterPrompt(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			c := startShape(b, shape.nodes)
			owner := c.nodes[0]
			sid := owner.newSession(b)
			owner.call(b, http.MethodPost, "/session/"+sid+"/message", promptBody("warm up"), http.StatusOK, nil)
			var atOwner, elsewhere []time.Duration
			b.ResetTimer()
			for i := range b.N {
				node := c.nodes[i%len(c.nodes)]
				sent := time.Now()
				node.call(b, http.MethodPost, "/session/"+sid+"/message", promptBody(fmt.Sprintf("prompt %d", i)), http.StatusOK, nil)
				if node == owner {
					atOwner = append(atOwner, time.Since(sent))
				} else {
					elsewhere = append(elsewhere, time.Since(sent))
				}
			}
			b.StopTimer()
			median := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2]) / float64(time.Millisecond)
			}
			b.ReportMetric(median(atOwner), "ms-median-at-owner")
			if len(elsewhere) > 0 {
				b.ReportMetric(median(elsewhere), "ms-median-forwarded")
			}
		})
	}
}
