package contentcoding

import (
	"strconv"
	"testing"
)

func TestChoose(t *testing.T) {
	offers := []string{"br", "gzip"}
	for _, tc := range []struct {
		name, header, want string
	}{
		{"a browser that takes both gets brotli", "gzip, deflate, br, zstd", "br"},
		{"a client that takes only gzip gets gzip", "gzip", "gzip"},
		{"no header means the body as it is", "", ""},
		{"identity only means the body as it is", "identity", ""},
		{"a weight of zero refuses a coding", "br;q=0, gzip", "gzip"},
		{"the higher weight wins over the server's order", "br;q=0.5, gzip;q=0.9", "gzip"},
		{"equal weights keep the server's order", "gzip;q=0.8, br;q=0.8", "br"},
		{"the star covers codings not named", "*", "br"},
		{"the star does not override a named refusal", "br;q=0, *;q=1", "gzip"},
		{"names are case-insensitive", "GZip", "gzip"},
		{"spaces around parameters are fine", "br ; q=0.2 , gzip ; q = 0.1", "br"},
		{"a malformed weight voids its element", "br;q=2, gzip;q=abc", ""},
		{"everything refused", "*;q=0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Choose(tc.header, offers...); got != tc.want {
				t.Errorf("Choose(%q) = %q, want %q", tc.header, got, tc.want)
			}
		})
	}
}

func TestAccepts(t *testing.T) {
	if !Accepts("gzip, br", "gzip") || Accepts("br", "gzip") || Accepts("gzip;q=0", "gzip") {
		t.Error("Accepts disagrees with the header")
	}
}

func TestChooseAllocatesNothing(t *testing.T) {
	// Every JSON response asks; reading the header must not cost the response allocations.
	for _, header := range []string{"", "gzip, deflate, br, zstd", "br;q=0.5, gzip;q=0.9, *;q=0.1"} {
		t.Run("for "+strconv.Quote(header), func(t *testing.T) {
			if n := testing.AllocsPerRun(100, func() { Choose(header, "br", "gzip") }); n != 0 {
				t.Errorf("%v allocations per call, want 0", n)
			}
		})
	}
}
