package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/webpush/webpushtest"
)

// TestANotificationOutlivesACrash: a permission request was pushed to a phone and posted to a
// webhook, then tandem was killed. After the restart the request is pending again, but neither the
// phone nor the webhook is told of it a second time; the Approve button the phone already shows
// still answers it (once), and both then hear that it was answered.
func TestANotificationOutlivesACrash(t *testing.T) {
	td := newTandem(t, setup{})
	// The receivers close before the leak check that newTandem registered.
	rcv := newHookReceiver(t)
	ps := webpushtest.New(t)
	config := notifyConfig(webhookTarget("ops", rcv.url, ""), `{"type": "webpush", "name": "phone"}`)
	if err := os.WriteFile(filepath.Join(td.project, "tandem.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	crashed := td.startChild(t)

	td.subscribeBrowser(t, ps)

	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "run: echo approved-after-a-crash")
	asked := events.waitFor(t, "permission.asked", ofType("permission.asked", sid)).permission()
	if h := rcv.next(t, "the asked POST"); h.Event != "asked" || h.RequestID != asked.ID {
		t.Fatalf("webhook before the crash: %s", h.body)
	}
	p := nextPush(t, ps)
	if p.Type != "asked" || p.RequestID != asked.ID || len(p.Actions) != 2 || p.Actions[0].Decision != "once" {
		t.Fatalf("push before the crash %+v", p)
	}
	// Both deliveries are in the log before the crash.
	td.deliveries(t, "ops", asked.ID, 1)
	td.deliveries(t, "phone", asked.ID, 1)

	crashed.kill()
	events.close()
	td.client.CloseIdleConnections()
	td.start(t)
	t.Cleanup(func() { td.stop(t) })
	events = td.subscribe(t)

	if after := td.pending(t, sid); len(after) != 1 || after[0].ID != asked.ID {
		t.Fatalf("pending after the restart %+v, want %s", after, asked.ID)
	}

	t.Run("the Approve button shown before the crash answers the restored request", func(t *testing.T) {
		code, body := td.postAction(t, p.Actions[0].Token)
		if code != http.StatusOK || !strings.Contains(body, `"decision":"once"`) || !strings.Contains(body, asked.ID) {
			t.Fatalf("status %d: %s", code, body)
		}
		events.waitFor(t, "session.idle", ofType("session.idle", sid))
		out, _ := json.Marshal(td.messages(t, sid))
		if !strings.Contains(string(out), "approved-after-a-crash\\n") {
			t.Errorf("the command's output is not in the session: %s", out)
		}
	})

	t.Run("the webhook and the phone were not told again, and hear the answer", func(t *testing.T) {
		// A second asked notification would come before the resolved one.
		if h := rcv.next(t, "the next POST"); h.Event != "resolved" || h.RequestID != asked.ID || h.Resolution == nil || h.Resolution.Answer != "once" {
			t.Fatalf("after the restart the webhook got %s, want only the resolution", h.body)
		}
		if r := nextPush(t, ps); r.Type != "resolved" || r.RequestID != asked.ID || !strings.Contains(r.Title, "by web push action") {
			t.Fatalf("after the restart the phone got %+v, want only the resolution", r)
		}
		rcv.none(t)
	})

	t.Run("the token is spent, and the Reject token died with it", func(t *testing.T) {
		for _, tok := range []string{p.Actions[0].Token, p.Actions[1].Token} {
			if code, body := td.postAction(t, tok); code != http.StatusForbidden {
				t.Errorf("status %d: %s, want 403", code, body)
			}
		}
	})
}
