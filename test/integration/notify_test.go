package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/testenv"
)

const hookSecret = "a-long-random-shared-secret"

// hook is what a webhook receiver got, after it checked the signature the way the README shows.
type hook struct {
	Event      string          `json:"event"`
	Kind       string          `json:"kind"`
	ID         string          `json:"id"`
	RequestID  string          `json:"requestID"`
	SessionID  string          `json:"sessionID"`
	Title      string          `json:"title"`
	Message    string          `json:"message"`
	Link       string          `json:"link"`
	Request    json.RawMessage `json:"request"`
	Resolution *struct {
		Cause  string `json:"cause"`
		Answer string `json:"answer"`
	} `json:"resolution"`
	header http.Header
	body   string
	valid  bool // the signature verified and the timestamp was recent
}

// hookReceiver is a real HTTP endpoint on loopback that verifies each POST's signature and answers
// with the scripted statuses (then 200).
type hookReceiver struct {
	url  string
	got  chan hook
	mu   sync.Mutex
	plan []int
}

func newHookReceiver(t *testing.T, statuses ...int) *hookReceiver {
	t.Helper()
	r := &hookReceiver{got: make(chan hook, 32), plan: statuses}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var h hook
		_ = json.Unmarshal(body, &h)
		h.header, h.body = req.Header.Clone(), string(body)
		h.valid = verifyHook([]byte(hookSecret), req.Header, body)
		r.mu.Lock()
		status := http.StatusOK
		if len(r.plan) > 0 {
			status, r.plan = r.plan[0], r.plan[1:]
		}
		r.mu.Unlock()
		r.got <- h
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// verifyHook is the receiver's check, written from the README alone: HMAC-SHA256 of
// "<timestamp>.<body>" with the shared secret, hex, after "sha256="; a timestamp within 5 minutes.
func verifyHook(secret []byte, h http.Header, body []byte) bool {
	ts := h.Get("X-Tandem-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || math.Abs(time.Since(time.Unix(sec, 0)).Seconds()) > 300 {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(h.Get("X-Tandem-Signature")))
}

func (r *hookReceiver) next(t *testing.T, what string) hook {
	t.Helper()
	h, _ := testenv.Recv(t, r.got, what)
	if !h.valid {
		t.Fatalf("%s: the signature does not verify; headers %v body %s", what, h.header, h.body)
	}
	return h
}

func (r *hookReceiver) none(t *testing.T) {
	t.Helper()
	select {
	case h := <-r.got:
		t.Fatalf("the receiver got %s %s, want nothing", h.Event, h.body)
	default:
	}
}

// delivery is an entry of GET /notify/delivery.
type delivery struct {
	Target    string `json:"target"`
	Sink      string `json:"sink"`
	Event     string `json:"event"`
	Kind      string `json:"kind"`
	RequestID string `json:"requestID"`
	Attempt   int    `json:"attempt"`
	Status    string `json:"status"`
	Code      int    `json:"code"`
	Detail    string `json:"detail"`
}

// deliveries waits until one target's delivery log of a request has n entries and returns them
// oldest first. (The webpush target is always there too, with entries of its own.)
func (td *tandem) deliveries(t *testing.T, target, requestID string, n int) []delivery {
	t.Helper()
	var out []delivery
	testenv.Eventually(t, fmt.Sprintf("%d delivery log entries of %s for %s", n, target, requestID), func() bool {
		out = nil
		td.call(t, http.MethodGet, "/notify/delivery?target="+target+"&requestID="+requestID, "", http.StatusOK, &out)
		return len(out) >= n
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func notifyConfig(targets ...string) string {
	return `{"notify": [` + strings.Join(targets, ",") + `]}`
}

func webhookTarget(name, url string, extra string) string {
	return fmt.Sprintf(`{"type": "webhook", "name": %q, "url": %q, "secret": %q%s}`, name, url, hookSecret, extra)
}

func TestWebhookHearsAskedThenReplied(t *testing.T) {
	rcv := newHookReceiver(t)
	td := startTandem(t, setup{config: notifyConfig(webhookTarget("ops", rcv.url, ""))})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "echo notified")
	h := rcv.next(t, "the asked POST")
	if h.Event != "asked" || h.Kind != "permission" || h.RequestID != asked.ID || h.SessionID != sid ||
		h.header.Get("X-Tandem-Event") != "asked" || h.header.Get("X-Tandem-Notification") != h.ID {
		t.Fatalf("asked POST %+v, headers %v", h, h.header)
	}
	if !strings.Contains(h.Message, "echo notified") || h.Link != td.base+"/#/pending/"+asked.ID {
		t.Errorf("message %q, link %q", h.Message, h.Link)
	}
	var req permissionRequest
	if err := json.Unmarshal(h.Request, &req); err != nil || req.ID != asked.ID || len(req.Decisions) == 0 {
		t.Errorf("the POST's request is not the pending item with its decisions: %s (%v)", h.Request, err)
	}

	td.reply(t, asked.ID, "once", "")
	r := rcv.next(t, "the replied POST")
	if r.Event != "resolved" || r.RequestID != asked.ID || r.Resolution == nil || r.Resolution.Cause != "reply" || r.Resolution.Answer != "once" {
		t.Fatalf("replied POST %s", r.body)
	}
	finalTool(t, td, events, sid)

	log := td.deliveries(t, "ops", asked.ID, 2)
	for i, want := range []string{"asked", "resolved"} {
		if d := log[i]; d.Target != "ops" || d.Sink != "webhook" || d.Event != want || d.Attempt != 1 || d.Status != "delivered" || d.Code != 200 {
			t.Errorf("log entry %d: %+v, want %s delivered with 200", i, d, want)
		}
	}
}

func TestFailingWebhookIsRetried(t *testing.T) {
	rcv := newHookReceiver(t, http.StatusInternalServerError)
	td := startTandem(t, setup{config: notifyConfig(webhookTarget("flaky", rcv.url, `, "attempts": 4, "backoff": "20ms"`))})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "echo retried")
	first, second := rcv.next(t, "the first attempt"), rcv.next(t, "the retry")
	if first.ID != second.ID || first.RequestID != asked.ID {
		t.Fatalf("the retry is another notification: %s then %s", first.body, second.body)
	}
	log := td.deliveries(t, "flaky", asked.ID, 2)
	if d := log[0]; d.Attempt != 1 || d.Status != "retrying" || d.Code != 500 || !strings.Contains(d.Detail, "next attempt in 20ms") {
		t.Errorf("first attempt %+v, want retrying after a 500", d)
	}
	if d := log[1]; d.Attempt != 2 || d.Status != "delivered" || d.Code != 200 {
		t.Errorf("second attempt %+v, want delivered with 200", d)
	}
	td.reply(t, asked.ID, "reject", "")
	finalTool(t, td, events, sid)
}

func TestAnsweredWithinTheDelayNotifiesNobody(t *testing.T) {
	patient, eager := newHookReceiver(t), newHookReceiver(t)
	td := startTandem(t, setup{config: notifyConfig(
		webhookTarget("patient", patient.url, `, "delay": 3600`),
		webhookTarget("eager", eager.url, ""),
	)})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "echo quick")
	td.reply(t, asked.ID, "once", "")
	finalTool(t, td, events, sid)

	// The target without a delay heard of it both times: the notifications did go out.
	if h := eager.next(t, "the eager target's asked POST"); h.RequestID != asked.ID || h.Event != "asked" {
		t.Fatalf("eager target got %s", h.body)
	}
	if h := eager.next(t, "the eager target's resolved POST"); h.Event != "resolved" {
		t.Fatalf("eager target got %s", h.body)
	}
	var skipped []delivery
	testenv.Eventually(t, "the patient target's entry in the delivery log", func() bool {
		skipped = nil
		td.call(t, http.MethodGet, "/notify/delivery?target=patient", "", http.StatusOK, &skipped)
		return len(skipped) > 0
	})
	if len(skipped) != 1 || skipped[0].Status != "skipped" || skipped[0].RequestID != asked.ID || !strings.Contains(skipped[0].Detail, "within the delay of 1h0m0s") {
		t.Fatalf("patient target's log %+v, want one skipped entry", skipped)
	}
	patient.none(t)
}

func TestWebhookHearsTimeoutsAndCancels(t *testing.T) {
	rcv := newHookReceiver(t)
	td := startTandem(t, setup{config: `{"permission": {"timeout": 1}, "notify": [` + webhookTarget("ops", rcv.url, "") + `]}`})
	sid := td.newSession(t)
	events := td.subscribe(t)

	asked := askFor(t, td, events, sid, "echo nobody-answers")
	rcv.next(t, "the asked POST")
	if h := rcv.next(t, "the timed-out POST"); h.RequestID != asked.ID || h.Resolution == nil || h.Resolution.Cause != "timeout" || h.Resolution.Answer != "reject" {
		t.Fatalf("timeout POST %s", h.body)
	}
	events.waitFor(t, "session.idle", idle(sid))

	aborted := askFor(t, td, events, sid, "echo aborted")
	rcv.next(t, "the second asked POST")
	td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, nil)
	if h := rcv.next(t, "the cancelled POST"); h.RequestID != aborted.ID || h.Resolution == nil || h.Resolution.Cause != "cancel" {
		t.Fatalf("cancel POST %s", h.body)
	}
}

func TestNtfyTopicGetsTitlePriorityAndClickLink(t *testing.T) {
	type push struct {
		header http.Header
		body   string
		path   string
	}
	got := make(chan push, 8)
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- push{r.Header.Clone(), string(body), r.URL.Path}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"abc","event":"message","topic":"approvals"}`)
	}))
	t.Cleanup(ntfy.Close)
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)

	// Added while the server runs, as a client would: it takes effect for the next request.
	patch := fmt.Sprintf(`{"notify": [{"type": "ntfy", "url": %q, "token": "tk_secret_token_123", "priority": "urgent", "webURL": "https://tandem.example.net/"}]}`, ntfy.URL+"/approvals")
	var doc map[string]any
	td.call(t, http.MethodPatch, "/config", patch, http.StatusOK, &doc)
	if strings.Contains(fmt.Sprint(doc), "tk_secret_token_123") {
		t.Fatalf("PATCH /config answered the token in clear: %v", doc)
	}
	asked := askFor(t, td, events, sid, "git status")
	p, _ := testenv.Recv(t, got, "the ntfy publish")
	if p.path != "/approvals" || p.header.Get("Title") != "tandem: allow bash?" || p.header.Get("Priority") != "5" ||
		p.header.Get("Click") != "https://tandem.example.net/#/pending/"+asked.ID || p.header.Get("Authorization") != "Bearer tk_secret_token_123" {
		t.Fatalf("ntfy publish %s headers %v", p.path, p.header)
	}
	if !strings.HasPrefix(p.body, "git status\n") {
		t.Errorf("ntfy message %q", p.body)
	}
	td.reply(t, asked.ID, "once", "")
	finalTool(t, td, events, sid)
	log := td.deliveries(t, "ntfy-1", asked.ID, 1)
	if log[0].Target != "ntfy-1" || log[0].Sink != "ntfy" || log[0].Status != "delivered" || log[0].Code != 200 {
		t.Fatalf("log %+v", log)
	}
}

func TestBadNotifyConfigIsRefusedWithItsPlace(t *testing.T) {
	td := startTandem(t, setup{})
	for _, c := range []struct{ name, patch, want string }{
		{"a webhook without a secret", `{"notify": [{"type": "webhook", "url": "https://example.net/hook"}]}`, "notify[0] (webhook): secret is required"},
		{"an unknown type", `{"notify": [{"type": "pager", "url": "https://example.net"}]}`, `notify[0]: type must be one of webhook, ntfy, webpush, got "pager"`},
		{"an unknown kind", `{"notify": [{"type": "ntfy", "url": "https://ntfy.sh/x", "kinds": ["permision"]}]}`, `notify[0]: kinds: "permision" is not one of`},
		{"a delay that is no duration", `{"notify": [{"type": "ntfy", "url": "https://ntfy.sh/x", "delay": "soon"}]}`, `notify[0]: delay must be a number of seconds or a duration`},
	} {
		t.Run(c.name+" is refused", func(t *testing.T) {
			status, body := td.request(t, http.MethodPatch, "/config", c.patch)
			var e errorBody
			_ = json.Unmarshal(body, &e)
			msg, _ := e.Data["message"].(string)
			if status != http.StatusBadRequest || e.Name != "ConfigInvalidError" || !strings.Contains(msg, c.want) || !strings.Contains(msg, "tandem.json:1:") {
				t.Fatalf("status %d body %s, want 400 with %q at its place in tandem.json", status, body, c.want)
			}
		})
	}
}

func TestATargetHearsOnlyTheKindsItNames(t *testing.T) {
	rcv := newHookReceiver(t)
	td := startTandem(t, setup{config: notifyConfig(webhookTarget("questions", rcv.url, `, "kinds": ["question"]`))})
	sid := td.newSession(t)
	events := td.subscribe(t)

	// A permission first: were it not filtered out, its POST would come before the question's.
	asked := askFor(t, td, events, sid, "echo not-for-this-target")
	td.reply(t, asked.ID, "once", "")
	finalTool(t, td, events, sid)

	td.promptAsync(t, sid, "ask: Which database? | Postgres | SQLite")
	q := events.waitFor(t, "question.asked", ofType("question.asked", sid))
	var qp struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(q.Properties, &qp)
	h := rcv.next(t, "the question's asked POST")
	if h.Kind != "question" || h.RequestID != qp.ID || !strings.Contains(h.Message, "Which database? (Postgres / SQLite)") {
		t.Fatalf("first POST %s, want the question %s", h.body, qp.ID)
	}
	td.call(t, http.MethodPost, "/question/"+qp.ID+"/reply", `{"answers":[["SQLite"]]}`, http.StatusOK, nil)
	if h := rcv.next(t, "the question's resolved POST"); h.RequestID != qp.ID || h.Resolution == nil || h.Resolution.Answer != "answered" {
		t.Fatalf("second POST %s", h.body)
	}
	events.waitFor(t, "session.idle", idle(sid))
}
