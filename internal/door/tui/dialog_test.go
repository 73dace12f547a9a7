package tui

import "testing"

func TestALinkShowsTheDomainItReallyLeadsTo(t *testing.T) {
	for _, tt := range []struct {
		name, url, fallback, want string
	}{
		{"a plain link shows its host", "https://auth.example.com/connect?x=1", "", "auth.example.com"},
		{"user info before the host is not the domain", "https://bank.example.com@attacker.test/login", "bank.example.com", "attacker.test"},
		{"a port is not part of the domain", "http://127.0.0.1:8080/cb", "", "127.0.0.1"},
		{"a host in look-alike letters shows its ASCII form", "https://\u0430pple.com/", "", "\u0430pple.com = xn--pple-43d.com (not plain ASCII: check the letters)"},
		{"an unreadable URL falls back to the server's domain", "://", "example.org", "example.org"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := linkDomain(tt.url, tt.fallback); got != tt.want {
				t.Fatalf("linkDomain(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}
