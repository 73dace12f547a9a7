package app

import (
	"cmp"

	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/notify"
	"github.com/tandem-dev/tandem/internal/infra/webpush"
)

// notifyTargets builds the dispatcher's targets from the "notify" config (validated already by
// the config package). A new type of target gets its case here and its type in config/notify.go.
// Web Push needs no configuration: while a browser is subscribed (the web UI's bell), it is told
// of every request at once; a "webpush" entry sets its filter (or enabled: false).
func notifyTargets(cfg []config.NotifyTarget, d *notify.Dispatcher, push *webpush.Service, subscribed bool) []notify.Target {
	var out []notify.Target
	configured := false
	for _, c := range cfg {
		configured = configured || c.Type == "webpush"
	}
	if !configured && subscribed {
		cfg = append(cfg, config.NotifyTarget{Type: "webpush", Name: "webpush"})
	}
	for i, c := range cfg {
		if !c.Active() {
			continue
		}
		t := notify.Target{
			Name:   c.DisplayName(i),
			Filter: notify.Filter{Sessions: c.Sessions, Delay: c.Delay.D},
			Retry:  notify.Retry{Attempts: c.Attempts, Backoff: c.Backoff.D},
			WebURL: c.WebURL,
		}
		for _, k := range c.Kinds {
			t.Filter.Kinds = append(t.Filter.Kinds, notify.Kind(k))
		}
		switch c.Type {
		case "webhook":
			t.Sink = &notify.Webhook{URL: c.URL, Secret: c.Secret, Headers: c.Headers, Client: d.Client()}
			t.Resolved = true
		case "ntfy":
			t.Sink = &notify.Ntfy{URL: c.URL, Token: c.Token, Priority: c.Priority.Level, Headers: c.Headers, Client: d.Client()}
			if c.Attempts == 0 {
				t.Retry.Attempts = 3
			}
		case "webpush":
			// A configured contact wins; else the server's public https address, else tandem's
			// home page: a contact every push service accepts (Apple's refuses one at localhost).
			push.SetSubject(cmp.Or(c.Subject, webpush.SubjectFor(c.WebURL)))
			t.Sink = &webpush.Sink{Service: push}
			t.Resolved = true // the outcome replaces the notification, and its buttons, on every device
		default:
			continue
		}
		out = append(out, t)
	}
	return out
}
