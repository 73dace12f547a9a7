// Package auth checks credentials: HTTP Basic, the password as a bearer token, OpenCode's
// ?auth_token=base64(user:pass), and the browser's session cookie, which is obtained either with the
// password or by trading a one-time login ticket (so `tandem web` never puts the password in a URL).
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
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
	// basic is the Authorization header clients send for creds ("Basic " and base64 of
	// user:password), so that the usual form is checked without decoding it; empty when no
	// client can send it (a user name with a colon is refused, as Check refuses it).
	basic string

	// sessionKey signs browser session tokens (see NewSession); keys holds it on disk when the
	// sessions are to survive a restart.
	sessionKey []byte
	keys       *keyFile

	mu      sync.Mutex
	tickets map[string]time.Time // one-time login tickets -> expiry
	// pairings are the codes of pairing links (pairing.go), remembered for a day after they are
	// issued so that a spent or expired one is refused with its reason.
	pairings map[string]*pairing
	revoked  map[string]time.Time // nonces of sessions logged out before they expired -> expiry
	failed   map[string]*failures // client address -> failed logins (LoginWait)

	onEnded func(nonce string, exp time.Time) // see OnEnded
}

// TicketTTL is how long a one-time login link stays valid.
const TicketTTL = 2 * time.Minute

// SessionTTL is how long a browser session lasts.
const SessionTTL = 7 * 24 * time.Hour

// New returns an Authority for creds whose browser sessions last as long as the process: their
// signing key is random and kept in memory only.
func New(creds Credentials) *Authority {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return newAuthority(creds, sessionKey(secret, creds, false), nil, map[string]time.Time{})
}

func newAuthority(creds Credentials, key []byte, keys *keyFile, revoked map[string]time.Time) *Authority {
	a := &Authority{creds: creds, now: time.Now, sessionKey: key, keys: keys, tickets: map[string]time.Time{},
		pairings: map[string]*pairing{}, revoked: revoked, failed: map[string]*failures{}}
	if !strings.Contains(creds.Username, ":") {
		a.basic = "Basic " + base64.StdEncoding.EncodeToString([]byte(creds.Username+":"+creds.Password))
	}
	return a
}

// sessionKey derives the key that signs session tokens from the stored secret and, when bound, the
// credentials: changing the user name or a password the user chose then ends every browser session.
// A password generated at start is new at every start, so binding it would end them all at a restart.
func sessionKey(secret []byte, creds Credentials, bindPassword bool) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("tandem browser session\x00"))
	mac.Write([]byte(creds.Username))
	if bindPassword {
		mac.Write([]byte{0})
		mac.Write([]byte(creds.Password))
	}
	return mac.Sum(nil)
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

// CheckBasicHeader reports whether an Authorization header is exactly the one clients send for
// the accepted user name and password (curl, browsers and the SDKs all send that form), compared
// in constant time without decoding it, which is what every request of a Basic client costs. A
// false answer decides nothing: another spelling of the same credentials, or wrong ones, are then
// decoded and checked with Check, and counted by the login throttle as before.
func (a *Authority) CheckBasicHeader(header string) bool {
	if a.creds.Disabled || a.basic == "" || len(header) != len(a.basic) {
		return false
	}
	var diff byte
	for i := range len(header) {
		diff |= header[i] ^ a.basic[i]
	}
	return subtle.ConstantTimeByteEq(diff, 0) == 1
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

// A session token is signed rather than stored, so that it survives a restart of the server:
// base64url(expiry as 8 bytes of Unix seconds | 16 random bytes) "." base64url(HMAC-SHA256 of that).
const (
	payloadLen = 8 + 16
	sigLen     = sha256.Size
)

// NewSession starts a browser session and returns its cookie token.
func (a *Authority) NewSession() string {
	var payload [payloadLen]byte
	binary.BigEndian.PutUint64(payload[:8], uint64(a.now().Add(SessionTTL).Unix()))
	_, _ = rand.Read(payload[8:])
	return base64.RawURLEncoding.EncodeToString(payload[:]) + "." + base64.RawURLEncoding.EncodeToString(a.sign(payload[:]))
}

func (a *Authority) sign(payload []byte) []byte {
	mac := hmac.New(sha256.New, a.sessionKey)
	mac.Write(payload)
	return mac.Sum(nil)
}

// session returns a token's payload (what a logout revokes) and expiry when its signature is good.
func (a *Authority) session(token string) (nonce string, exp time.Time, ok bool) {
	p, s, found := strings.Cut(token, ".")
	if !found || len(p) != base64.RawURLEncoding.EncodedLen(payloadLen) || len(s) != base64.RawURLEncoding.EncodedLen(sigLen) {
		return "", time.Time{}, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	sig, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, a.sign(payload)) {
		return "", time.Time{}, false
	}
	return p, time.Unix(int64(binary.BigEndian.Uint64(payload[:8])), 0), true
}

// CheckSession verifies a session cookie token: signed with this server's key, not expired, not
// logged out.
func (a *Authority) CheckSession(token string) bool {
	nonce, exp, ok := a.session(token)
	if !ok || !a.now().Before(exp) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, out := a.revoked[nonce]
	return !out
}

// EndSession logs a browser session out: its token is refused from now on, after a restart too when
// the sessions survive restarts (Open).
func (a *Authority) EndSession(token string) error {
	nonce, exp, ok := a.session(token)
	if !ok || !a.now().Before(exp) {
		return nil
	}
	if err := a.Ended(nonce, exp); err != nil {
		return err
	}
	if ended := a.onEnded; ended != nil {
		ended(nonce, exp)
	}
	return nil
}

// OnEnded sets what is told of every logout here (several nodes: the others, which call Ended).
// Set it before the server serves.
func (a *Authority) OnEnded(f func(nonce string, exp time.Time)) { a.onEnded = f }

// Ended refuses from now on the browser session nonce names (logged out at this or another node)
// until exp, when it would have expired anyway.
func (a *Authority) Ended(nonce string, exp time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gcLocked()
	if _, ok := a.revoked[nonce]; ok {
		return nil
	}
	a.revoked[nonce] = exp
	if a.keys == nil {
		return nil
	}
	return a.keys.save(a.revoked)
}

func (a *Authority) gcLocked() {
	now := a.now()
	for k, exp := range a.tickets {
		if now.After(exp) {
			delete(a.tickets, k)
		}
	}
	for k, p := range a.pairings {
		if now.After(p.expires.Add(pairMemory)) {
			delete(a.pairings, k)
		}
	}
	for k, exp := range a.revoked {
		if now.After(exp) {
			delete(a.revoked, k)
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
