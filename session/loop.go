package session

import "context"

// loop runs agent turns; filled in by the agent work.
type loop struct{}

func (s *Service) abortAndWait(sessionID, reason string) {}

// Shutdown aborts running turns so the server can stop; it returns when they have recorded it or ctx ends.
func (s *Service) Shutdown(ctx context.Context) {}
