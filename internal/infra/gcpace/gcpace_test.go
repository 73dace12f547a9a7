package gcpace

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

const mib = 1 << 20

func TestPercentFor(t *testing.T) {
	for _, tc := range []struct {
		name           string
		live, headroom uint64
		want           int
	}{
		{"before the first collection the goal is the headroom", 0, 8 * mib, 200},
		{"a 1 MiB heap may grow by the headroom", 1 * mib, 8 * mib, 225},
		{"a 3 MiB heap may grow by the headroom", 3 * mib, 8 * mib, 266},
		{"a heap as large as the headroom is paced as at the default", 8 * mib, 8 * mib, 100},
		{"a larger heap is paced as at the default", 200 * mib, 8 * mib, 100},
		{"a headroom below the runtime's minimum changes nothing", 1 * mib, 1 * mib, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentFor(tc.live, tc.headroom); got != tc.want {
				t.Fatalf("percentFor(%d MiB, %d MiB) = %d, want %d", tc.live/mib, tc.headroom/mib, got, tc.want)
			}
		})
	}
}

// TestGoalFollowsTheLiveHeap checks the percentages against what the runtime makes of them: the
// heap goal it reports after a collection is live + max(live, headroom), give or take the stacks
// and globals the runtime adds to the live heap.
func TestGoalFollowsTheLiveHeap(t *testing.T) {
	p := Start(16 * mib)
	defer p.Stop()
	collect(t, p)
	goal, live := read(t, "/gc/heap/goal:bytes"), read(t, "/gc/heap/live:bytes")
	if live >= 16*mib {
		t.Skipf("the test binary's live heap is %d MiB, not small", live/mib)
	}
	if want := live + 16*mib; goal < want-want/10 || goal > want+want/5 {
		t.Fatalf("heap goal %.1f MiB with %.1f MiB live, want about %.1f MiB (GOGC %d)",
			float64(goal)/mib, float64(live)/mib, float64(want)/mib, percentOf(p))
	}

	// A live heap larger than the headroom brings the default pacing back.
	ballast := make([]*[1 << 16]byte, 32*mib/(1<<16))
	for i := range ballast {
		ballast[i] = new([1 << 16]byte)
	}
	collect(t, p)
	if got := percentOf(p); got != 100 {
		t.Fatalf("GOGC %d with %d MiB live, want 100", got, read(t, "/gc/heap/live:bytes")/mib)
	}
	runtime.KeepAlive(ballast)
}

func TestStopRestoresTheSetting(t *testing.T) {
	before := read(t, "/gc/gogc:percent")
	p := Start(64 * mib)
	if got := read(t, "/gc/gogc:percent"); got <= before {
		t.Fatalf("GOGC %d after Start, want above %d", got, before)
	}
	p.Stop()
	if got := read(t, "/gc/gogc:percent"); got != before {
		t.Fatalf("GOGC %d after Stop, want %d again", got, before)
	}
	// The cleanup still armed finds the pacer stopped and leaves the setting alone.
	runtime.GC()
	runtime.GC()
	if got := read(t, "/gc/gogc:percent"); got != before {
		t.Fatalf("GOGC %d after a collection, want %d", got, before)
	}
}

// collect runs collections until the pacer has re-tuned after one that began after this call.
func collect(t *testing.T, p *Pacer) {
	t.Helper()
	p.mu.Lock()
	seen := p.retunes
	p.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		p.mu.Lock()
		n := p.retunes
		p.mu.Unlock()
		if n >= seen+2 { // the first may have been armed before this call's allocations
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the pacer did not re-tune after a collection within 10 s")
}

func percentOf(p *Pacer) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.percent
}

func read(t *testing.T, name string) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("metric %s is not available", name)
	}
	return s[0].Value.Uint64()
}
