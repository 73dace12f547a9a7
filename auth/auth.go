// Package auth checks credentials: HTTP Basic, the password as a bearer token, OpenCode's
// ?auth_token=base64(user:pass), and the browser's session cookie, which is obtained either with the
// password or by trading a one-time login ticket (so `tandem web` never puts the password in a URL).
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"strings"
	"sync"
	"time"
)

// Credentials are what the server accepts.
type Credentials struct {
	Username string
	Password string
	// Disabled turns authentication off (only allowed on loopback binds; the server enforces that).
	Disabled bool
}

// Authority verifies credentials and manages browser sessions and one-time login tickets.
type Authority struct {
	creds Credentials
	now   func() time.Time

	mu       sync.Mutex
	tickets  map[string]time.Time // one-time login tickets -> expiry
	sessions map[string]time.Time // cookie tokens -> expiry
	failed   map[string]*failures // client address -> failed logins (LoginWait)
}

// TicketTTL is how long a one-time login link stays valid.
const TicketTTL = 2 * time.Minute

// SessionTTL is how long a browser session lasts.
const SessionTTL = 7 * 24 * time.Hour

// New returns an Authority for creds.
func New(creds Credentials) *Authority {
	return &Authority{creds: creds, now: time.Now, tickets: map[string]time.Time{}, sessions: map[string]time.Time{},
		failed: map[string]*failures{}}
}

// Disabled reports whether authentication is off.
func (a *Authority) Disabled() bool { return a.creds.Disabled }

// Username is the accepted user name.
func (a *Authority) Username() string { return a.creds.Username }

// Check verifies a user name and password in constant time.
func (a *Authority) Check(user, pass string) bool {
	if a.creds.Disabled {
		return true
	}
	u := subtle.ConstantTimeCompare([]byte(user), []byte(a.creds.Username))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(a.creds.Password))
	return u&p == 1
}

// CheckBearer verifies the password sent as a bearer token.
func (a *Authority) CheckBearer(token string) bool {
	if a.creds.Disabled {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(token), []byte(a.creds.Password)) == 1
}

// CheckToken verifies OpenCode's auth_token query value, base64(user:pass).
func (a *Authority) CheckToken(token string) bool {
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		raw, err = base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return false
		}
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	return ok && a.Check(user, pass)
}

// IssueTicket makes a one-time login ticket for the browser.
func (a *Authority) IssueTicket() string {
	t := random()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gcLocked()
	a.tickets[t] = a.now().Add(TicketTTL)
	return t
}

// RedeemTicket trades a valid, unused ticket for a session token.
func (a *Authority) RedeemTicket(ticket string) (string, bool) {
	a.mu.Lock()
	exp, ok := a.tickets[ticket]
	delete(a.tickets, ticket)
	a.mu.Unlock()
	if !ok || a.now().After(exp) {
		return "", false
	}
	return a.NewSession(), true
}

// NewSession starts a browser session and returns its cookie token.
func (a *Authority) NewSession() string {
	t := random()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gcLocked()
	a.sessions[t] = a.now().Add(SessionTTL)
	return t
}

// CheckSession verifies a session cookie token.
func (a *Authority) CheckSession(token string) bool {
	if token == "" {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.sessions[token]
	return ok && a.now().Before(exp)
}

// EndSession logs a browser session out.
func (a *Authority) EndSession(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, token)
}

func (a *Authority) gcLocked() {
	now := a.now()
	for k, exp := range a.tickets {
		if now.After(exp) {
			delete(a.tickets, k)
		}
	}
	for k, exp := range a.sessions {
		if now.After(exp) {
			delete(a.sessions, k)
		}
	}
}

// GeneratePassword makes a password for a server started without one.
func GeneratePassword() string { return random() }

func random() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
