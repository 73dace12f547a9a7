package auth

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestCredentialChecks(t *testing.T) {
	a := New(Credentials{Username: "tandem", Password: "pa:ss word"})
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name string
		ok   bool
		want bool
	}{
		{"the right user and password pass", a.Check("tandem", "pa:ss word"), true},
		{"a wrong password fails", a.Check("tandem", "pa:ss"), false},
		{"a wrong user fails", a.Check("admin", "pa:ss word"), false},
		{"an empty password fails", a.Check("tandem", ""), false},
		{"the password as a bearer token passes", a.CheckBearer("pa:ss word"), true},
		{"a wrong bearer token fails", a.CheckBearer("tandem:pa:ss word"), false},
		{"auth_token in standard base64 passes", a.CheckToken(b64("tandem:pa:ss word")), true},
		{"auth_token in URL-safe base64 passes", a.CheckToken(base64.RawURLEncoding.EncodeToString([]byte("tandem:pa:ss word"))), true},
		{"auth_token without a colon fails", a.CheckToken(b64("tandem")), false},
		{"auth_token with a wrong password fails", a.CheckToken(b64("tandem:nope")), false},
		{"auth_token that is not base64 fails", a.CheckToken("!!!"), false},
		{"the Basic header clients send passes as it is", a.CheckBasicHeader("Basic " + b64("tandem:pa:ss word")), true},
		{"a Basic header with a wrong password does not", a.CheckBasicHeader("Basic " + b64("tandem:pa:ss wore")), false},
		{"a Basic header with a wrong user does not", a.CheckBasicHeader("Basic " + b64("tandeM:pa:ss word")), false},
		{"a Basic header one byte short does not", a.CheckBasicHeader("Basic " + b64("tandem:pa:ss wor")), false},
		{"another spelling of the scheme is left to Check", a.CheckBasicHeader("basic " + b64("tandem:pa:ss word")), false},
		{"the password as a bearer token is not a Basic header", a.CheckBasicHeader("Bearer pa:ss word"), false},
		{"no header is no Basic header", a.CheckBasicHeader(""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ok != tt.want {
				t.Errorf("got %v, want %v", tt.ok, tt.want)
			}
		})
	}
}

func TestDisabledAcceptsAnything(t *testing.T) {
	a := New(Credentials{Disabled: true})
	if !a.Disabled() || !a.Check("x", "y") || !a.CheckBearer("z") {
		t.Fatal("a disabled authority refused a request")
	}
}

func TestAUserNameWithAColonHasNoBasicHeader(t *testing.T) {
	// Basic splits user:password at the first colon, so no client can send this user name; the
	// header shortcut must not accept what Check refuses.
	a := New(Credentials{Username: "a:b", Password: "c"})
	header := "Basic " + base64.StdEncoding.EncodeToString([]byte("a:b:c"))
	if a.CheckBasicHeader(header) || a.Check("a", "b:c") {
		t.Fatal("a user name with a colon was accepted")
	}
}

func TestTicketsAreSingleUseAndExpire(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := New(Credentials{Username: "tandem", Password: "p"})
	a.now = func() time.Time { return now }

	ticket := a.IssueTicket()
	token, ok := a.RedeemTicket(ticket)
	if !ok || !a.CheckSession(token) {
		t.Fatal("a fresh ticket was not traded for a working session")
	}
	if _, ok := a.RedeemTicket(ticket); ok {
		t.Fatal("a ticket was redeemed twice")
	}

	late := a.IssueTicket()
	now = now.Add(TicketTTL + time.Second)
	if _, ok := a.RedeemTicket(late); ok {
		t.Fatal("an expired ticket was redeemed")
	}
	if _, ok := a.RedeemTicket(""); ok {
		t.Fatal("an empty ticket was redeemed")
	}
}

func TestBrowserSessionsExpireAndEnd(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := New(Credentials{Username: "tandem", Password: "p"})
	a.now = func() time.Time { return now }

	kept, ended := a.NewSession(), a.NewSession()
	if err := a.EndSession(ended); err != nil {
		t.Fatal(err)
	}
	if a.CheckSession(ended) || !a.CheckSession(kept) || a.CheckSession("") || a.CheckSession("forged") {
		t.Fatal("session checks are wrong")
	}
	now = now.Add(SessionTTL + time.Second)
	if a.CheckSession(kept) {
		t.Fatal("an expired session still authenticates")
	}
	if err := a.EndSession(a.NewSession()); err != nil { // collects the expired logouts
		t.Fatal(err)
	}
	a.mu.Lock()
	n := len(a.revoked)
	a.mu.Unlock()
	if n != 1 {
		t.Errorf("%d logouts kept, want only the new one", n)
	}
}

func TestGeneratedPasswordsAreLongAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p := GeneratePassword()
		if len(p) < 32 || seen[p] {
			t.Fatalf("weak or repeated password %q", p)
		}
		seen[p] = true
	}
}
