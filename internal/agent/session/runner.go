package session

import (
	"context"

	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// Runner is this node's claim to run sessions when several nodes share one database: a session's
// turns run on one node at a time, under a lease whose epoch fences the writes of a node that lost
// it (it was paused, and another node took the session over).
type Runner interface {
	// Run makes this node the session's runner for a turn and returns ctx carrying the lease that
	// fences the turn's writes. It fails when another live node runs the session.
	Run(ctx context.Context, sessionID string) (context.Context, error)
	// Holds returns nil while the lease ctx carries is still the session's, and an error once
	// another node has taken the session over.
	Holds(ctx context.Context) error
}

// fencedGate checks, after every approval, that this node still runs the session: what was
// approved runs once, on the node that owns the turn, never again on a node that lost it while it
// waited.
type fencedGate struct {
	tool.Gate
	runner Runner
}

func (g fencedGate) Check(ctx context.Context, ask tool.Ask) error {
	if err := g.Gate.Check(ctx, ask); err != nil {
		return err
	}
	return g.runner.Holds(ctx)
}
