//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
	request := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
	if t.auth != "" {
		request += "Authorization: " + t.auth + "\r\n"
	}
	request += "\r\n"
	var wg sync.WaitGroup
	counts := make([]int, conns)
	errs := make([]error, conns)
	start := time.Now()
	deadline := start.Add(d)
	for i := range conns {
		wg.Go(func() {
			var dialer net.Dialer
			c, err := dialer.DialContext(ctx, "tcp", host)
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(deadline.Add(30 * time.Second))
			r := bufio.NewReaderSize(c, 64<<10)
			for time.Now().Before(deadline) {
				if _, err := c.Write([]byte(request)); err != nil {
					errs[i] = err
					return
				}
				if err := readResponse(r); err != nil {
					errs[i] = err
					return
				}
				counts[i]++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := 0
	for i := range conns {
		if errs[i] != nil {
			return 0, errs[i]
		}
		total += counts[i]
	}
	return float64(total) / elapsed.Seconds(), nil
}

// readResponse reads one HTTP/1.1 response, sized by Content-Length or chunked, and checks that it
// is a 200.
func readResponse(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
		return fmt.Errorf("status %q", bytes.TrimSpace(line))
	}
	length, chunked := -1, false
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		h := bytes.TrimSpace(line)
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return err
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		}
	}
	if !chunked {
		if length < 0 {
			return fmt.Errorf("a response with neither a length nor chunks")
		}
		_, err := r.Discard(length)
		return err
	}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil {
			return err
		}
		if _, err := r.Discard(int(size) + 2); err != nil {
			return err
		}
		if size == 0 {
			return nil
		}
	}
}
