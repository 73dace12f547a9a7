//go:build unix

package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/test/bench/loadgen"
)

// latencies sends n sequential requests over one keep-alive connection and returns each one's
// time, from sending the request to having read the whole response.
func latencies(ctx context.Context, t *target, method, path, body string, n int) ([]time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := t.call(ctx, method, path, body, http.StatusOK); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}

// quantile is the q-quantile (0 to 1) of the durations, in milliseconds.
func quantile(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(int(q*float64(len(s))), len(s)-1)
	return float64(s[i]) / float64(time.Millisecond)
}

func median(d []time.Duration) float64 { return quantile(d, 0.5) }

// throughput is a wrk-like load: conns keep-alive connections, each sending its next request as
// soon as it has read the previous response, for the given time. It returns requests per second.
// Every response must be a 200.
func throughput(ctx context.Context, t *target, path string, conns int, d time.Duration) (float64, error) {
	host := strings.TrimPrefix(t.base, "http://")
	start := time.Now()
	n, err := loadgen.Run(ctx, host, loadgen.Get(host, path, t.auth), conns, 0, start.Add(d))
	if err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
