package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/notify"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/infra/webpush"
	"github.com/tandem-dev/tandem/internal/infra/webpush/webpushtest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const secret = "s3cret-shared-with-the-receiver"

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a loopback HTTP server that answers with the scripted statuses (200 once they run
// out) and hands every request it got to the test.
type receiver struct {
	*httptest.Server
	got chan received

	mu       sync.Mutex
	statuses []int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	r := &receiver{got: make(chan received, 64), statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		r.got <- received{header: req.Header.Clone(), body: body}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// next waits for the receiver's next request.
func (r *receiver) next(t *testing.T) received {
	t.Helper()
	got, _ := testenv.Recv(t, r.got, "a request at the receiver")
	return got
}

// none checks that nothing arrived.
func (r *receiver) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-r.got:
		t.Fatalf("the receiver got a request it should not have: %s %s", got.header, got.body)
	default:
	}
}

// env is a dispatcher on a real bus and a real SQLite file.
type env struct {
	bus     *bus.Bus
	db      *store.DB
	d       *notify.Dispatcher
	stopped bool
}

func start(t *testing.T, targets func(d *notify.Dispatcher) []notify.Target) *env {
	t.Helper()
	return startAt(t, filepath.Join(t.TempDir(), "tandem.db"), targets)
}

// startAt starts a dispatcher over the database file at path; it stops when the test ends, or
// earlier with stop (a server shutting down).
func startAt(t *testing.T, path string, targets func(d *notify.Dispatcher) []notify.Target) *env {
	t.Helper()
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	d, err := notify.New(t.Context(), notify.Options{Bus: b, DB: db, WebURL: func() string { return "http://tandem.test:4096/" }})
	if err != nil {
		t.Fatal(err)
	}
	d.SetTargets(targets(d))
	e := &env{bus: b, db: db, d: d}
	t.Cleanup(func() { e.stop(t) })
	return e
}

// stop closes the dispatcher, the bus and the database (once).
func (e *env) stop(t *testing.T) {
	t.Helper()
	if e.stopped {
		return
	}
	e.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	e.d.Close(ctx)
	e.bus.Close()
	if err := e.db.Close(); err != nil {
		t.Error(err)
	}
}

// askPermission publishes what the permission service publishes when a bash command waits.
func (e *env) askPermission(t *testing.T, requestID, sessionID, command string) {
	t.Helper()
	props := map[string]any{
		"id": requestID, "sessionID": sessionID, "permission": "bash", "patterns": []string{command},
		"metadata": map[string]any{"command": command}, "always": []string{}, "decisions": []any{},
		"time": map[string]any{"created": time.Now().UnixMilli()},
	}
	if err := e.bus.Publish("/home/me/project", "permission.asked", props); err != nil {
		t.Fatal(err)
	}
}

func (e *env) replyPermission(t *testing.T, requestID, sessionID, decision string) {
	t.Helper()
	props := map[string]any{"sessionID": sessionID, "requestID": requestID, "reply": decision, "decision": decision, "cause": "reply"}
	if err := e.bus.Publish("/home/me/project", "permission.replied", props); err != nil {
		t.Fatal(err)
	}
}

// log waits until the delivery log of a request holds n entries and returns them, oldest first.
func (e *env) log(t *testing.T, requestID string, n int) []notify.Delivery {
	t.Helper()
	var out []notify.Delivery
	testenv.Eventually(t, "the delivery log of "+requestID, func() bool {
		var err error
		out, err = e.d.Deliveries(t.Context(), notify.DeliveryQuery{RequestID: requestID})
		if err != nil {
			t.Fatal(err)
		}
		return len(out) >= n
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func webhook(url string, d *notify.Dispatcher) notify.Target {
	return notify.Target{Name: "hook", Sink: &notify.Webhook{URL: url, Secret: secret, Client: d.Client()}, Resolved: true,
		Retry: notify.Retry{Attempts: 3, Backoff: 5 * time.Millisecond}}
}

// verified decodes a webhook POST after checking its signature as a receiver would.
func verified(t *testing.T, got received) notify.Notification {
	t.Helper()
	ts, sig := got.header.Get(notify.HeaderTimestamp), got.header.Get(notify.HeaderSignature)
	if !notify.Verify([]byte(secret), ts, sig, got.body, time.Now(), 5*time.Minute) {
		t.Fatalf("signature %q of timestamp %q does not verify; body %s", sig, ts, got.body)
	}
	if notify.Verify([]byte("another secret"), ts, sig, got.body, time.Now(), 5*time.Minute) {
		t.Fatal("the signature verifies with the wrong secret")
	}
	if notify.Verify([]byte(secret), ts, sig, append([]byte(" "), got.body...), time.Now(), 5*time.Minute) {
		t.Fatal("the signature verifies a changed body")
	}
	if notify.Verify([]byte(secret), ts, sig, got.body, time.Now().Add(time.Hour), 5*time.Minute) {
		t.Fatal("the signature verifies an hour later: a replay would pass")
	}
	var n notify.Notification
	if err := json.Unmarshal(got.body, &n); err != nil {
		t.Fatal(err)
	}
	if h := got.header.Get(notify.HeaderEvent); h != string(n.Event) {
		t.Errorf("%s header %q, body event %q", notify.HeaderEvent, h, n.Event)
	}
	return n
}

func TestWebhook(t *testing.T) {
	t.Run("a receiver that checks the signature hears of a request when it is asked and when it is answered", func(t *testing.T) {
		rcv := newReceiver(t)
		e := start(t, func(d *notify.Dispatcher) []notify.Target { return []notify.Target{webhook(rcv.URL, d)} })
		e.askPermission(t, "per_1", "ses_1", "rm -rf build")
		asked := verified(t, rcv.next(t))
		if asked.Event != notify.Asked || asked.Kind != notify.Permission || asked.RequestID != "per_1" || asked.SessionID != "ses_1" {
			t.Fatalf("asked notification %+v", asked)
		}
		if !strings.Contains(asked.Title, "bash") || !strings.Contains(asked.Message, "rm -rf build") {
			t.Errorf("title %q message %q do not name the tool and the command", asked.Title, asked.Message)
		}
		if asked.Link != "http://tandem.test:4096/#/pending/per_1" {
			t.Errorf("link %q", asked.Link)
		}
		var req struct {
			ID       string   `json:"id"`
			Patterns []string `json:"patterns"`
		}
		if err := json.Unmarshal(asked.Request, &req); err != nil || req.ID != "per_1" || req.Patterns[0] != "rm -rf build" {
			t.Errorf("request %s (%v)", asked.Request, err)
		}
		e.replyPermission(t, "per_1", "ses_1", "once")
		replied := verified(t, rcv.next(t))
		if replied.Event != notify.Resolved || replied.RequestID != "per_1" || replied.Resolution == nil ||
			replied.Resolution.Cause != "reply" || replied.Resolution.Answer != "once" {
			t.Fatalf("resolved notification %+v", replied)
		}
		if replied.ID == asked.ID || len(replied.Request) == 0 {
			t.Errorf("resolved notification: ID %q (asked %q), request %s", replied.ID, asked.ID, replied.Request)
		}
		log := e.log(t, "per_1", 2)
		for i, want := range []string{"asked", "resolved"} {
			if log[i].Event != want || log[i].Status != "delivered" || log[i].Code != 200 || log[i].Attempt != 1 || log[i].Target != "hook" {
				t.Errorf("log entry %d: %+v, want %s delivered 200", i, log[i], want)
			}
		}
	})

	t.Run("a receiver that fails is retried with backoff until it accepts, and the log shows every attempt", func(t *testing.T) {
		rcv := newReceiver(t, 500, 503)
		e := start(t, func(d *notify.Dispatcher) []notify.Target { return []notify.Target{webhook(rcv.URL, d)} })
		e.askPermission(t, "per_2", "ses_1", "make")
		first, second, third := rcv.next(t), rcv.next(t), rcv.next(t)
		for _, got := range []received{first, second, third} {
			verified(t, got)
			if got.header.Get(notify.HeaderNotification) != first.header.Get(notify.HeaderNotification) {
				t.Errorf("a retry changed the notification ID: %q, first %q", got.header.Get(notify.HeaderNotification), first.header.Get(notify.HeaderNotification))
			}
		}
		log := e.log(t, "per_2", 3)
		want := []struct {
			status string
			code   int
		}{{"retrying", 500}, {"retrying", 503}, {"delivered", 200}}
		for i, w := range want {
			if log[i].Attempt != i+1 || log[i].Status != w.status || log[i].Code != w.code {
				t.Errorf("attempt %d: %+v, want %s %d", i+1, log[i], w.status, w.code)
			}
		}
		if !strings.Contains(log[0].Detail, "next attempt in 5ms") || !strings.Contains(log[1].Detail, "next attempt in 10ms") {
			t.Errorf("backoff not doubled: %q, %q", log[0].Detail, log[1].Detail)
		}
	})

	t.Run("a receiver that refuses with 400 is not retried", func(t *testing.T) {
		rcv := newReceiver(t, 400)
		e := start(t, func(d *notify.Dispatcher) []notify.Target { return []notify.Target{webhook(rcv.URL, d)} })
		e.askPermission(t, "per_3", "ses_1", "make")
		rcv.next(t)
		log := e.log(t, "per_3", 1)
		if len(log) != 1 || log[0].Status != "failed" || log[0].Code != 400 {
			t.Fatalf("log %+v, want one failed attempt with 400", log)
		}
	})

	t.Run("a receiver that keeps failing gets the bounded number of attempts", func(t *testing.T) {
		rcv := newReceiver(t, 500, 500, 500, 500, 500)
		e := start(t, func(d *notify.Dispatcher) []notify.Target { return []notify.Target{webhook(rcv.URL, d)} })
		e.askPermission(t, "per_4", "ses_1", "make")
		log := e.log(t, "per_4", 3)
		if log[2].Status != "failed" || log[2].Attempt != 3 {
			t.Fatalf("last attempt %+v, want the third, failed", log[2])
		}
		for range 3 {
			rcv.next(t)
		}
		rcv.none(t)
	})
}

func TestDelay(t *testing.T) {
	t.Run("a request answered within the delay notifies nobody and the log says why", func(t *testing.T) {
		rcv := newReceiver(t)
		e := start(t, func(d *notify.Dispatcher) []notify.Target {
			w := webhook(rcv.URL, d)
			w.Filter.Delay = time.Hour
			return []notify.Target{w}
		})
		e.askPermission(t, "per_5", "ses_1", "make")
		e.replyPermission(t, "per_5", "ses_1", "once")
		log := e.log(t, "per_5", 1)
		if len(log) != 1 || log[0].Status != "skipped" || log[0].Attempt != 0 || !strings.Contains(log[0].Detail, "within the delay of 1h0m0s") {
			t.Fatalf("log %+v, want one skipped entry", log)
		}
		rcv.none(t)
	})

	t.Run("a request still waiting when the delay ends is announced, and its end after it", func(t *testing.T) {
		rcv := newReceiver(t)
		e := start(t, func(d *notify.Dispatcher) []notify.Target {
			w := webhook(rcv.URL, d)
			w.Filter.Delay = 20 * time.Millisecond
			return []notify.Target{w}
		})
		e.askPermission(t, "per_6", "ses_1", "make")
		if n := verified(t, rcv.next(t)); n.Event != notify.Asked {
			t.Fatalf("first notification %+v", n)
		}
		e.replyPermission(t, "per_6", "ses_1", "reject")
		if n := verified(t, rcv.next(t)); n.Event != notify.Resolved || n.Resolution.Answer != "reject" {
			t.Fatalf("second notification %+v", n)
		}
	})
}

func TestDelayCountsFromTheAsking(t *testing.T) {
	t.Run("a request asked longer ago than the delay (restored after a restart) is announced at once", func(t *testing.T) {
		rcv := newReceiver(t)
		e := start(t, func(d *notify.Dispatcher) []notify.Target {
			w := webhook(rcv.URL, d)
			w.Filter.Delay = time.Hour
			return []notify.Target{w}
		})
		props := map[string]any{"id": "per_old", "sessionID": "ses_1", "permission": "bash", "patterns": []string{"make"},
			"metadata": map[string]any{"command": "make"}, "time": map[string]any{"created": time.Now().Add(-2 * time.Hour).UnixMilli()}}
		if err := e.bus.Publish("/p", "permission.asked", props); err != nil {
			t.Fatal(err)
		}
		if n := verified(t, rcv.next(t)); n.Event != notify.Asked || n.RequestID != "per_old" {
			t.Fatalf("got %+v", n)
		}
	})
}

func TestFilter(t *testing.T) {
	t.Run("a target hears only of the kinds and sessions it names", func(t *testing.T) {
		perms, other := newReceiver(t), newReceiver(t)
		e := start(t, func(d *notify.Dispatcher) []notify.Target {
			p := webhook(perms.URL, d)
			p.Filter.Kinds = []notify.Kind{notify.Permission}
			o := webhook(other.URL, d)
			o.Name, o.Filter.Sessions = "other", []string{"ses_other"}
			return []notify.Target{p, o}
		})
		e.askPermission(t, "per_7", "ses_1", "make")
		if err := e.bus.Publish("/p", "question.asked", map[string]any{"id": "que_1", "sessionID": "ses_other",
			"questions": []any{map[string]any{"question": "Which DB?", "header": "DB", "options": []any{map[string]any{"label": "Postgres"}, map[string]any{"label": "SQLite"}}}}}); err != nil {
			t.Fatal(err)
		}
		if n := verified(t, perms.next(t)); n.RequestID != "per_7" {
			t.Fatalf("the permission target got %+v", n)
		}
		q := verified(t, other.next(t))
		if q.RequestID != "que_1" || q.Kind != notify.Question || !strings.Contains(q.Message, "Which DB? (Postgres / SQLite)") {
			t.Fatalf("the session target got %+v", q)
		}
		if err := e.bus.Publish("/p", "question.rejected", map[string]any{"sessionID": "ses_other", "requestID": "que_1"}); err != nil {
			t.Fatal(err)
		}
		if n := verified(t, other.next(t)); n.RequestID != "que_1" || n.Resolution.Cause != "reject" {
			t.Fatalf("the session target got %+v", n)
		}
		perms.none(t)
		other.none(t)
	})
}

func TestNtfy(t *testing.T) {
	t.Run("an ntfy topic gets the title, priority, tags, click link and token in headers and the message as body", func(t *testing.T) {
		rcv := newReceiver(t)
		e := start(t, func(d *notify.Dispatcher) []notify.Target {
			return []notify.Target{{Name: "phone", Sink: &notify.Ntfy{URL: rcv.URL + "/tandem-approvals", Token: "tk_abc", Priority: 5, Client: d.Client()},
				WebURL: "https://tandem.example.net/"}}
		})
		e.askPermission(t, "per_8", "ses_9", "git push --force")
		got := rcv.next(t)
		h := got.header
		if h.Get("Title") != "tandem: allow bash?" || h.Get("Priority") != "5" || h.Get("Tags") != "lock" ||
			h.Get("Click") != "https://tandem.example.net/#/pending/per_8" || h.Get("Authorization") != "Bearer tk_abc" {
			t.Fatalf("headers %v", h)
		}
		if !strings.HasPrefix(string(got.body), "git push --force\n") {
			t.Errorf("body %q", got.body)
		}
		// ntfy wakes people for what waits; an answer is not worth a push: the next request is
		// what the topic hears of next.
		e.replyPermission(t, "per_8", "ses_9", "once")
		e.askPermission(t, "per_9", "ses_9", "make")
		if got := rcv.next(t); !strings.HasPrefix(string(got.body), "make\n") {
			t.Fatalf("after the answer the topic got %q, want the next request", got.body)
		}
	})
}

// TestRestoredRequest: after a restart the pending requests are announced again on the bus; the
// targets the previous run told are not told twice, but still hear how the request ends.
func TestRestoredRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tandem.db")
	told, refused, added := newReceiver(t), newReceiver(t, 400), newReceiver(t)
	hook := func(name, url string) func(d *notify.Dispatcher) notify.Target {
		return func(d *notify.Dispatcher) notify.Target {
			w := webhook(url, d)
			w.Name = name
			return w
		}
	}
	told1, refused1, added1 := hook("told", told.URL), hook("refused", refused.URL), hook("added", added.URL)

	before := startAt(t, path, func(d *notify.Dispatcher) []notify.Target { return []notify.Target{told1(d), refused1(d)} })
	before.askPermission(t, "per_r1", "ses_1", "make release")
	if n := verified(t, told.next(t)); n.Event != notify.Asked || n.RequestID != "per_r1" {
		t.Fatalf("before the restart the target got %+v", n)
	}
	refused.next(t) // refused with 400: not delivered
	before.log(t, "per_r1", 2)
	before.stop(t)

	after := startAt(t, path, func(d *notify.Dispatcher) []notify.Target { return []notify.Target{told1(d), refused1(d), added1(d)} })
	after.askPermission(t, "per_r1", "ses_1", "make release") // the restored request, announced again

	t.Run("a target the previous run did not reach, or did not have, is told that the request waits", func(t *testing.T) {
		for _, r := range []*receiver{refused, added} {
			if n := verified(t, r.next(t)); n.Event != notify.Asked || n.RequestID != "per_r1" {
				t.Fatalf("after the restart got %+v, want the asked notification", n)
			}
		}
	})
	after.replyPermission(t, "per_r1", "ses_1", "once")
	t.Run("the target that was told before the restart is not told again, but hears the answer", func(t *testing.T) {
		// Were the asked notification sent again, it would come first: a resolved one waits for it.
		n := verified(t, told.next(t))
		if n.Event != notify.Resolved || n.RequestID != "per_r1" || n.Resolution.Answer != "once" || !strings.Contains(string(n.Request), "make release") {
			t.Fatalf("after the restart the told target got %+v, want only the resolved notification", n)
		}
		told.none(t)
	})
	t.Run("the others hear the answer after the request", func(t *testing.T) {
		for _, r := range []*receiver{refused, added} {
			if n := verified(t, r.next(t)); n.Event != notify.Resolved {
				t.Fatalf("got %+v, want the resolved notification", n)
			}
		}
	})
	t.Run("the delivery log shows one asked notification delivered per target", func(t *testing.T) {
		log := after.log(t, "per_r1", 7)
		delivered := map[string]int{}
		for _, l := range log {
			if l.Event == "asked" && l.Status == "delivered" {
				delivered[l.Target]++
			}
		}
		if delivered["told"] != 1 || delivered["refused"] != 1 || delivered["added"] != 1 {
			t.Errorf("asked deliveries per target %v, want one each; log %+v", delivered, log)
		}
	})
}

// TestHowAQuestionEnded: a question that ends without answers is reported as dismissed, timed out
// or cancelled, as tandem's question.rejected event says, to a webhook and to Web Push.
func TestHowAQuestionEnded(t *testing.T) {
	colour := question.Info{Question: "Which colour?", Header: "Colour", Options: []question.Option{{Label: "Red"}, {Label: "Blue"}}}
	tests := []struct {
		name    string
		timeout time.Duration
		end     func(t *testing.T, svc *question.Service, requestID string, cancel context.CancelFunc)
		cause   string
		title   string
	}{
		{"a question a person dismissed is reported as dismissed", 0, func(t *testing.T, svc *question.Service, requestID string, _ context.CancelFunc) {
			if err := svc.Reject(requestID, pending.Who{Client: "phone"}); err != nil {
				t.Fatal(err)
			}
		}, "reject", "tandem: dismissed"},
		{"a question nobody answered in time is reported as timed out", 100 * time.Millisecond, func(*testing.T, *question.Service, string, context.CancelFunc) {},
			"timeout", "tandem: timed out"},
		{"a question whose turn was cancelled is reported as cancelled", 0, func(_ *testing.T, _ *question.Service, _ string, cancel context.CancelFunc) { cancel() },
			"cancel", "tandem: cancelled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newReceiver(t)
			e := start(t, func(d *notify.Dispatcher) []notify.Target { return nil })
			push := webpushtest.New(t)
			wp, err := webpush.Open(t.Context(), webpush.Options{DB: e.db})
			if err != nil {
				t.Fatal(err)
			}
			if err := wp.Subscribe(t.Context(), push.Subscribe(t, wp.PublicKey()), "phone"); err != nil {
				t.Fatal(err)
			}
			e.d.SetTargets([]notify.Target{webhook(rcv.URL, e.d), {Name: "webpush", Sink: &webpush.Sink{Service: wp}, Resolved: true}})
			svc := question.New(question.Options{Bus: e.bus, Timeout: tc.timeout})

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := svc.Ask(ctx, question.Request{QuestionRequest: api.QuestionRequest{SessionID: "ses_1", Questions: []question.Info{colour}}, Directory: "/p"})
				done <- err
			}()
			asked := verified(t, rcv.next(t))
			push.Next(t, testenv.Patience)
			tc.end(t, svc, asked.RequestID, cancel)
			if err, _ := testenv.Recv(t, done, "the end of Ask"); err == nil {
				t.Fatal("Ask returned answers")
			}

			n := verified(t, rcv.next(t))
			if n.Event != notify.Resolved || n.RequestID != asked.RequestID || n.Resolution.Cause != tc.cause || n.Title != tc.title {
				t.Errorf("webhook: %s, cause %q, title %q; want cause %q, title %q", n.Event, n.Resolution.Cause, n.Title, tc.cause, tc.title)
			}
			var p struct{ Type, RequestID, Title string }
			if err := json.Unmarshal(push.Next(t, testenv.Patience).Plaintext, &p); err != nil {
				t.Fatal(err)
			}
			if p.Type != "resolved" || p.RequestID != asked.RequestID || !strings.HasPrefix(p.Title, tc.title) {
				t.Errorf("web push: %+v, want the title %q", p, tc.title)
			}
		})
	}
	t.Run("OpenCode's question.rejected, which has no cause, is reported as dismissed", func(t *testing.T) {
		rcv := newReceiver(t)
		e := start(t, func(d *notify.Dispatcher) []notify.Target { return []notify.Target{webhook(rcv.URL, d)} })
		if err := e.bus.Publish("/p", "question.asked", map[string]any{"id": "que_oc", "sessionID": "ses_1", "questions": []any{}}); err != nil {
			t.Fatal(err)
		}
		rcv.next(t)
		if err := e.bus.Publish("/p", "question.rejected", map[string]any{"sessionID": "ses_1", "requestID": "que_oc"}); err != nil {
			t.Fatal(err)
		}
		if n := verified(t, rcv.next(t)); n.Resolution.Cause != "reject" || n.Title != "tandem: dismissed" {
			t.Errorf("cause %q title %q", n.Resolution.Cause, n.Title)
		}
	})
}
