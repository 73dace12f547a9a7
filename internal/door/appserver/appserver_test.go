package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/permission"
)

// request is a bash approval offering the decisions keys, each with its patterns.
func bashRequest(keys ...string) permission.Request {
	r := permission.Request{ID: "per_1", Permission: "bash", Patterns: []string{"git push origin main"}}
	for _, k := range keys {
		c := permission.Choice{Key: k, Patterns: []string{"git push origin main"}}
		if k == permission.KeyAlways || k == permission.KeySession {
			c.Patterns = []string{"git push *"}
		}
		r.Decisions = append(r.Decisions, c)
	}
	return r
}

func TestCodexDecisionsAreTandemsDecisionKeys(t *testing.T) {
	all := bashRequest(permission.KeyOnce, permission.KeySession, permission.KeyAlways, permission.KeyReject, permission.KeyDenyAlways)
	got, _ := json.Marshal(availableDecisions(all))
	want := `["accept","acceptForSession",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["git","push"]}},"decline","cancel"]`
	if string(got) != want {
		t.Errorf("availableDecisions:\n got %s\nwant %s", got, want)
	}
	for _, tc := range []struct {
		name      string
		req       permission.Request
		decision  string
		reply     permission.Reply
		interrupt bool
		err       string
	}{
		{"accept is once", all, `"accept"`, permission.KeyOnce, false, ""},
		{"acceptForSession is session", all, `"acceptForSession"`, permission.KeySession, false, ""},
		{"acceptForSession without session is always", bashRequest(permission.KeyOnce, permission.KeyAlways), `"acceptForSession"`, permission.KeyAlways, false, ""},
		{"the amendment is always", all, `{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["git"]}}`, permission.KeyAlways, false, ""},
		{"decline is reject", all, `"decline"`, permission.Reject, false, ""},
		{"cancel rejects and interrupts", all, `"cancel"`, permission.Reject, true, ""},
		{"a decision not offered is refused", bashRequest(permission.KeyOnce, permission.KeyReject), `"acceptForSession"`, "", false, "not offered"},
		{"a network amendment is not tandem's", all, `{"applyNetworkPolicyAmendment":{"network_policy_amendment":{"host":"x","action":"allow"}}}`, "", false, "not one tandem offers"},
		{"garbage is refused", all, `42`, "", false, "not one of Codex's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply, interrupt, err := replyOf(tc.req, json.RawMessage(tc.decision))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || reply != tc.reply || interrupt != tc.interrupt {
				t.Errorf("got %q %v %v, want %q %v", reply, interrupt, err, tc.reply, tc.interrupt)
			}
		})
	}
}

func TestAThreadIDIsAUUIDThatStaysTheSame(t *testing.T) {
	s := &server{known: map[string]string{}}
	a, b := s.threadID("ses_1"), s.threadID("ses_2")
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a) {
		t.Errorf("%q is not a version 8 UUID", a)
	}
	if a == b || a != (&server{known: map[string]string{}}).threadID("ses_1") {
		t.Errorf("thread IDs %q %q: each session has its own, the same on every connection", a, b)
	}
	if s.known[a] != "ses_1" {
		t.Errorf("the connection does not remember %q", a)
	}
}

func TestListenAddresses(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"ws://127.0.0.1:4500", "127.0.0.1:4500", ""},
		{"ws://[::1]:4500", "[::1]:4500", ""},
		{"ws://localhost:0", "localhost:0", ""},
		{"http://127.0.0.1:4500", "", "expected ws://HOST:PORT"},
		{"ws://127.0.0.1", "", "expected ws://HOST:PORT"},
		{"ws://example.com:4500", "", "IP address or localhost"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseListen(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
}

func TestStdioReadsOneMessagePerLineWhateverItsLength(t *testing.T) {
	long := `{"method":"x","params":{"text":"` + strings.Repeat("a", 300<<10) + `"}}`
	in := strings.NewReader("\n" + `{"id":1}` + "\r\n\n" + long + "\n" + `{"id":2}`)
	s := NewStdio(in, io.Discard)
	var got []int
	for {
		b, err := s.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, len(b))
	}
	if len(got) != 3 || got[0] != len(`{"id":1}`) || got[1] != len(long) || got[2] != len(`{"id":2}`) {
		t.Errorf("message lengths %v", got)
	}
}
