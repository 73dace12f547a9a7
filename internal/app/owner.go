package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/infra/lease"
)

// ownerWait bounds how long a door waits for the owner of its data directory to say where it
// listens (an owner that has just taken the lease is still opening its store).
const ownerWait = 15 * time.Second

// StartOrUse starts a tandem on o's data directory, or, when another process owns that directory,
// returns a client of the owner instead: the doors an editor or a script starts (mcp, acp, run) then
// share the user's server, its sessions, pending list and grants, instead of taking over its
// database. Exactly one of m and c is set. The doors say which they use on w.
func StartOrUse(ctx context.Context, o Options, door string, w io.Writer) (m *Main, c *client.Client, err error) {
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

// StartPrivate is the server of one `tandem run`: the one that owns the data directory, else one
// started in-process for this run alone on an ephemeral loopback port, which stop ends. reachable
// says whether another client could answer what the run leaves pending: false for an in-process
// server whose password was generated. dir is --dir, for the in-process server only.
func StartPrivate(ctx context.Context, paths Paths, dir string, w io.Writer) (c *client.Client, reachable bool, stop func(), err error) {
	logger, closeLog, err := OpenLogger(paths, false, io.Discard, slog.LevelInfo)
	if err != nil {
		return nil, false, nil, err
	}
	m, owner, err := StartOrUse(ctx, Options{Hostname: "127.0.0.1", Directory: dir, Paths: paths,
		Logger: logger, Env: os.Getenv, Private: true}, "tandem run", w)
	if err != nil {
		closeLog()
		return nil, false, nil, err
	}
	if owner != nil {
		closeLog()
		if dir != "" {
			return nil, false, nil, fmt.Errorf("--dir: the tandem server at %s owns the data directory and serves its own directory; stop it, or pass --attach to use it", owner.URL())
		}
		return owner, true, func() {}, nil
	}
	return m.Client(), !m.generated, func() { m.Close(); closeLog() }, nil
}

// Door is the server a stdio door (`tandem acp`) drives: the one attach names (when attachSet;
// it must answer), else the one that owns o's data directory, else one started in-process for
// the door, m, which the caller closes. It says which on w.
func Door(ctx context.Context, o Options, attach string, attachSet bool, door string, w io.Writer) (c *client.Client, m *Main, err error) {
	if attachSet {
		if c, err = client.Locate(attach, os.Getenv, o.Paths.State); err != nil {
			return nil, nil, fmt.Errorf("--attach: %w", err)
		}
		if err := c.Health(ctx); err != nil {
			return nil, nil, fmt.Errorf("--attach: %s: %w", c.URL(), err)
		}
		return c, nil, nil
	}
	m, owner, err := StartOrUse(ctx, o, door, w)
	switch {
	case err != nil:
		return nil, nil, err
	case owner != nil:
		return owner, nil, nil
	}
	fmt.Fprintf(w, "%s: HTTP server on %s\n", door, m.URL())
	return m.Client(), m, nil
}
