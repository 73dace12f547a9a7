//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestTablePrintsADashWithAFootnoteForARefusedRatio renders a two-round run in which tandem is
// steadily ahead of OpenCode on GET /session but the limit's runs are noisier than tandem's lead
// over it, and OpenCode's start has only one round.
func TestTablePrintsADashWithAFootnoteForARefusedRatio(t *testing.T) {
	res := newResults(2)
	put := func(k kind, round int, key string, v, load float64) {
		res.add(k, round, figures{key: {v: v, load: load, ok: true}})
	}
	put(tandemKind, 0, "get_med", 0.20, 1.5)
	put(tandemKind, 1, "get_med", 0.22, 2.5)
	put(opencodeKind, 0, "get_med", 16, 1.7)
	put(opencodeKind, 1, "get_med", 18, 2.1)
	put(limitKind, 0, "get_med", 0.10, 1.6)
	put(limitKind, 1, "get_med", 0.19, 2.0)
	put(tandemKind, 0, "start", 30, 1)
	put(tandemKind, 1, "start", 31, 1)
	put(opencodeKind, 1, "start", 2600, 1)
	rep := &report{Machine: machine{CPU: "Test CPU", NProc: 2, Date: time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)},
		Versions: "tandem test", Rounds: 2, Order: []string{"tandem", "opencode", "limit"}, LoadStart: 1, LoadEnd: 2,
		sz: smoke, res: res, opencode: true}
	rep.build()
	var out bytes.Buffer
	rep.printTable(&out)
	table := out.String()
	for _, want := range []string{
		"Test CPU, 2 CPUs; 2026-11-27 22:00 UTC; load average 1.00 at the start, 2.00 at the end; 2 round(s)",
		"| `GET /session` median, keep-alive | 0.21 ms (0.20–0.22) · load 1.50–2.50 | 17.0 ms (16.0–18.0) · load 1.70–2.10 | 0.15 ms (0.10–0.19) · load 1.60–2.00 | 80.9× ahead (80.0–81.8×) | –² |",
		"² the runs differ by more than the ratio",
		"| 30.5 ms (30.0–31.0) · load 1.00 | 2,600 ms · load 1.00 | – | –¹ |  |",
		"¹ one round only",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}
