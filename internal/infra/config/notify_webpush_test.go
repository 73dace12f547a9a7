package config

import (
	"strings"
	"testing"
)

func TestWebPushTargetValidation(t *testing.T) {
	tests := []struct {
		name    string
		targets []NotifyTarget
		wantErr string
	}{
		{"a webpush target needs no url", []NotifyTarget{{Type: "webpush", Kinds: []string{"permission"}}}, ""},
		{"a webpush target with a url is refused", []NotifyTarget{{Type: "webpush", URL: "https://example.org/x"}}, "takes no url"},
		{"a second webpush target is refused", []NotifyTarget{{Type: "webpush"}, {Type: "webpush", Name: "again"}}, "is the webpush target already"},
		{"a webpush target may name its contact", []NotifyTarget{{Type: "webpush", Subject: "mailto:ops@example.org"}}, ""},
		{"a contact that is not a mailto: or https: URL is refused", []NotifyTarget{{Type: "webpush", Subject: "ops@example.org"}}, "subject must be"},
		{"a webhook still needs its url", []NotifyTarget{{Type: "webpush"}, {Type: "webhook", Secret: "s"}}, "url is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := validateNotify(tt.targets)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
