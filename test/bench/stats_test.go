//go:build unix

package main

import (
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestMedianOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
		ok   bool
	}{
		{"an odd count gives the middle value", []float64{9, 1, 5}, 5, true},
		{"an even count gives the mean of the middle two", []float64{4, 1, 3, 2}, 2.5, true},
		{"a missing run is left out", []float64{math.NaN(), 7, 3}, 5, true},
		{"no runs give no median", []float64{math.NaN()}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := medianOf(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("medianOf(%v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSummarizeKeepsTheRangeAndTheLoads(t *testing.T) {
	sp, ok := summarize([]sample{{v: 3, load: 1.5, ok: true}, {}, {v: 1, load: 4, ok: true}, {v: 2, load: 0.5, ok: true}})
	want := spread{Median: 2, Min: 1, Max: 3, Runs: 3, LoadMin: 0.5, LoadMax: 4}
	if !ok || sp != want {
		t.Fatalf("summarize = %+v, %v; want %+v", sp, ok, want)
	}
	if _, ok := summarize([]sample{{}, {}}); ok {
		t.Fatal("summarize of rounds that never took the figure reported a spread")
	}
}

func TestCompareRefusesRatiosTheRunsDoNotSupport(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		a, b  []float64
		want  refusal
		ratio float64 // the median of the rounds' a ÷ b
	}{
		{"a steady lead is printed", []float64{1, 1.1, 1}, []float64{10, 11, 12}, printed, 0.1},
		{"a single round has no spread to judge by", []float64{1}, []float64{10}, oneRound, 0.1},
		{"rounds that disagree on who is ahead are refused", []float64{1, 1, 1}, []float64{0.9, 1.2, 1.1}, disagree, 1 / 1.1},
		{"a server whose runs differ by more than the ratio is refused", []float64{1, 1.05, 2.2}, []float64{1.5, 1.6, 3}, noisy, 1 / 1.5},
		{"noise smaller than the ratio is printed", []float64{1, 1.2, 1.1}, []float64{2, 2.2, 2.3}, printed, 0.5},
		{"a spread of the other server's runs wider than the ratio is refused", []float64{1, 1, 1}, []float64{1.5, 3, 6}, noisy, 1.0 / 3},
		{"only rounds where both servers took the figure are paired", []float64{1, nan, 1.1}, []float64{nan, 5, 11}, oneRound, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := compare(tc.a, tc.b)
			if !ok {
				t.Fatalf("compare(%v, %v) found no pair", tc.a, tc.b)
			}
			if c.why != tc.want || math.Abs(c.Ratio-tc.ratio) > 1e-9 {
				t.Fatalf("compare(%v, %v) = %+v, refusal %d; want ratio %v, refusal %d", tc.a, tc.b, c, c.why, tc.ratio, tc.want)
			}
		})
	}
	if _, ok := compare([]float64{1, nan}, []float64{nan, 2}); ok {
		t.Fatal("compare paired rounds in which only one server took the figure")
	}
}

func TestCompareRatioIsTheMedianOfPairedRounds(t *testing.T) {
	c, ok := compare([]float64{2, 3, 4}, []float64{1, 1, 1})
	if !ok || c.Ratio != 3 || c.Min != 2 || c.Max != 4 {
		t.Fatalf("compare = %+v, %v; want ratio 3 over 2–4", c, ok)
	}
}

func TestParsePorts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     portRange
		err      string
	}{
		{"no flag means ephemeral ports", "", portRange{}, ""},
		{"a range is read with both ends included", "41000-41100", portRange{41000, 41100}, ""},
		{"spaces around the numbers are allowed", " 41000 - 41003 ", portRange{41000, 41003}, ""},
		{"a backwards range is refused", "41100-41000", portRange{}, "backwards"},
		{"a port above 65535 is refused", "65530-65536", portRange{}, "1 to 65535"},
		{"port 0 is refused", "0-10", portRange{}, "1 to 65535"},
		{"a word is refused", "low-high", portRange{}, "not a port number"},
		{"a range too small for the run is refused", "41000-41001", portRange{}, "at least"},
		{"a single port is too small a range", "41000", portRange{}, "at least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePorts(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parsePorts(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parsePorts(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestPortPoolListensOnlyInsideItsRangeAndSkipsBusyPorts(t *testing.T) {
	// Find four consecutive free ports by holding them, then release all but the first.
	var r portRange
	for base := 42000; base < 60000 && r.lo == 0; base += 7 {
		var held []net.Listener
		for p := base; p < base+4; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				break
			}
			held = append(held, ln)
		}
		if len(held) == 4 {
			r = portRange{base, base + 3}
			for _, ln := range held[1:] {
				ln.Close()
			}
			defer held[0].Close()
		} else {
			for _, ln := range held {
				ln.Close()
			}
		}
	}
	if r.lo == 0 {
		t.Fatal("no four consecutive free loopback ports between 42000 and 60000")
	}
	pool := &portPool{r: r}
	var got []int
	for range 3 {
		ln, err := pool.listen()
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		defer ln.Close()
		got = append(got, ln.Addr().(*net.TCPAddr).Port)
	}
	want := []int{r.lo + 1, r.lo + 2, r.lo + 3}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ports %v, want %v (the first of the range is busy)", got, want)
		}
	}
	if _, err := pool.listen(); err == nil {
		t.Fatal("the pool listened outside its range when every port in it was busy")
	}
}
