package terminal

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"time"
)

// Ticket lets a browser open a PTY WebSocket without credentials (a WebSocket cannot carry an
// Authorization header): it is random, bound to one PTY, single-use and short-lived.
type Ticket struct {
	Value     string `json:"ticket" required:"true"`
	ExpiresIn int    `json:"expires_in" required:"true" exclusiveMinimum:"0"` // seconds
}

type ticket struct {
	ptyID   string
	expires time.Time
}

// IssueTicket makes a ticket for an existing PTY.
func (m *Manager) IssueTicket(ptyID string) (Ticket, error) {
	if _, err := m.lookup(ptyID); err != nil {
		return Ticket{}, err
	}
	var b [24]byte
	_, _ = rand.Read(b[:])
	value := base64.RawURLEncoding.EncodeToString(b[:])
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, t := range m.tickets {
		if !now.Before(t.expires) {
			delete(m.tickets, k)
		}
	}
	m.tickets[value] = ticket{ptyID: ptyID, expires: now.Add(m.opts.TicketTTL)}
	return Ticket{Value: value, ExpiresIn: int(m.opts.TicketTTL / time.Second)}, nil
}

// RedeemTicket reports whether value is a live ticket for ptyID. Any presented ticket is spent, even
// one shown for the wrong PTY, so a leaked ticket cannot be probed and reused.
func (m *Manager) RedeemTicket(ptyID, value string) bool {
	if value == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tickets[value]
	if !ok {
		return false
	}
	delete(m.tickets, value)
	return m.opts.Now().Before(t.expires) && subtle.ConstantTimeCompare([]byte(t.ptyID), []byte(ptyID)) == 1
}
