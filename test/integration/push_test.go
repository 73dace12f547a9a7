package integration

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/webpush"
	"github.com/tandem-dev/tandem/internal/infra/webpush/webpushtest"
)

// pushed is a push as the service worker reads it.
type pushed struct {
	Type      string           `json:"type"`
	Kind      string           `json:"kind"`
	RequestID string           `json:"requestID"`
	Title     string           `json:"title"`
	Body      string           `json:"body"`
	URL       string           `json:"url"`
	Actions   []webpush.Action `json:"actions"`
	header    http.Header
}

func nextPush(t *testing.T, ps *webpushtest.Service) pushed {
	t.Helper()
	var p pushed
	got := ps.Next(t, waitLimit)
	if err := json.Unmarshal(got.Plaintext, &p); err != nil {
		t.Fatalf("push is not JSON: %v: %s", err, got.Plaintext)
	}
	p.header = got.Header
	return p
}

// vapidSubject is the "sub" claim of a push's VAPID signature (checked by the push service already).
func vapidSubject(t *testing.T, h http.Header) string {
	t.Helper()
	jwt, _, _ := strings.Cut(strings.TrimPrefix(h.Get("Authorization"), "vapid t="), ",")
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("Authorization %q", h.Get("Authorization"))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Sub string }
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.Sub
}

// postAction is what the service worker sends: the token, no credentials, from the server's origin.
func (td *tandem) postAction(t *testing.T, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, td.base+"/push/action", strings.NewReader(`{"token":"`+token+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", td.base)
	res, err := td.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestWebPushApprovesFromTheNotification: a browser subscribed over REST gets the pending request
// encrypted to its own keys through a loopback push service (which checks the VAPID signature and
// decrypts, as a real one and the browser do); the notification's Approve token, posted without
// credentials, runs the command, and the decision log says it came from the push action.
func TestWebPushApprovesFromTheNotification(t *testing.T) {
	td := startTandem(t, setup{config: `{"notify": [{"type": "webpush", "subject": "mailto:ops@example.org"}]}`})
	events := td.subscribe(t)
	ps := webpushtest.New(t)

	sub := td.subscribeBrowser(t, ps)
	var subs []webpush.Subscriber
	td.call(t, http.MethodGet, "/push/subscription", "", http.StatusOK, &subs)
	if len(subs) != 1 || subs[0].Endpoint != sub.Endpoint {
		t.Fatalf("subscriptions = %+v", subs)
	}

	sid := td.newSession(t)
	td.promptAsync(t, sid, "run: echo approved-from-phone")
	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()

	p := nextPush(t, ps)
	t.Run("the notification names the tool and the command and offers Approve and Reject", func(t *testing.T) {
		if p.Type != "asked" || p.Kind != "permission" || p.RequestID != asked.ID {
			t.Fatalf("push %+v", p)
		}
		if !strings.Contains(p.Title, "bash") || !strings.Contains(p.Body, "echo approved-from-phone") {
			t.Errorf("title %q body %q", p.Title, p.Body)
		}
		if p.URL != "/#/pending/"+asked.ID {
			t.Errorf("url %q", p.URL)
		}
		if len(p.Actions) != 2 || p.Actions[0].Action != "approve" || p.Actions[0].Decision != "once" || p.Actions[1].Decision != "reject" {
			t.Fatalf("actions %+v", p.Actions)
		}
		if sub := vapidSubject(t, p.header); sub != "mailto:ops@example.org" {
			t.Errorf("VAPID sub %q, want the configured contact", sub)
		}
	})

	t.Run("an unknown token is refused and answers nothing", func(t *testing.T) {
		if code, body := td.postAction(t, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); code != http.StatusForbidden {
			t.Fatalf("status %d: %s", code, body)
		}
		if len(td.pending(t, sid)) != 1 {
			t.Error("the request is no longer pending")
		}
	})

	t.Run("Approve's token, with no credentials, answers once and the command runs", func(t *testing.T) {
		code, body := td.postAction(t, p.Actions[0].Token)
		if code != http.StatusOK || !strings.Contains(body, `"decision":"once"`) {
			t.Fatalf("status %d: %s", code, body)
		}
		replied := events.waitFor(t, "permission.replied", ofType("permission.replied", sid))
		var r struct{ Reply, Client string }
		_ = json.Unmarshal(replied.Properties, &r)
		if r.Reply != "once" || r.Client != "web push action" {
			t.Errorf("replied %s", replied.Properties)
		}
		events.waitFor(t, "session.idle", ofType("session.idle", sid))
		out, _ := json.Marshal(td.messages(t, sid))
		if !strings.Contains(string(out), "approved-from-phone\\n") {
			t.Errorf("the command's output is not in the session: %s", out)
		}
	})

	t.Run("the decision log records the push action as the client", func(t *testing.T) {
		var log []struct {
			RequestID, Reply, Cause, Client string
		}
		td.call(t, http.MethodGet, "/permission/history?sessionID="+sid, "", http.StatusOK, &log)
		if len(log) != 1 || log[0].RequestID != asked.ID || log[0].Reply != "once" || log[0].Cause != "reply" || log[0].Client != "web push action" {
			t.Errorf("history %+v", log)
		}
	})

	t.Run("the resolution replaces the notification, naming who answered", func(t *testing.T) {
		r := nextPush(t, ps)
		if r.Type != "resolved" || r.RequestID != asked.ID || len(r.Actions) != 0 || !strings.Contains(r.Title, "by web push action") {
			t.Errorf("resolved push %+v", r)
		}
	})

	t.Run("the token is single-use and the Reject token died with it", func(t *testing.T) {
		for _, tok := range []string{p.Actions[0].Token, p.Actions[1].Token} {
			if code, body := td.postAction(t, tok); code != http.StatusForbidden {
				t.Errorf("status %d: %s", code, body)
			}
		}
	})

	t.Run("an unsubscribed browser gets nothing more", func(t *testing.T) {
		td.call(t, http.MethodDelete, "/push/subscription?endpoint="+sub.Endpoint, "", http.StatusOK, nil)
		td.promptAsync(t, sid, "run: echo nobody-notified")
		next := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
		// The delivery log shows the webpush target's attempt, which found nobody to push to.
		deadline := time.Now().Add(waitLimit)
		for {
			var log []struct{ Sink, Event, Status, Detail string }
			td.call(t, http.MethodGet, "/notify/delivery?requestID="+next.ID, "", http.StatusOK, &log)
			if len(log) > 0 {
				if log[0].Sink != "webpush" || log[0].Status != "delivered" || !strings.Contains(log[0].Detail, "no browser is subscribed") {
					t.Errorf("delivery log %+v", log)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no delivery log entry for the request")
			}
			time.Sleep(10 * time.Millisecond)
		}
		td.reply(t, next.ID, "reject", "")
		select {
		case p := <-ps.Pushes:
			t.Errorf("pushed after unsubscribing: %s", p.Plaintext)
		default:
		}
	})
}

// TestWebPushNeedsNoConfiguration: with no "notify" config, a subscribed browser is pushed every
// request, and once the last browser unsubscribed there is no webpush target (nothing in the log).
func TestWebPushNeedsNoConfiguration(t *testing.T) {
	td := startTandem(t, setup{})
	events := td.subscribe(t)
	ps := webpushtest.New(t)
	sub := td.subscribeBrowser(t, ps)

	sid := td.newSession(t)
	td.promptAsync(t, sid, "run: echo first")
	first := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
	if p := nextPush(t, ps); p.RequestID != first.ID || vapidSubject(t, p.header) != webpush.DefaultSubject {
		t.Fatalf("push %+v", p)
	}
	td.reply(t, first.ID, "reject", "")
	if r := nextPush(t, ps); r.Type != "resolved" || r.RequestID != first.ID {
		t.Fatalf("resolved push %+v", r)
	}
	events.waitFor(t, "session.idle", ofType("session.idle", sid))

	targets := func() (names []string) {
		for _, tg := range td.m.NotifyTargets() {
			names = append(names, tg.Name)
		}
		return names
	}
	if got := targets(); len(got) != 1 || got[0] != "webpush" {
		t.Errorf("targets while subscribed: %v", got)
	}
	td.call(t, http.MethodDelete, "/push/subscription?endpoint="+sub.Endpoint, "", http.StatusOK, nil)
	if got := targets(); len(got) != 0 {
		t.Errorf("targets after the last browser unsubscribed: %v", got)
	}
}

// subscribeBrowser subscribes a browser of the loopback push service to td's VAPID key, as the web
// UI's bell does with the browser's PushSubscription.
func (td *tandem) subscribeBrowser(t *testing.T, ps *webpushtest.Service) webpush.Subscription {
	t.Helper()
	var key struct{ PublicKey string }
	td.call(t, http.MethodGet, "/push/vapid", "", http.StatusOK, &key)
	sub := ps.Subscribe(t, key.PublicKey)
	body, _ := json.Marshal(sub)
	td.call(t, http.MethodPost, "/push/subscription", string(body), http.StatusOK, nil)
	return sub
}
