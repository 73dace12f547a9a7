// Package gcpace paces the garbage collector of a long-running server whose live heap is small.
//
// At the runtime's default (GOGC=100) the heap goal is twice the live heap, and at least 4 MiB.
// tandem's live heap is about 1–3 MiB, so under a stream of small requests (each allocates a few
// KB: net/http's request, header maps, the response) a collection came every few hundred
// requests, and each paid its fixed costs: stopping the world twice, starting the mark workers,
// scanning every goroutine's stack. Measured with wrk on GET /session, collections were about a
// tenth of the server's CPU.
//
// The pacer gives the collector a headroom instead: it lets the heap grow to the live heap plus
// the larger of the live heap and the headroom before the next collection. A large live heap is
// paced exactly as at the default (twice the live heap); a small one may grow by the headroom
// (8 MiB by default) first, which is all the memory this costs.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultHeadroom is what tandem serve gives the collector.
const DefaultHeadroom = 8 << 20

// runtimeMinimum is the runtime's smallest heap goal at GOGC=100; it scales with GOGC.
const runtimeMinimum = 4 << 20

// Pacer re-tunes GOGC after every collection, from the live heap that collection left.
type Pacer struct {
	headroom uint64

	mu       sync.Mutex
	stopped  bool
	original int // GOGC before Start, restored by Stop
	percent  int // the GOGC in force
	retunes  int // collections seen, for tests
	live     []metrics.Sample
}

// Start sets GOGC for the current live heap and re-tunes it after every collection until Stop.
// It changes a process-wide setting: a program starts one pacer, and only when GOGC is not set
// in its environment (whoever set it has chosen).
func Start(headroom uint64) *Pacer {
	p := &Pacer{headroom: headroom, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.percent = percentFor(p.liveHeap(), headroom)
	p.original = debug.SetGCPercent(p.percent)
	p.arm()
	return p
}

// Stop restores the GOGC the process had before Start.
func (p *Pacer) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		debug.SetGCPercent(p.original)
	}
}

// sentinel is a heap object nothing refers to, so the next collection frees it and its cleanup
// tells the pacer that a collection has happened. It holds pointers so that it is never one of
// the tiny allocations the runtime packs together (those may outlive a collection).
type sentinel struct{ _, _ *byte }

// arm schedules afterGC for the next collection.
func (p *Pacer) arm() {
	runtime.AddCleanup(new(sentinel), (*Pacer).afterGC, p)
}

// afterGC runs on the runtime's cleanup goroutine once a collection has freed the sentinel.
func (p *Pacer) afterGC() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.retunes++
	if percent := percentFor(p.liveHeap(), p.headroom); percent != p.percent {
		p.percent = percent
		debug.SetGCPercent(percent)
	}
	p.arm()
}

// liveHeap is the heap the last collection found live (0 before the first one).
func (p *Pacer) liveHeap() uint64 {
	metrics.Read(p.live)
	if p.live[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return p.live[0].Value.Uint64()
}

// percentFor is the GOGC whose heap goal is live + max(live, headroom). The runtime's goal at a
// given GOGC is the larger of live × (1 + GOGC/100) and 4 MiB × GOGC/100, so the goal is reached
// at the smaller of the two percentages that make either term equal it; never below the default.
func percentFor(live, headroom uint64) int {
	goal := live + max(live, headroom)
	percent := goal * 100 / runtimeMinimum
	if live > 0 {
		percent = min(percent, (goal-live)*100/live)
	}
	return int(max(percent, 100))
}
