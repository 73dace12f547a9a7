//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// event is one frame of GET /event as the client read it, with the time it was read.
type event struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	at         time.Time
	read       int64 // the stream's bytes read up to and including this frame
}

// stream is one client of GET /event whose frames arrive, decoded, on a channel.
type stream struct {
	events chan event
	cancel context.CancelFunc
	done   chan struct{}
	debug  bool // BENCH_DEBUG=1: print every event waited through to stderr
	// read counts the bytes of every data line read (the frames' JSON, with "data: " and the
	// newline), for what a client downloads.
	read atomic.Int64
}

func subscribe(ctx context.Context, t *target) (*stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base+"/event", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	t.authorize(req)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET /event: %d", resp.StatusCode)
	}
	s := &stream{events: make(chan event, 4096), cancel: cancel, done: make(chan struct{}), debug: os.Getenv("BENCH_DEBUG") != ""}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
			if !ok {
				continue
			}
			e := event{at: time.Now(), read: s.read.Add(int64(len(sc.Bytes()) + 1))}
			if json.Unmarshal(data, &e) != nil {
				continue
			}
			select {
			case s.events <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return s, nil
}

func (s *stream) close() {
	s.cancel()
	<-s.done
}

// waitFor returns the first event from now on that matches, or fails after the timeout.
func (s *stream) waitFor(ctx context.Context, what string, timeout time.Duration, match func(event) bool) (event, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case e := <-s.events:
			if s.debug {
				fmt.Fprintf(os.Stderr, "%s %s %.400s\n", e.at.Format("15:04:05.000000"), e.Type, e.Properties)
			}
			if match(e) {
				return e, nil
			}
		case <-timer.C:
			return event{}, fmt.Errorf("no %s within %v", what, timeout)
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
}

// drain drops every event already read.
func (s *stream) drain() {
	for {
		select {
		case <-s.events:
		default:
			return
		}
	}
}

type eventProps struct {
	SessionID string `json:"sessionID"`
	ID        string `json:"id"`
	Tool      struct {
		CallID string `json:"callID"`
	} `json:"tool"`
	Status struct {
		Type string `json:"type"`
	} `json:"status"`
	Part struct {
		SessionID string `json:"sessionID"`
		Type      string `json:"type"`
		CallID    string `json:"callID"`
		State     struct {
			Status   string                     `json:"status"`
			Metadata map[string]json.RawMessage `json:"metadata"`
		} `json:"state"`
	} `json:"part"`
}

func (e event) props() eventProps {
	var p eventProps
	_ = json.Unmarshal(e.Properties, &p)
	return p
}

func idleEvent(sid string) func(event) bool {
	return func(e event) bool {
		p := e.props()
		return p.SessionID == sid && (e.Type == "session.idle" || e.Type == "session.status" && p.Status.Type == "idle")
	}
}

// permissionRoundTrip measures, n times, what a client that approves commands sees: from reading
// permission.asked (the scripted model asked for `echo`), through POST /permission/{id}/reply, to
// reading the first update of that tool call that shows its process started: both servers send
// the running state with an (empty) metadata.output right after they start the command, and an
// earlier running update without it before they ask.
func permissionRoundTrip(ctx context.Context, t *target, n int) ([]time.Duration, error) {
	sid, err := t.newSession(ctx)
	if err != nil {
		return nil, err
	}
	s, err := subscribe(ctx, t)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if _, err := s.waitFor(ctx, "server.connected", 10*time.Second, func(e event) bool { return e.Type == "server.connected" }); err != nil {
		return nil, err
	}
	var times []time.Duration
	for i := range n {
		s.drain()
		if _, err := t.call(ctx, http.MethodPost, "/session/"+sid+"/prompt_async", promptBody(fmt.Sprintf("run: echo round-trip-%d", i)), http.StatusNoContent); err != nil {
			return nil, err
		}
		asked, err := s.waitFor(ctx, "permission.asked", 30*time.Second, func(e event) bool {
			return e.Type == "permission.asked" && e.props().SessionID == sid
		})
		if err != nil {
			return nil, err
		}
		p := asked.props()
		if s.debug {
			fmt.Fprintf(os.Stderr, "%s REPLY\n", time.Now().Format("15:04:05.000000"))
		}
		if _, err := t.call(ctx, http.MethodPost, "/permission/"+p.ID+"/reply", `{"reply":"once"}`, http.StatusOK); err != nil {
			return nil, err
		}
		started, err := s.waitFor(ctx, "the approved tool starting", 30*time.Second, func(e event) bool {
			if e.Type != "message.part.updated" {
				return false
			}
			part := e.props().Part
			_, output := part.State.Metadata["output"]
			return part.Type == "tool" && part.CallID == p.Tool.CallID && (part.State.Status == "running" && output || part.State.Status == "completed")
		})
		if err != nil {
			return nil, err
		}
		times = append(times, started.at.Sub(asked.at))
		if _, err := s.waitFor(ctx, "the session going idle", 30*time.Second, idleEvent(sid)); err != nil {
			return nil, err
		}
	}
	return times, nil
}

// fanOut connects n raw-socket clients to GET /event and, rounds times, sends POST /session and
// times how long until every client has read the session.created frame it publishes. It returns
// those times and the growth of the server's process-tree PSS from the connected clients.
func fanOut(ctx context.Context, t *target, n, rounds int) ([]time.Duration, int64, error) {
	host := strings.TrimPrefix(t.base, "http://")
	request := "GET /event HTTP/1.1\r\nHost: " + host + "\r\n"
	if t.auth != "" {
		request += "Authorization: " + t.auth + "\r\n"
	}
	request += "\r\n"
	before, err := t.pss()
	if err != nil {
		return nil, 0, err
	}
	got := make(chan struct{}, n*rounds)
	connected := make(chan struct{}, n)
	var conns []net.Conn
	var wg sync.WaitGroup
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for range n {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			return nil, 0, err
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(request)); err != nil {
			return nil, 0, err
		}
		wg.Go(func() {
			r := bufio.NewReaderSize(c, 4096)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
				switch {
				case bytes.Contains(line, []byte(`"type":"server.connected"`)):
					connected <- struct{}{}
				case bytes.Contains(line, []byte(`"type":"session.created"`)):
					got <- struct{}{}
				}
			}
		})
	}
	for i := range n {
		select {
		case <-connected:
		case <-time.After(60 * time.Second):
			return nil, 0, fmt.Errorf("only %d of %d SSE clients connected", i, n)
		}
	}
	time.Sleep(500 * time.Millisecond)
	after, err := t.pss()
	if err != nil {
		return nil, 0, err
	}
	var times []time.Duration
	for range rounds {
		start := time.Now()
		if _, err := t.call(ctx, http.MethodPost, "/session", `{"title":"fan-out"}`, http.StatusOK); err != nil {
			return nil, 0, err
		}
		for i := range n {
			select {
			case <-got:
			case <-time.After(60 * time.Second):
				return nil, 0, fmt.Errorf("only %d of %d SSE clients read session.created", i, n)
			}
		}
		times = append(times, time.Since(start))
		time.Sleep(50 * time.Millisecond)
	}
	return times, after - before, nil
}

// toolOutputBytes sends one prompt that runs `seq 1 n` (approving it when the server asks) and
// returns how many bytes of /event frames a client read from the prompt until the session went
// idle: what streaming a long tool output costs every connected client.
func toolOutputBytes(ctx context.Context, t *target, n int) (int64, error) {
	sid, err := t.newSession(ctx)
	if err != nil {
		return 0, err
	}
	s, err := subscribe(ctx, t)
	if err != nil {
		return 0, err
	}
	defer s.close()
	if _, err := s.waitFor(ctx, "server.connected", 10*time.Second, func(e event) bool { return e.Type == "server.connected" }); err != nil {
		return 0, err
	}
	s.drain()
	before := s.read.Load()
	if _, err := t.call(ctx, http.MethodPost, "/session/"+sid+"/prompt_async", promptBody(fmt.Sprintf("run: seq 1 %d", n)), http.StatusNoContent); err != nil {
		return 0, err
	}
	for {
		e, err := s.waitFor(ctx, "the session going idle", 2*time.Minute, func(e event) bool {
			return e.Type == "permission.asked" && e.props().SessionID == sid || idleEvent(sid)(e)
		})
		if err != nil {
			return 0, err
		}
		if e.Type != "permission.asked" {
			return e.read - before, nil
		}
		if _, err := t.call(ctx, http.MethodPost, "/permission/"+e.props().ID+"/reply", `{"reply":"once"}`, http.StatusOK); err != nil {
			return 0, err
		}
	}
}
