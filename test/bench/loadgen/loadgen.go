// Package loadgen is a wrk-like HTTP/1.1 load generator with nothing to install: keep-alive
// connections that each send their next request as soon as they have read the previous response.
// The benchmark harness (go run ./bench) and the Go benchmarks in routes/ share it.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Get is a GET request for path on host, with an Authorization header when auth is not empty.
func Get(host, path, auth string) string {
	request := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
	if auth != "" {
		request += "Authorization: " + auth + "\r\n"
	}
	return request + "\r\n"
}

// Run opens conns connections to host and on each sends request, reads the response, which must
// be a 200, and sends it again: perConn times when perConn > 0, otherwise until the deadline. A
// connection still busy at the deadline is cut off 30 s later. It returns the number of responses
// read; the first failure of any connection fails the run.
func Run(ctx context.Context, host, request string, conns, perConn int, deadline time.Time) (int, error) {
	var wg sync.WaitGroup
	counts := make([]int, conns)
	errs := make([]error, conns)
	for i := range conns {
		wg.Go(func() {
			var dialer net.Dialer
			c, err := dialer.DialContext(ctx, "tcp", host)
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			if err := c.SetDeadline(deadline.Add(30 * time.Second)); err != nil {
				errs[i] = err
				return
			}
			r := bufio.NewReaderSize(c, 64<<10)
			for perConn <= 0 && time.Now().Before(deadline) || perConn > 0 && counts[i] < perConn {
				if _, err := io.WriteString(c, request); err != nil {
					errs[i] = err
					return
				}
				if err := ReadResponse(r); err != nil {
					errs[i] = err
					return
				}
				counts[i]++
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, errors.Join(errs...)
}

// ReadResponse reads one HTTP/1.1 response, sized by Content-Length or chunked, and checks that it
// is a 200.
func ReadResponse(r *bufio.Reader) error {
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
