package routes

import (
	"net/url"
	"strings"
	"testing"
)

// TestQueryParamReadsTheQueryAsURLValuesDoes holds the in-place reading of a query parameter to
// what url.Values answers for every kind of query a client can send.
func TestQueryParamReadsTheQueryAsURLValuesDoes(t *testing.T) {
	many := strings.Repeat("x=1&", manyPairs) + "limit=7&limit=8"
	for _, tc := range []struct{ name, query string }{
		{"an empty query has nothing", ""},
		{"a plain pair is read", "limit=10"},
		{"the first of repeated values wins", "limit=1&limit=2"},
		{"a key without a value is present and empty", "limit"},
		{"a key with an empty value is present and empty", "limit=&x=1"},
		{"escapes in keys and values are decoded", "li%6Dit=a%20b+c"},
		{"a pair with a semicolon is skipped", "limit=1;x=2&limit=3"},
		{"a pair with a bad escape is skipped", "limit=%zz&limit=4"},
		{"a key with a bad escape is skipped", "lim%zzit=1&limit=5"},
		{"empty pairs are skipped", "&&limit=6&"},
		{"a key that only starts the same is another key", "limits=1&limitx=2"},
		{"a query of many pairs is parsed once", many},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &url.URL{Path: "/session", RawQuery: tc.query}
			want := u.Query()
			var parsed url.Values
			for _, name := range []string{"limit", "x", "search", "limits", ""} {
				got, present := queryParam(u, name, &parsed)
				if got != want.Get(name) || present != want.Has(name) {
					t.Errorf("%q in %q: got %q, %v; url.Values has %q, %v", name, tc.query, got, present, want.Get(name), want.Has(name))
				}
			}
		})
	}
}
