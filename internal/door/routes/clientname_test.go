package routes

import "testing"

func TestClientNameIsWhatAPersonReads(t *testing.T) {
	tests := []struct {
		name, named, ua, want string
	}{
		{"a client that names itself keeps its name", "tandem attach", "Go-http-client/1.1", "tandem attach"},
		{"curl is curl", "", "curl/8.5.0", "curl"},
		{"Chrome on a phone says the phone's system", "", "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36", "Chrome on Android"},
		{"Chrome on a desktop", "", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36", "Chrome on Linux"},
		{"headless Chrome is told apart", "", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/130.0.0.0 Safari/537.36", "Headless Chrome on Linux"},
		{"Edge also says Chrome and is Edge", "", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Edg/130.0.0.0", "Edge on Windows"},
		{"Safari on an iPhone", "", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Safari on iPhone"},
		{"Firefox on a Mac", "", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox on macOS"},
		{"a Go program", "", "Go-http-client/2.0", "a Go program"},
		{"a Python script", "", "python-requests/2.32.3", "a Python script"},
		{"an unknown program by its first product", "", "my-bot/1.2 (+https://example.com)", "my-bot"},
		{"no User-Agent names nobody", "", "", ""},
		{"an overlong self-given name is clipped", "a-client-whose-name-goes-on-and-on-and-on-and-on-forever", "", "a-client-whose-name-goes-on-and-on-and-on-and-o…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clientName(tt.named, tt.ua); got != tt.want {
				t.Errorf("clientName(%q, %q) = %q, want %q", tt.named, tt.ua, got, tt.want)
			}
		})
	}
}
