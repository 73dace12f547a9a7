//go:build unix

package main

import (
	"net"
	"net/http"
	"sync/atomic"
)

// deadRegistry is the npm registry OpenCode is given: a loopback server that answers every request
// 404 at once, so a package install fails fast instead of downloading inside a timed window or
// waiting on a closed network, and counts the requests, for the log.
type deadRegistry struct {
	srv      *http.Server
	ln       net.Listener
	requests atomic.Int64
}

func startDeadRegistry(ln net.Listener) *deadRegistry {
	r := &deadRegistry{ln: ln}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"Not found: the benchmark blocks the registry"}`))
	})}
	go func() { _ = r.srv.Serve(ln) }()
	return r
}

func (r *deadRegistry) url() string { return "http://" + r.ln.Addr().String() + "/" }

func (r *deadRegistry) close() { _ = r.srv.Close() }
