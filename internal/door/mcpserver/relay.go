package mcpserver

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relay passes MCP messages both ways between a local transport (stdio) and a remote one (the
// server's Streamable HTTP endpoint) until either side ends. It relays at the JSON-RPC level, so
// everything the server does — elicitations, progress, cancellation, newer protocol versions — reaches
// the client unchanged. Calls are forwarded each on its own: a long tools/call must not hold back the
// client's answer to an elicitation that call is waiting for.
func Relay(ctx context.Context, local, remote mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lc, err := local.Connect(ctx)
	if err != nil {
		return err
	}
	defer lc.Close()
	rc, err := remote.Connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()

	var calls sync.WaitGroup
	defer calls.Wait()
	errc := make(chan error, 2)
	go func() {
		for {
			msg, err := lc.Read(ctx)
			if err != nil {
				errc <- err
				return
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				calls.Add(1)
				go func() {
					defer calls.Done()
					if err := rc.Write(ctx, req); err != nil && ctx.Err() == nil {
						// The client must not wait forever for a call that never reached the server.
						_ = lc.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tandem mcp --attach: " + err.Error()}})
					}
				}()
				continue
			}
			if err := rc.Write(ctx, msg); err != nil {
				errc <- err
				return
			}
		}
	}()
	go func() {
		for {
			msg, err := rc.Read(ctx)
			if err == nil {
				err = lc.Write(ctx, msg)
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	err = <-errc
	cancel()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // the client went away: a normal end
	}
	return err
}
