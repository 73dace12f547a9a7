package auth

import (
	"errors"
	"time"
)

// Pairing signs another device in (a phone) with a one-time code: `tandem pair` or the UI's "Pair a
// device" asks for one, the device opens a link that carries it in the URL fragment (never sent to
// the server in a request line, so never in an access log or a proxy's), and its page posts the
// code to trade it for the session cookie. A code works once and for minutes.
const (
	// DefaultPairTTL is how long a pairing code stays valid unless the asker says otherwise.
	DefaultPairTTL = 5 * time.Minute
	// MaxPairTTL bounds what an asker may choose: a pairing link is a credential in a picture.
	MaxPairTTL = time.Hour
	// pairMemory is how long a spent or expired code is remembered, so that opening it again says
	// what happened to it rather than that it is unknown.
	pairMemory = 24 * time.Hour
)

// The reasons a code is refused.
var (
	ErrPairingUsed    = errors.New("this pairing link was already used")
	ErrPairingExpired = errors.New("this pairing link has expired")
	ErrPairingUnknown = errors.New("this pairing link is not valid")
)

type pairing struct {
	expires time.Time
	used    bool
}

// IssuePairing makes a one-time pairing code valid for ttl (DefaultPairTTL when 0, at most
// MaxPairTTL) and returns it with its expiry.
func (a *Authority) IssuePairing(ttl time.Duration) (code string, expires time.Time) {
	if ttl <= 0 {
		ttl = DefaultPairTTL
	}
	ttl = min(ttl, MaxPairTTL)
	code = random()
	expires = a.now().Add(ttl)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gcLocked()
	a.pairings[code] = &pairing{expires: expires}
	return code, expires
}

// RedeemPairing trades a valid, unused code for a new session token. A code is spent by its first
// use, whatever follows; a refusal says why (ErrPairingUsed, ErrPairingExpired, ErrPairingUnknown).
func (a *Authority) RedeemPairing(code string) (string, error) {
	a.mu.Lock()
	p, ok := a.pairings[code]
	switch {
	case !ok:
		a.mu.Unlock()
		return "", ErrPairingUnknown
	case p.used:
		a.mu.Unlock()
		return "", ErrPairingUsed
	case !a.now().Before(p.expires):
		a.mu.Unlock()
		return "", ErrPairingExpired
	}
	p.used = true
	a.mu.Unlock()
	return a.NewSession(), nil
}
