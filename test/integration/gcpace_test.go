//go:build linux

package integration

import (
	"bytes"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestServePacesTheCollector runs the real binary with the runtime's collection trace on and reads
// the heap goal of the collections a stream of requests causes: `tandem serve` lets its small heap
// grow by 8 MiB before collecting (package gcpace), and GOGC in the environment hands the pacing
// back to Go (a goal of twice the live heap, at least 4 MB).
func TestServePacesTheCollector(t *testing.T) {
	bin, err := sharedBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		atLeast bool // the goal is at least 8 MB, else below it
	}{
		{"the server lets a small heap grow by 8 MiB", map[string]string{"GODEBUG": "gctrace=1"}, true},
		{"GOGC in the environment leaves the pacing to Go", map[string]string{"GODEBUG": "gctrace=1", "GOGC": "100"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := &gcTrace{}
			srv := startBinaryServer(t, bin, binaryOptions{env: tc.env, stderr: trace})
			before := trace.count()
			deadline := time.Now().Add(waitLimit)
			for trace.count() < before+3 {
				if time.Now().After(deadline) {
					t.Fatalf("%d collections in %s of requests", trace.count()-before, waitLimit)
				}
				for range 100 {
					srv.do(t, http.MethodGet, "/session", "", nil)
				}
			}
			goal := trace.lastGoal()
			if tc.atLeast != (goal >= 8) {
				t.Fatalf("the last collection's heap goal is %d MB (want at least 8: %v)", goal, tc.atLeast)
			}
		})
	}
}

// gcTrace reads the heap goals from the runtime's gctrace lines on a process's stderr.
type gcTrace struct {
	mu      sync.Mutex
	partial []byte
	goals   []int
}

var goalRE = regexp.MustCompile(`^gc \d+ .* (\d+) MB goal`)

func (g *gcTrace) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.partial = append(g.partial, p...)
	for {
		line, rest, ok := bytes.Cut(g.partial, []byte("\n"))
		if !ok {
			return len(p), nil
		}
		if m := goalRE.FindSubmatch(line); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			g.goals = append(g.goals, n)
		}
		g.partial = append(g.partial[:0], rest...)
	}
}

func (g *gcTrace) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.goals)
}

func (g *gcTrace) lastGoal() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.goals[len(g.goals)-1]
}
