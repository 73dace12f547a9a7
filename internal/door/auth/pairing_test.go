package auth

import (
	"errors"
	"testing"
	"time"
)

func TestAPairingCode(t *testing.T) {
	newAuthority := func(now *time.Time) *Authority {
		a := New(Credentials{Username: "tandem", Password: "pw"})
		a.now = func() time.Time { return *now }
		return a
	}

	t.Run("signs a device in once, and says it was used the second time", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		a := newAuthority(&now)
		code, expires := a.IssuePairing(0)
		if want := now.Add(DefaultPairTTL); !expires.Equal(want) {
			t.Fatalf("expires %v, want the default %v", expires, want)
		}
		token, err := a.RedeemPairing(code)
		if err != nil || !a.CheckSession(token) {
			t.Fatalf("first use: %q, %v; want a valid session", token, err)
		}
		if _, err := a.RedeemPairing(code); !errors.Is(err, ErrPairingUsed) {
			t.Fatalf("second use: %v, want ErrPairingUsed", err)
		}
	})

	t.Run("is refused as expired once its time is up", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		a := newAuthority(&now)
		code, _ := a.IssuePairing(2 * time.Minute)
		now = now.Add(2 * time.Minute)
		if _, err := a.RedeemPairing(code); !errors.Is(err, ErrPairingExpired) {
			t.Fatalf("at expiry: %v, want ErrPairingExpired", err)
		}
	})

	t.Run("lives at most an hour whatever is asked", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		a := newAuthority(&now)
		_, expires := a.IssuePairing(48 * time.Hour)
		if want := now.Add(MaxPairTTL); !expires.Equal(want) {
			t.Fatalf("expires %v, want %v", expires, want)
		}
	})

	t.Run("that was never issued is refused as not valid", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		a := newAuthority(&now)
		for _, code := range []string{"", "nope", "a-login-ticket"} {
			if _, err := a.RedeemPairing(code); !errors.Is(err, ErrPairingUnknown) {
				t.Errorf("RedeemPairing(%q) = %v, want ErrPairingUnknown", code, err)
			}
		}
	})

	t.Run("is forgotten a day after it expired", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		a := newAuthority(&now)
		code, _ := a.IssuePairing(time.Minute)
		now = now.Add(time.Minute + pairMemory + time.Second)
		a.IssuePairing(0) // issuing sweeps
		if _, err := a.RedeemPairing(code); !errors.Is(err, ErrPairingUnknown) {
			t.Fatalf("after a day: %v, want ErrPairingUnknown", err)
		}
	})

	t.Run("is not a login ticket, nor a ticket a pairing code", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		a := newAuthority(&now)
		code, _ := a.IssuePairing(0)
		if _, ok := a.RedeemTicket(code); ok {
			t.Error("a pairing code was accepted as a login ticket")
		}
		if _, err := a.RedeemPairing(a.IssueTicket()); !errors.Is(err, ErrPairingUnknown) {
			t.Errorf("a login ticket as a pairing code: %v", err)
		}
	})
}
