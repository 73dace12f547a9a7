package mcpclient

import "testing"

func TestOnlyHTTPAndHTTPSURLsAreShownToAPerson(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://example.com/authorize?x=1", true},
		{"http://127.0.0.1:8080/cb", true},
		{"javascript:alert(document.cookie)", false},
		{"data:text/html,<script>x</script>", false},
		{"file:///etc/passwd", false},
		{"https:///no-host", false},
		{"/relative", false},
	} {
		t.Run(tt.url, func(t *testing.T) {
			_, err := elicitationURL(tt.url)
			if (err == nil) != tt.ok {
				t.Fatalf("elicitationURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
			}
		})
	}
}
