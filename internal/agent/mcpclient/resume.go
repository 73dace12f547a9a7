package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/pending"
)

// A graceful stop keeps an elicitation waiting, as it keeps approvals and questions: the MCP server
// that asked stops with tandem, so the resumed turn calls the tool again on the new server process,
// and the elicitation that call asks takes the stored one's place — same ID, listed from the start,
// answered with what the person answered meanwhile.

func (m *Manager) markStarted() {
	m.startOnce.Do(func() { close(m.started) })
}

// WaitStarted waits until Start has connected (or failed) every configured server, or ctx ends:
// a resumed tool call needs its server's tools.
func (m *Manager) WaitStarted(ctx context.Context) error {
	select {
	case <-m.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func callKeyOf(t ToolRef) string { return t.MessageID + "/" + t.CallID }

// markStopped records that a shutdown let the elicitation of a tool call go, still stored.
func (m *Manager) markStopped(t ToolRef) {
	m.mu.Lock()
	m.stopped[callKeyOf(t)] = true
	m.mu.Unlock()
}

// StoppedWaiting reports whether the tool call (messageID, callID) was waiting for an elicitation
// that a shutdown let go: its part stays running, for the next start to resume.
func (m *Manager) StoppedWaiting(messageID, callID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped[messageID+"/"+callID]
}

// endCallElicitations drops what a finished tool call left waiting (the server can no longer use
// the answer), or, when the turn stopped for a shutdown, lets it go still stored.
func (m *Manager) endCallElicitations(turn context.Context, server, callID string) {
	stopping := turn != nil && pending.ServerStopping(turn)
	for _, it := range m.elicit.Local("") {
		e := it.Request
		if e.Server != server || e.Tool == nil || e.Tool.CallID != callID {
			continue
		}
		if stopping {
			m.markStopped(*e.Tool)
			m.elicit.Release(e.ID)
			continue
		}
		m.elicit.Cancel(e.ID, "the tool call ended")
	}
}

// claim takes the reserved elicitation of a resumed tool call, once.
func (m *Manager) claim(t ToolRef) (Elicitation, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.resumed[callKeyOf(t)]
	delete(m.resumed, callKeyOf(t))
	return e, ok
}

// StoredElicitations returns the elicitations left waiting by the previous run that belong to a
// tool call, by call ("messageID/callID") → elicitation ID, of the sessions only selects.
func (m *Manager) StoredElicitations(ctx context.Context, only store.SessionFilter) (map[string]string, error) {
	out := map[string]string{}
	stored, err := m.stored(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range stored {
		if e.Tool != nil && only.Has(e.SessionID) {
			out[callKeyOf(*e.Tool)] = e.ID
		}
	}
	return out, nil
}

func (m *Manager) stored(ctx context.Context) ([]storedElicitation, error) {
	if m.journal.DB == nil {
		return nil, nil
	}
	rows, err := m.journal.DB.ListPending(ctx, m.journal.Kind)
	if err != nil {
		return nil, err
	}
	out := make([]storedElicitation, 0, len(rows))
	for _, r := range rows {
		e, err := decodeStored(r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func decodeStored(r store.PendingRequest) (storedElicitation, error) {
	var e storedElicitation
	if err := json.Unmarshal(r.Data, &e); err != nil {
		return storedElicitation{}, fmt.Errorf("mcp: stored elicitation %s: %w", r.ID, err)
	}
	e.directory = e.Dir
	return e, nil
}

// ReserveElicitation lists a stored elicitation again from the start, for the resumed tool call
// that will ask it; EndInterrupted leaves it.
func (m *Manager) ReserveElicitation(ctx context.Context, elicitationID string) error {
	stored, err := m.stored(ctx)
	if err != nil {
		return err
	}
	for _, e := range stored {
		if e.ID == elicitationID && e.Tool != nil {
			m.mu.Lock()
			m.resumed[callKeyOf(*e.Tool)] = e.Elicitation
			m.mu.Unlock()
			m.elicit.Reserve(e.ID, e.SessionID, e.Elicitation, time.UnixMilli(e.Time.Created))
			return nil
		}
	}
	return fmt.Errorf("mcp: no stored elicitation %s", elicitationID)
}

// UnreserveElicitation cancels a reserved elicitation whose resumed call did not ask it again.
func (m *Manager) UnreserveElicitation(ctx context.Context, elicitationID string) {
	m.mu.Lock()
	for k, e := range m.resumed {
		if e.ID == elicitationID {
			delete(m.resumed, k)
		}
	}
	m.mu.Unlock()
	if m.elicit.Unreserve(elicitationID, "the resumed tool call did not ask it again") {
		m.journal.Delete(ctx, elicitationID)
	}
}
