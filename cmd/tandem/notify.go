package main

import (
	"tandem/config"
	"tandem/notify"
)

// notifyTargets builds the dispatcher's targets from the "notify" config (validated already by
// the config package). A new type of target gets its case here and its type in config/notify.go.
func notifyTargets(cfg []config.NotifyTarget, d *notify.Dispatcher) []notify.Target {
	var out []notify.Target
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
		default:
			continue
		}
		out = append(out, t)
	}
	return out
}
