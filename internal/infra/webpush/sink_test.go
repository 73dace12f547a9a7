package webpush

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/notify"
)

func TestSameOriginLink(t *testing.T) {
	tests := []struct{ name, link, want string }{
		{"a link to another host keeps its path and fragment", "https://tandem.example.ts.net/#/pending/per_1", "/#/pending/per_1"},
		{"a link without a path opens the root", "http://127.0.0.1:4096#/mcp", "/#/mcp"},
		{"no link is none", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameOriginLink(tt.link); got != tt.want {
				t.Errorf("sameOriginLink(%q) = %q, want %q", tt.link, got, tt.want)
			}
		})
	}
}

func TestResolvedText(t *testing.T) {
	event := func(client string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"client": client, "decision": "once"})
		return b
	}
	tests := []struct {
		name      string
		res       *notify.Resolution
		wantTitle string
	}{
		{"an answer names the client that gave it", &notify.Resolution{Cause: "reply", Answer: "once", Event: event("web push action")}, "tandem: answered by web push action"},
		{"an answer without a client says only that it was answered", &notify.Resolution{Cause: "reply", Event: event("")}, "tandem: answered"},
		{"a timeout names nobody", &notify.Resolution{Cause: "timeout", Event: event("")}, "tandem: answered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, body := resolvedText(notify.Notification{Title: "tandem: answered", Message: "allow bash? → once", Resolution: tt.res})
			if title != tt.wantTitle || body != "allow bash? → once" {
				t.Errorf("got %q / %q", title, body)
			}
		})
	}
}

func TestEncodeFitsOneRecord(t *testing.T) {
	t.Run("angle brackets and ampersands stay one byte", func(t *testing.T) {
		b, err := encode(payload{Type: "asked", Body: "a < b && c > d"})
		if err != nil || !strings.Contains(string(b), `"a < b && c > d"`) {
			t.Errorf("%s, %v", b, err)
		}
	})
	t.Run("a body of escapes too long for one record is shortened until it fits", func(t *testing.T) {
		b, err := encode(payload{Type: "asked", Title: "t", Body: strings.Repeat("\x01", 1000)})
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > MaxPlaintext || !json.Valid(b) {
			t.Errorf("%d bytes, valid %v", len(b), json.Valid(b))
		}
	})
}
