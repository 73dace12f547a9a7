package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/infra/lease"
)

// ownerWait bounds how long a door waits for the owner of its data directory to say where it
// listens (an owner that has just taken the lease is still opening its store).
const ownerWait = 15 * time.Second

// startOrUse starts a tandem on o's data directory, or, when another process owns that directory,
// returns a client of the owner instead: the doors an editor or a script starts (mcp, acp, run) then
// share the user's server, its sessions, pending list and grants, instead of taking over its
// database. Exactly one of m and c is set. The doors say which they use on w.
func startOrUse(ctx context.Context, o Options, door string, w io.Writer) (m *Main, c *client.Client, err error) {
	deadline := time.Now().Add(ownerWait)
	for {
		m, err := Start(ctx, o)
		var held *lease.HeldError
		if !errors.As(err, &held) {
			return m, nil, err
		}
		if owner := held.Owner; owner.URL != "" {
			fmt.Fprintf(w, "%s: using the tandem server at %s (PID %d), which owns the data directory %s\n", door, owner.URL, owner.PID, held.Store)
			return nil, client.New(owner.URL, owner.Username, owner.Password), nil
		}
		if time.Now().After(deadline) {
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
