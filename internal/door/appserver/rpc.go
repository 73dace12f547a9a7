// Package appserver is Codex's app-server protocol (`tandem app-server`): the Codex TUI
// (`codex --remote ws://…`), its IDE extension and the other clients written for `codex app-server`
// drive tandem's sessions. Like the ACP door it speaks to a tandem server through its HTTP API
// (package client), so a thread is a tandem session, and an approval the Codex client shows is the
// pending request GET /permission lists: the first answer anywhere wins, and the Codex client is
// told with serverRequest/resolved.
//
// The wire is JSON-RPC 2.0 without the "jsonrpc" member, as Codex writes it: one JSON object per
// line on stdio, or per text frame on a WebSocket.
package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Conn carries whole JSON-RPC messages: a line on stdio, a text frame on a WebSocket.
type Conn interface {
	// Read returns the next message, or an error when the peer is gone.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one message; calls are serialised by the caller.
	Write(ctx context.Context, msg []byte) error
}

// JSON-RPC error codes. Codex answers most refusals with -32600 (invalid request); tandem does the
// same for the protocol's own refusals and keeps -32601 for a method it does not serve.
const (
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
)

// rpcError is a JSON-RPC error object; handlers return it to choose the code.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

func invalidRequest(format string, args ...any) error {
	return &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

func invalidParams(format string, args ...any) error {
	return &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// message is any incoming message: a request (method and id), a notification (method), or a
// response to one of tandem's requests (id and result or error).
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// peer is one connection's writer and the table of tandem's outstanding requests to the client.
type peer struct {
	conn Conn
	// ctx is the connection's: every write uses it, never a caller's, since a WebSocket closes
	// when a write's context ends (a thread's reader stopping must not take the connection along).
	ctx context.Context

	wmu sync.Mutex // one message at a time on the wire

	mu      sync.Mutex
	nextID  int64
	waiting map[string]chan message // request id -> where its response goes
	// optOut holds the notification methods the client asked not to receive.
	optOut map[string]bool
	// sent, when set, sees every message tandem writes (tests check them against Codex's schema).
	sent func([]byte)
}

func newPeer(ctx context.Context, c Conn, sent func([]byte)) *peer {
	return &peer{conn: c, ctx: ctx, waiting: map[string]chan message{}, optOut: map[string]bool{}, sent: sent}
}

func (p *peer) write(_ context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.sent != nil {
		p.sent(b)
	}
	return p.conn.Write(p.ctx, b)
}

// respond answers a request with a result or an error.
func (p *peer) respond(ctx context.Context, id json.RawMessage, result any, err error) error {
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			re = &rpcError{Code: codeInternal, Message: err.Error()}
		}
		return p.write(ctx, struct {
			ID    json.RawMessage `json:"id"`
			Error *rpcError       `json:"error"`
		}{id, re})
	}
	return p.write(ctx, struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result"`
	}{id, result})
}

// notify sends a notification, stamped with emittedAtMs as Codex's are; one the client opted out
// of is not sent.
func (p *peer) notify(ctx context.Context, method string, params any) {
	p.mu.Lock()
	skip := p.optOut[method]
	p.mu.Unlock()
	if skip {
		return
	}
	_ = p.write(ctx, struct {
		Method      string `json:"method"`
		Params      any    `json:"params"`
		EmittedAtMs int64  `json:"emittedAtMs"`
	}{method, params, time.Now().UnixMilli()})
}

// request is one of tandem's requests to the client, in flight.
type request struct {
	id   int64
	resp chan message
}

// ask sends a request to the client; the answer arrives on the returned request's channel.
func (p *peer) ask(ctx context.Context, method string, params any) (*request, error) {
	p.mu.Lock()
	id := p.nextID
	p.nextID++
	r := &request{id: id, resp: make(chan message, 1)}
	p.waiting[strconv.FormatInt(id, 10)] = r.resp
	p.mu.Unlock()
	err := p.write(ctx, struct {
		Method string `json:"method"`
		ID     int64  `json:"id"`
		Params any    `json:"params"`
	}{method, id, params})
	if err != nil {
		p.forget(id)
		return nil, err
	}
	return r, nil
}

// forget drops an outstanding request: a late answer to it is ignored.
func (p *peer) forget(id int64) {
	p.mu.Lock()
	delete(p.waiting, strconv.FormatInt(id, 10))
	p.mu.Unlock()
}

// answered routes a client's response to the request waiting for it; it reports whether one was.
func (p *peer) answered(m message) bool {
	key := string(m.ID)
	var n int64
	if err := json.Unmarshal(m.ID, &n); err == nil {
		key = strconv.FormatInt(n, 10)
	}
	p.mu.Lock()
	ch, ok := p.waiting[key]
	delete(p.waiting, key)
	p.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}
