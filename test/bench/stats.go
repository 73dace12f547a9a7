//go:build unix

package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// spread is one figure of one server over the rounds: the median and the extremes of its runs,
// and the extremes of the load average each run was taken at.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Runs   int     `json:"runs"`
	// LoadMin and LoadMax are the 1-minute load averages (/proc/loadavg) read as the runs were taken.
	LoadMin float64 `json:"load_min"`
	LoadMax float64 `json:"load_max"`
}

// medianOf is the median of the finite values (the mean of the middle two for an even count) and
// false when there are none.
func medianOf(vs []float64) (float64, bool) {
	s := finite(vs)
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m], true
	}
	return (s[m-1] + s[m]) / 2, true
}

func finite(vs []float64) []float64 {
	var out []float64
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// summarize is the spread of one figure's runs (a missing run is NaN) with the loads they were
// taken at; false when no run took the figure.
func summarize(runs []sample) (spread, bool) {
	var vs, loads []float64
	for _, r := range runs {
		if r.ok {
			vs, loads = append(vs, r.v), append(loads, r.load)
		}
	}
	med, ok := medianOf(vs)
	if !ok {
		return spread{}, false
	}
	return spread{Median: med, Min: slices.Min(vs), Max: slices.Max(vs), Runs: len(vs),
		LoadMin: slices.Min(loads), LoadMax: slices.Max(loads)}, true
}

// refusal says why a ratio is not printed.
type refusal int

const (
	printed refusal = iota
	oneRound
	disagree
	noisy
)

// note is the table's footnote for the refusal.
func (r refusal) note() string {
	switch r {
	case oneRound:
		return "one round only: with no second run there is no spread to judge the ratio by (run with -rounds 3 or more)"
	case disagree:
		return "the rounds disagree on which is ahead: in some the first server was better, in others the second"
	case noisy:
		return "the runs differ by more than the ratio: one server's runs of this figure, or the rounds' own ratios, lie further apart (max ÷ min) than the two servers do"
	}
	return ""
}

// comparison is a ÷ b over the rounds both servers took the figure in, paired by round (the two
// ran one after the other, so each pair shares the machine's state of the moment).
type comparison struct {
	Ratio float64 `json:"ratio"` // the median of the paired rounds' a ÷ b
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	why   refusal
}

// compare pairs the rounds of a and b (NaN where a round lacks the figure) and decides whether the
// ratio a ÷ b may be printed. It may not when fewer than two rounds pair up, when the rounds' own
// ratios fall on both sides of 1, or when the noise is as large as the effect: when either
// server's runs, or the rounds' ratios, span a factor (max ÷ min) larger than the ratio's distance
// from 1 (the ratio, or its inverse when below 1). A noisy machine so yields "–", never a
// flattering number.
func compare(a, b []float64) (comparison, bool) {
	var as, bs, rs []float64
	for i := range min(len(a), len(b)) {
		if ok(a[i]) && ok(b[i]) && b[i] != 0 {
			as, bs, rs = append(as, a[i]), append(bs, b[i]), append(rs, a[i]/b[i])
		}
	}
	if len(rs) == 0 {
		return comparison{}, false
	}
	r, _ := medianOf(rs)
	c := comparison{Ratio: r, Min: slices.Min(rs), Max: slices.Max(rs)}
	effect := math.Max(r, 1/r)
	switch {
	case len(rs) < 2:
		c.why = oneRound
	case c.Min < 1 && c.Max > 1:
		c.why = disagree
	case factor(as) > effect || factor(bs) > effect || c.Max/c.Min > effect:
		c.why = noisy
	}
	return c, true
}

func nan() float64 { return math.NaN() }

func ok(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// factor is how far apart the values lie, max ÷ min (1 for one value; +Inf when one is 0 and the
// other not).
func factor(vs []float64) float64 {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if lo == hi {
		return 1
	}
	if lo <= 0 {
		return math.Inf(1)
	}
	return hi / lo
}

// portRange is the -ports flag: the loopback ports the harness may listen on, both ends included.
type portRange struct{ lo, hi int }

// parsePorts reads "41000-41100" (or one port, "41000"); "" is no range (ephemeral ports).
func parsePorts(s string) (portRange, error) {
	if s == "" {
		return portRange{}, nil
	}
	loS, hiS, isRange := strings.Cut(s, "-")
	if !isRange {
		hiS = loS
	}
	lo, err := strconv.Atoi(strings.TrimSpace(loS))
	if err != nil {
		return portRange{}, fmt.Errorf("-ports %q: %q is not a port number", s, loS)
	}
	hi, err := strconv.Atoi(strings.TrimSpace(hiS))
	if err != nil {
		return portRange{}, fmt.Errorf("-ports %q: %q is not a port number", s, hiS)
	}
	switch {
	case lo < 1 || hi > 65535:
		return portRange{}, fmt.Errorf("-ports %q: ports run from 1 to 65535", s)
	case lo > hi:
		return portRange{}, fmt.Errorf("-ports %q: the range runs backwards (write LOW-HIGH)", s)
	case hi-lo+1 < minPorts:
		return portRange{}, fmt.Errorf("-ports %q: %d ports, the harness needs at least %d (the model, the dead registry and each server start)", s, hi-lo+1, minPorts)
	}
	return portRange{lo, hi}, nil
}

// minPorts is the smallest range -ports accepts: the scripted model and the dead registry hold one
// each for the whole run, and each start of a server takes the next free one.
const minPorts = 4

var errNoPort = errors.New("no free port left in the -ports range")
