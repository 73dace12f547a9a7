//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// figures are one server's measurements, by row key (see rows).
type figures map[string]float64

type results map[kind]figures

const mb = 1 << 20

// measure starts t (several times, for the start figure), takes every figure that applies to it,
// and leaves it running for the caller to stop.
func measure(ctx context.Context, log *slog.Logger, t *target, sz sizes, work string) (figures, error) {
	f := figures{}
	var starts []time.Duration
	for i := range sz.starts {
		if i > 0 {
			t.stop()
		}
		d, err := t.start(ctx, work)
		if err != nil {
			return nil, err
		}
		starts = append(starts, d)
	}
	f["start"] = median(starts)
	// OpenCode sets up a directory's instance on the first request for it.
	if _, err := t.call(ctx, http.MethodGet, "/session", "", http.StatusOK); err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	rss, err := t.rss()
	if err != nil {
		return nil, err
	}
	f["rss_idle"] = float64(rss) / mb

	sessions := 0
	var sid string
	if t.kind != limitKind {
		for i := range 6 {
			id, err := t.newSession(ctx)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				sid = id
			}
			sessions++
		}
	}
	log.Info("GET /session latency and load", "server", t.name)
	times, err := latencies(ctx, t, http.MethodGet, "/session", "", sz.latency)
	if err != nil {
		return nil, err
	}
	f["get_med"], f["get_p99"] = median(times), quantile(times, 0.99)
	if f["load"], err = throughput(ctx, t, "/session?limit=10", 4, sz.load); err != nil {
		return nil, err
	}

	if t.kind != limitKind {
		log.Info("prompts in one session", "server", t.name, "prompts", sz.prompts)
		if err := measurePrompts(ctx, t, sz, sid, f); err != nil {
			return nil, err
		}
		log.Info("message pages", "server", t.name)
		for _, p := range []struct{ key, query string }{{"page100", "?limit=100"}, {"page_all", ""}} {
			times, err := latencies(ctx, t, http.MethodGet, "/session/"+sid+"/message"+p.query, "", sz.pages)
			if err != nil {
				return nil, err
			}
			f[p.key] = median(times)
		}
		log.Info("permission round trips", "server", t.name)
		times, err := permissionRoundTrip(ctx, t, sz.permissions)
		if err != nil {
			return nil, fmt.Errorf("permission round trip: %w", err)
		}
		sessions++
		f["permission"] = median(times)
	}

	log.Info("SSE fan-out", "server", t.name, "clients", sz.sseClients)
	fan, grew, err := fanOut(ctx, t, sz.sseClients, sz.sseRounds)
	if err != nil {
		return nil, fmt.Errorf("SSE fan-out: %w", err)
	}
	sessions += sz.sseRounds
	f["sse"] = median(fan)
	if grew >= 0 {
		f["sse_rss"] = float64(grew) / mb
	} else {
		// The server gave memory back while the clients connected (OpenCode's garbage collector
		// does, after the prompts): what the clients cost is hidden in that, so it is not shown.
		log.Warn("SSE fan-out: the server's RSS fell while the clients connected; the RSS they added is not shown",
			"server", t.name, "fell_mb", float64(-grew)/mb)
	}

	log.Info("PTY throughput", "server", t.name)
	var rates []float64
	for range sz.ptyRuns {
		var rate float64
		if t.kind == limitKind {
			rate, err = ptyLocal(sz.ptyZeros)
		} else {
			rate, err = ptyWebSocket(ctx, t, sz.ptyZeros)
		}
		if err != nil {
			return nil, fmt.Errorf("PTY: %w", err)
		}
		rates = append(rates, rate)
	}
	slices.Sort(rates)
	f["pty"] = rates[len(rates)/2]

	if t.kind != limitKind {
		perSession := time.Duration(0)
		for _, level := range sz.sessionLevels {
			if need := perSession * time.Duration(level-sessions); need > sz.growthBudget {
				log.Warn("growth: skipped, creating the sessions would take too long", "server", t.name, "sessions", level, "estimate", need.Round(time.Second))
				continue
			}
			log.Info("growth", "server", t.name, "sessions", level)
			var creates []time.Duration
			for ; sessions < level; sessions++ {
				start := time.Now()
				if _, err := t.newSession(ctx); err != nil {
					return nil, err
				}
				creates = append(creates, time.Since(start))
			}
			times, err := latencies(ctx, t, http.MethodGet, "/session?limit=10", "", sz.growthLatencies)
			if err != nil {
				return nil, err
			}
			rss, err := t.rss()
			if err != nil {
				return nil, err
			}
			key := strconv.Itoa(level)
			f["list@"+key], f["rss@"+key] = median(times), float64(rss)/mb
			if len(creates) > 0 {
				f["create@"+key] = median(creates)
				perSession = time.Duration(f["create@"+key] * float64(time.Millisecond))
			}
		}
	}
	return f, nil
}

// measurePrompts sends sz.prompts prompts, one after another, to one session and records the time
// of each POST /session/{id}/message (the whole turn), the RSS after the 100th, and the number of
// messages the session then holds.
func measurePrompts(ctx context.Context, t *target, sz sizes, sid string, f figures) error {
	times := make([]time.Duration, 0, sz.prompts)
	for i := range sz.prompts {
		start := time.Now()
		if _, err := t.call(ctx, http.MethodPost, "/session/"+sid+"/message", promptBody(fmt.Sprintf("Prompt %d: say something.", i+1)), http.StatusOK); err != nil {
			return err
		}
		times = append(times, time.Since(start))
		if i+1 == min(100, sz.prompts) {
			rss, err := t.rss()
			if err != nil {
				return err
			}
			f["rss_prompts"] = float64(rss) / mb
		}
	}
	f["prompt_first"], f["prompt_last"] = median(times[:sz.window]), median(times[len(times)-sz.window:])
	f["prompt_growth"] = f["prompt_last"] / f["prompt_first"]
	var all []json.RawMessage
	if err := t.callJSON(ctx, http.MethodGet, "/session/"+sid+"/message", "", &all); err != nil {
		return err
	}
	f["messages"] = float64(len(all))
	return nil
}
