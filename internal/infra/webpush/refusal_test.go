package webpush_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/notify"
	"github.com/tandem-dev/tandem/internal/infra/webpush"
	"github.com/tandem-dev/tandem/internal/infra/webpush/webpushtest"
)

func TestAPushServiceRefusal(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "tandem.db"))
	svc, err := webpush.Open(t.Context(), webpush.Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	push := webpushtest.New(t)
	sub := push.Subscribe(t, svc.PublicKey())
	if err := svc.Subscribe(t.Context(), sub, "Safari on iPhone"); err != nil {
		t.Fatal(err)
	}

	t.Run("the default subject is one a push service that refuses local contacts accepts", func(t *testing.T) {
		sent, total, err := svc.Asked(t.Context(), webpush.Notice{Kind: "permission", RequestID: "per_default", Title: "bash"})
		if err != nil || sent != 1 || total != 1 {
			t.Fatalf("Asked = %d of %d, %v", sent, total, err)
		}
		push.Next(t, 5*time.Second)
	})

	t.Run("is an error with the push service's status and reason, not worth retrying", func(t *testing.T) {
		push.Refuse(sub.Endpoint, 403, `{"reason":"BadJwtToken"}`)
		sent, _, err := svc.Asked(t.Context(), webpush.Notice{Kind: "permission", RequestID: "per_refused", Title: "bash"})
		var status *notify.StatusError
		if sent != 0 || !errors.As(err, &status) {
			t.Fatalf("Asked = %d sent, %v; want a *notify.StatusError", sent, err)
		}
		if status.Code != 403 || status.Body != "BadJwtToken" {
			t.Fatalf("refusal %d %q, want 403 BadJwtToken", status.Code, status.Body)
		}
	})
}

func TestSubjectFor(t *testing.T) {
	for _, tc := range []struct{ name, origin, want string }{
		{"a public https origin names itself", "https://tandem.example.com:8443/ui", "https://tandem.example.com:8443"},
		{"a plain http origin falls back to the default", "http://tandem.example.com", webpush.DefaultSubject},
		{"a loopback origin falls back to the default", "https://127.0.0.1:4096", webpush.DefaultSubject},
		{"a .local name falls back to the default", "https://box.local", webpush.DefaultSubject},
		{"no origin falls back to the default", "", webpush.DefaultSubject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := webpush.SubjectFor(tc.origin); got != tc.want {
				t.Errorf("SubjectFor(%q) = %q, want %q", tc.origin, got, tc.want)
			}
		})
	}
}

func TestLocalSubject(t *testing.T) {
	for subject, want := range map[string]bool{
		"mailto:tandem@localhost":              true,
		"mailto:me@box.local":                  true,
		"mailto:me@192.168.1.20":               true,
		"https://localhost":                    true,
		"https://10.0.0.2":                     true,
		"mailto:":                              true,
		"https://github.com/tandem-dev/tandem": false,
		"mailto:ops@example.org":               false,
		"https://push.example.com":             false,
	} {
		if got := webpush.LocalSubject(subject); got != want {
			t.Errorf("LocalSubject(%q) = %v, want %v", subject, got, want)
		}
	}
}
