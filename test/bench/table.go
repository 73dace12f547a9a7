//go:build unix

package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

type row struct {
	key, label, unit string
	higherIsBetter   bool
}

func rows(sz sizes, res *results) []row {
	messages := 0
	if sp, ok := res.spread(tandemKind, "messages"); ok {
		messages = int(sp.Median)
	}
	n := func(v int) string { return thousands(float64(v)) }
	out := []row{
		{"first_start", "first start → first 200 (fresh directories)", "ms", false},
		{"start", fmt.Sprintf("start → first 200 (median of %s on the same directories)", plural(sz.starts, "start")), "ms", false},
		{"pss_idle", "idle memory, PSS of the process tree", "MB", false},
		{"pss_prompts", fmt.Sprintf("memory after %s prompts (PSS of the tree)", n(min(100, sz.prompts))), "MB", false},
		{"get_med", "`GET /session` median, keep-alive", "ms", false},
		{"get_p99", "`GET /session` p99", "ms", false},
		{"load", "`GET /session?limit=10`, 4 connections", "req/s", true},
		{"page100", fmt.Sprintf("`GET /session/{id}/message?limit=100`, %s-message session", n(messages)), "ms", false},
		{"page_all", fmt.Sprintf("all %s messages", n(messages)), "ms", false},
		{"permission", "permission round trip, client-measured (asked → reply → tool running)", "ms", false},
		{"tool_bytes", fmt.Sprintf("`/event` bytes for one `seq 1 %s` tool call", n(sz.seq)), "KB", false},
		{"pty", fmt.Sprintf("PTY over WebSocket, %.0f MB (limit: local PTY)", float64(ptyOutput(sz.ptyZeros))/1e6), "MB/s", true},
		{"sse", fmt.Sprintf("SSE fan-out to %s clients (POST → all read it)", n(sz.sseClients)), "ms", false},
		{"sse_pss", fmt.Sprintf("memory added by %s SSE clients (PSS of the tree)", n(sz.sseClients)), "MB", false},
		{"prompt_first", fmt.Sprintf("per-prompt time, prompts 1–%d (median)", sz.window), "ms", false},
		{"prompt_last", fmt.Sprintf("per-prompt time, prompts %d–%d (median)", sz.prompts-sz.window+1, sz.prompts), "ms", false},
		{"prompt_growth", "per-prompt growth, last ÷ first", "×", false},
	}
	for _, level := range sz.sessionLevels {
		k := strconv.Itoa(level)
		out = append(out,
			row{"list@" + k, fmt.Sprintf("`GET /session?limit=10` at %s sessions", n(level)), "ms", false},
			row{"create@" + k, fmt.Sprintf("`POST /session` on the way to %s sessions", n(level)), "ms", false},
			row{"pss@" + k, fmt.Sprintf("memory at %s sessions (PSS of the tree)", n(level)), "MB", false},
			row{"restart@" + k, fmt.Sprintf("restart → first 200 with %s sessions", n(level)), "ms", false})
	}
	return out
}

// results are every figure of every server, one sample per round (a round measures each server
// in turn, each alone).
type results struct {
	rounds int
	runs   map[kind]map[string][]sample
}

func newResults(rounds int) *results {
	return &results{rounds: rounds, runs: map[kind]map[string][]sample{}}
}

func (r *results) add(k kind, round int, f figures) {
	if r.runs[k] == nil {
		r.runs[k] = map[string][]sample{}
	}
	for key, s := range f {
		if r.runs[k][key] == nil {
			r.runs[k][key] = make([]sample, r.rounds)
		}
		r.runs[k][key][round] = s
	}
}

func (r *results) spread(k kind, key string) (spread, bool) { return summarize(r.runs[k][key]) }

// values are a figure's runs by round, NaN where a round lacks it.
func (r *results) values(k kind, key string) []float64 {
	out := make([]float64, r.rounds)
	for i := range out {
		out[i] = nan()
		if s := r.runs[k][key]; i < len(s) && s[i].ok {
			out[i] = s[i].v
		}
	}
	return out
}

// report is the run as -json prints it.
type report struct {
	Machine   machine      `json:"machine"`
	Versions  string       `json:"versions"`
	Rounds    int          `json:"rounds"`
	Order     []string     `json:"order"`
	LoadStart float64      `json:"load_start"`
	LoadEnd   float64      `json:"load_end"`
	Figures   []figureJSON `json:"figures"`
	sz        sizes
	res       *results
	opencode  bool
}

type figureJSON struct {
	Key        string            `json:"key"`
	Label      string            `json:"label"`
	Unit       string            `json:"unit"`
	Higher     bool              `json:"higher_is_better"`
	Servers    map[string]spread `json:"servers"`
	VsOpenCode *ratioJSON        `json:"tandem_vs_opencode,omitempty"`
	VsLimit    *ratioJSON        `json:"tandem_vs_limit,omitempty"`
}

// ratioJSON is tandem's figure ÷ the other's, paired by round; Refused says why it is not printed.
type ratioJSON struct {
	comparison
	Printed bool   `json:"printed"`
	Refused string `json:"refused,omitempty"`
}

func (rep *report) build() {
	for _, r := range rows(rep.sz, rep.res) {
		f := figureJSON{Key: r.key, Label: r.label, Unit: r.unit, Higher: r.higherIsBetter, Servers: map[string]spread{}}
		for _, k := range []kind{tandemKind, opencodeKind, limitKind} {
			if sp, ok := rep.res.spread(k, r.key); ok {
				f.Servers[k.String()] = sp
			}
		}
		if r.unit != "×" {
			td := rep.res.values(tandemKind, r.key)
			if c, ok := compare(td, rep.res.values(opencodeKind, r.key)); ok {
				f.VsOpenCode = &ratioJSON{comparison: c, Printed: c.why == printed, Refused: c.why.note()}
			}
			if c, ok := compare(td, rep.res.values(limitKind, r.key)); ok {
				f.VsLimit = &ratioJSON{comparison: c, Printed: c.why == printed, Refused: c.why.note()}
			}
		}
		rep.Figures = append(rep.Figures, f)
	}
}

// printTable writes the heading and one markdown table: each server's median with the spread of
// its runs and the load they were taken at, and how tandem compares, or "–" with a footnote
// where the runs do not support a ratio.
func (rep *report) printTable(w io.Writer) {
	m := rep.Machine
	fmt.Fprintf(w, "%s; %s, %d CPUs; %s; load average %s at the start, %s at the end; %d round(s), each server alone in turn (%s)\n\n",
		rep.Versions, m.CPU, m.NProc, m.Date.Format("2006-01-02 15:04 MST"), loadText(rep.LoadStart), loadText(rep.LoadEnd),
		rep.Rounds, strings.Join(rep.Order, " → "))
	fmt.Fprintln(w, "Each cell: the median of the rounds (min–max of the rounds) · the 1-minute load average the runs were taken at.")
	fmt.Fprintln(w)
	head := "| figure | tandem |"
	rule := "|---|---|"
	if rep.opencode {
		head += " OpenCode |"
		rule += "---|"
	}
	head += " limit |"
	rule += "---|"
	if rep.opencode {
		head += " tandem vs OpenCode |"
		rule += "---|"
	}
	head += " tandem vs limit |"
	rule += "---|"
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	var notes []refusal
	mark := func(why refusal) string {
		i := slices.Index(notes, why)
		if i < 0 {
			notes = append(notes, why)
			i = len(notes) - 1
		}
		return "–" + superscript(i+1)
	}
	for _, f := range rep.Figures {
		line := "| " + f.Label + " | " + cell(f.Servers["tandem"], f.Unit) + " |"
		if rep.opencode {
			line += " " + cell(f.Servers["opencode"], f.Unit) + " |"
		}
		line += " " + cell(f.Servers["limit"], f.Unit) + " |"
		if rep.opencode {
			line += " "
			if c := f.VsOpenCode; c != nil {
				if c.why != printed {
					line += mark(c.why)
				} else {
					line += advantage(c.comparison, f.Higher)
				}
			}
			line += " |"
		}
		line += " "
		if c := f.VsLimit; c != nil {
			if c.why != printed {
				line += mark(c.why)
			} else {
				line += ofLimit(c.comparison, f.Higher)
			}
		}
		line += " |"
		fmt.Fprintln(w, line)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for i, why := range notes {
			fmt.Fprintf(w, "%s %s.\n", superscript(i+1), why.note())
		}
	}
}

func superscript(n int) string {
	digits := []rune("⁰¹²³⁴⁵⁶⁷⁸⁹")
	var b strings.Builder
	for _, c := range strconv.Itoa(n) {
		b.WriteRune(digits[c-'0'])
	}
	return b.String()
}

func loadText(v float64) string {
	if !ok(v) {
		return "unknown"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// cell is a server's median, its runs' range when they differ, and the load they were taken at.
func cell(sp spread, unit string) string {
	if sp.Runs == 0 {
		return "–"
	}
	s := value(sp.Median, true, unit)
	if sp.Runs > 1 {
		s += " (" + bare(sp.Min, unit) + "–" + bare(sp.Max, unit) + ")"
	}
	s += " · load " + loadText(sp.LoadMin)
	if sp.LoadMax != sp.LoadMin {
		s += "–" + loadText(sp.LoadMax)
	}
	return s
}

// bare is value without the unit.
func bare(v float64, unit string) string {
	s := value(v, true, unit)
	if unit == "×" {
		return strings.TrimSuffix(s, "×")
	}
	return strings.TrimSuffix(s, " "+unit)
}

// advantage reads tandem ÷ OpenCode as how far tandem is ahead or behind, with the rounds' range.
func advantage(c comparison, higherIsBetter bool) string {
	r, lo, hi := 1/c.Ratio, 1/c.Max, 1/c.Min // OpenCode ÷ tandem: > 1 is tandem ahead on a time
	if higherIsBetter {
		r, lo, hi = c.Ratio, c.Min, c.Max
	}
	word := "ahead"
	if r < 1 {
		r, lo, hi, word = 1/r, 1/hi, 1/lo, "behind"
	}
	return ratio(r) + " " + word + " (" + strings.TrimSuffix(ratio(lo), "×") + "–" + ratio(hi) + ")"
}

// ofLimit reads tandem ÷ the limit as a cost ("2.1× the limit") or, for a rate, a share of it.
func ofLimit(c comparison, higherIsBetter bool) string {
	if higherIsBetter {
		return fmt.Sprintf("%.0f %% of the limit (%.0f–%.0f %%)", 100*c.Ratio, 100*c.Min, 100*c.Max)
	}
	return ratio(c.Ratio) + " the limit (" + strings.TrimSuffix(ratio(c.Min), "×") + "–" + ratio(c.Max) + ")"
}

func value(v float64, ok bool, unit string) string {
	if !ok {
		return "–"
	}
	var s string
	switch {
	case unit == "req/s":
		s = thousands(v)
	case v >= 100:
		s = thousands(v)
	case v >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	}
	if unit == "×" {
		return s + "×"
	}
	return s + " " + unit
}

// thousands formats v rounded to an integer with commas: 12,345.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ratio formats a ratio with two significant digits or more: 0.42×, 3.1×, 489×.
func ratio(r float64) string {
	switch {
	case r < 1:
		return strconv.FormatFloat(r, 'f', 2, 64) + "×"
	case r < 100:
		return strconv.FormatFloat(r, 'f', 1, 64) + "×"
	default:
		return thousands(r) + "×"
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return thousands(float64(n)) + " " + noun + "s"
}
