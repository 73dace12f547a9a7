package auth

import (
	"time"
)

// After this many failed logins from one address, that address waits before the next try; each
// further failure doubles the wait, up to maxLockout. A success clears the count.
const (
	freeFailures = 10
	maxLockout   = 5 * time.Minute
	// forgetAfter drops the record of an address that has been quiet this long.
	forgetAfter = 15 * time.Minute
	// maxTracked bounds memory: past it, quiet addresses are forgotten first.
	maxTracked = 10000
)

type failures struct {
	count int
	last  time.Time
	until time.Time
}

// LoginWait says how long the client at addr must wait before its credentials are checked again;
// zero when it may try now. Every password check (Basic, Bearer, auth_token, the login form) asks
// first, so guessing runs at a handful of tries per minute, not thousands per second.
func (a *Authority) LoginWait(addr string) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.failed[addr]
	if !ok {
		return 0
	}
	if wait := f.until.Sub(a.now()); wait > 0 {
		return wait
	}
	return 0
}

// Failing reports whether addr has failed to log in lately (a record LoginResult keeps), so that a
// caller can skip throttling work for the addresses that never guessed wrong.
func (a *Authority) Failing(addr string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.failed[addr]
	return ok
}

// LoginResult records the outcome of a password check from addr.
func (a *Authority) LoginResult(addr string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if ok {
		delete(a.failed, addr)
		return
	}
	if len(a.failed) >= maxTracked {
		for k, f := range a.failed {
			if now.Sub(f.last) > forgetAfter || len(a.failed) >= maxTracked {
				delete(a.failed, k)
			}
		}
	}
	f := a.failed[addr]
	if f == nil {
		f = &failures{}
		a.failed[addr] = f
	}
	if now.Sub(f.last) > forgetAfter {
		f.count = 0
	}
	f.count++
	f.last = now
	if f.count >= freeFailures {
		wait := time.Second << min(f.count-freeFailures, 9)
		f.until = now.Add(min(wait, maxLockout))
	}
}
