//go:build unix

package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

type row struct {
	key, label, unit string
	higherIsBetter   bool
}

func rows(sz sizes, res results) []row {
	messages := int(res[tandemKind]["messages"])
	n := func(v int) string { return thousands(float64(v)) }
	out := []row{
		{"start", "start → first 200", "ms", false},
		{"rss_idle", "idle RSS", "MB", false},
		{"rss_prompts", fmt.Sprintf("RSS after %s prompts", n(min(100, sz.prompts))), "MB", false},
		{"get_med", "`GET /session` median, keep-alive", "ms", false},
		{"get_p99", "`GET /session` p99", "ms", false},
		{"load", "`GET /session?limit=10`, 4 connections", "req/s", true},
		{"page100", fmt.Sprintf("`GET /session/{id}/message?limit=100`, %s-message session", n(messages)), "ms", false},
		{"page_all", fmt.Sprintf("all %s messages", n(messages)), "ms", false},
		{"permission", "permission round trip, client-measured (asked → reply → tool running)", "ms", false},
		{"pty", fmt.Sprintf("PTY over WebSocket, %.0f MB (limit: local PTY)", float64(ptyOutput(sz.ptyZeros))/1e6), "MB/s", true},
		{"sse", fmt.Sprintf("SSE fan-out to %s clients (POST → all read it)", n(sz.sseClients)), "ms", false},
		{"sse_rss", fmt.Sprintf("RSS added by %s SSE clients", n(sz.sseClients)), "MB", false},
		{"prompt_first", fmt.Sprintf("per-prompt time, prompts 1–%d (median)", sz.window), "ms", false},
		{"prompt_last", fmt.Sprintf("per-prompt time, prompts %d–%d (median)", sz.prompts-sz.window+1, sz.prompts), "ms", false},
		{"prompt_growth", "per-prompt growth, last ÷ first", "×", false},
	}
	for _, level := range sz.sessionLevels {
		k := strconv.Itoa(level)
		out = append(out,
			row{"list@" + k, fmt.Sprintf("`GET /session?limit=10` at %s sessions", n(level)), "ms", false},
			row{"create@" + k, fmt.Sprintf("`POST /session` on the way to %s sessions", n(level)), "ms", false},
			row{"rss@" + k, fmt.Sprintf("RSS at %s sessions", n(level)), "MB", false})
	}
	return out
}

// printTable writes one markdown table: tandem, the limit, and when it ran, OpenCode, with how
// tandem compares to each.
func printTable(w io.Writer, res results, sz sizes, withOpenCode bool) {
	head := "| figure | tandem | limit | tandem vs limit |"
	rule := "|---|---|---|---|"
	if withOpenCode {
		head += " OpenCode | tandem vs OpenCode |"
		rule += "---|---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, r := range rows(sz, res) {
		td, tok := res[tandemKind][r.key]
		lim, lok := res[limitKind][r.key]
		line := "| " + r.label + " | " + value(td, tok, r.unit) + " | " + value(lim, lok, r.unit) + " | "
		if tok && lok && r.unit != "×" {
			if r.higherIsBetter {
				line += fmt.Sprintf("%.0f %% of the limit", 100*td/lim)
			} else {
				line += ratio(td/lim) + " the limit"
			}
		}
		line += " |"
		if withOpenCode {
			oc, ook := res[opencodeKind][r.key]
			line += " " + value(oc, ook, r.unit) + " | "
			if tok && ook && td > 0 && oc > 0 {
				adv := oc / td
				if r.higherIsBetter {
					adv = td / oc
				}
				if adv >= 1 {
					line += ratio(adv) + " ahead"
				} else {
					line += ratio(1/adv) + " behind"
				}
			}
			line += " |"
		}
		fmt.Fprintln(w, line)
	}
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
