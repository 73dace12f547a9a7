package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// lockedBuffer collects the server's log, written from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// scriptedProviderConfig describes an OpenAI-compatible service at the scripted server that needs a
// key (it names its key variable, which the test never sets).
func scriptedProviderConfig(llm *providertest.Server) string {
	return fmt.Sprintf(`{"provider": {"scripted": {"name": "Scripted", "env": ["SCRIPTED_API_KEY"], "options": {"baseURL": %q}, "models": {"gpt-scripted": {}}}}}`, llm.BaseURL)
}

// configured reports whether GET /config/providers lists providerID and, in /provider, whether it
// is connected and its source.
func (td *tandem) configured(tb testing.TB, providerID string) (listed bool, models []string, connected bool, source string) {
	tb.Helper()
	var cp provider.ConfigProviderList
	td.call(tb, http.MethodGet, "/config/providers", "", http.StatusOK, &cp)
	for _, p := range cp.Providers {
		if p.ID == providerID {
			listed = true
			for m := range p.Models {
				models = append(models, m)
			}
		}
	}
	var all provider.ProviderList
	td.call(tb, http.MethodGet, "/provider", "", http.StatusOK, &all)
	for _, p := range all.All {
		if p.ID == providerID {
			source = p.Source
		}
	}
	return listed, models, slices.Contains(all.Connected, providerID), source
}

func TestAStoredKeyConnectsTheProviderUntilItIsRemoved(t *testing.T) {
	llm := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"hello ", "through the stored key"}})
	var logs lockedBuffer
	td := startTandem(t, setup{config: scriptedProviderConfig(llm), log: &logs})
	const key = "sk-stored-4f1e9a7c2b"

	if listed, _, connected, _ := td.configured(t, "scripted"); listed || connected {
		t.Fatalf("before any key: listed %v, connected %v", listed, connected)
	}

	var ok bool
	td.call(t, http.MethodPut, "/auth/scripted", `{"type":"api","key":"`+key+`"}`, http.StatusOK, &ok)
	if !ok {
		t.Fatal("PUT /auth/scripted did not answer true")
	}
	listed, models, connected, source := td.configured(t, "scripted")
	if !listed || !connected || source != "api" || !slices.Equal(models, []string{"gpt-scripted"}) {
		t.Fatalf("right after the PUT: listed %v, models %v, connected %v, source %q", listed, models, connected, source)
	}

	info, err := os.Stat(filepath.Join(td.data, "auth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("auth.json has mode %o, want 600", info.Mode().Perm())
	}

	sid := td.newSession(t)
	var reply session.WithParts
	td.call(t, http.MethodPost, "/session/"+sid+"/message",
		`{"model":{"providerID":"scripted","modelID":"gpt-scripted"},"parts":[{"type":"text","text":"hi"}]}`, http.StatusOK, &reply)
	if got := textOf(reply); got != "hello through the stored key" {
		t.Fatalf("the reply through the stored key: %q (error %+v)", got, reply.Info.Error)
	}
	reqs := llm.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+key {
		t.Fatalf("the scripted server saw %d requests, Authorization %q", len(reqs), reqs[0].Header.Get("Authorization"))
	}

	_, doc := td.request(t, http.MethodGet, "/config", "")
	if strings.Contains(string(doc), key) || !strings.Contains(string(doc), `"apiKey":"sk-s…2b"`) {
		t.Errorf("GET /config does not mask the stored key: %s", doc)
	}

	td.restart(t)
	if listed, _, connected, _ := td.configured(t, "scripted"); !listed || !connected {
		t.Fatalf("after a restart the stored key is lost: listed %v, connected %v", listed, connected)
	}

	td.call(t, http.MethodDelete, "/auth/scripted", "", http.StatusOK, &ok)
	if listed, _, connected, _ := td.configured(t, "scripted"); listed || connected {
		t.Fatalf("after DELETE: listed %v, connected %v", listed, connected)
	}
	td.restart(t)
	if listed, _, _, _ := td.configured(t, "scripted"); listed {
		t.Fatal("the deleted key came back after a restart")
	}
	raw, err := os.ReadFile(filepath.Join(td.data, "auth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), key) {
		t.Errorf("auth.json still holds the deleted key: %s", raw)
	}
	td.stop(t)
	if strings.Contains(logs.String(), key) {
		t.Errorf("the key was logged:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "/auth/scripted") {
		t.Errorf("the log at debug level shows no request to /auth (is it captured?):\n%s", logs.String())
	}
}

func TestAStoredKeyReplacesTheEnvironmentsKey(t *testing.T) {
	llm := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"one"}}, providertest.Turn{Text: []string{"two"}})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	td.prompt(t, sid, "with the environment's key")
	td.call(t, http.MethodPut, "/auth/openai", `{"type":"api","key":"sk-stored"}`, http.StatusOK, nil)
	td.prompt(t, sid, "with the stored key")
	td.call(t, http.MethodDelete, "/auth/openai", "", http.StatusOK, nil)
	if _, _, connected, source := td.configured(t, "openai"); !connected || source != "env" {
		t.Fatalf("after DELETE the environment's key should be back: connected %v, source %q", connected, source)
	}
	var got []string
	for _, r := range llm.Requests() {
		got = append(got, r.Header.Get("Authorization"))
	}
	if want := []string{"Bearer sk-test", "Bearer sk-stored"}; !slices.Equal(got, want) {
		t.Fatalf("Authorization headers %q, want %q", got, want)
	}
}

func TestKeysThatCannotBeStoredAreRefused(t *testing.T) {
	td := startTandem(t, setup{})
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		says   string
	}{
		{"an OAuth credential is refused: tandem stores API keys only", http.MethodPut, "/auth/openai",
			`{"type":"oauth","refresh":"r","access":"a","expires":1}`, http.StatusBadRequest, "API keys only"},
		{"a well-known credential is refused the same way", http.MethodPut, "/auth/openai",
			`{"type":"wellknown","key":"k","token":"t"}`, http.StatusBadRequest, "API keys only"},
		{"an API key without a key is refused", http.MethodPut, "/auth/openai", `{"type":"api"}`, http.StatusBadRequest, "key: required"},
		{"a body without a type is refused", http.MethodPut, "/auth/openai", `{"key":"sk-x"}`, http.StatusBadRequest, "type"},
		{"a key with a line break is refused", http.MethodPut, "/auth/openai", `{"type":"api","key":"sk-x\nHost: evil"}`, http.StatusBadRequest, "key:"},
		{"a provider tandem does not know is refused with the ones it does", http.MethodPut, "/auth/nope",
			`{"type":"api","key":"sk-x"}`, http.StatusBadRequest, `no provider \"nope\": keys can be stored for openai, anthropic`},
		{"the demo model takes no key", http.MethodPut, "/auth/demo", `{"type":"api","key":"sk-x"}`, http.StatusBadRequest, "takes no key"},
		{"a provider ID that is no name is refused", http.MethodDelete, "/auth/a%20b", "", http.StatusBadRequest, "providerID"},
		{"a provider named login is refused like any unknown one", http.MethodPut, "/auth/login",
			`{"type":"api","key":"sk-x"}`, http.StatusBadRequest, `no provider \"login\"`},
		{"POST /auth/login is still the sign-in route", http.MethodPost, "/auth/login",
			`{"password":"wrong"}`, http.StatusUnauthorized, "wrong user name or password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := td.request(t, tt.method, tt.path, tt.body)
			if status != tt.status || !strings.Contains(string(body), tt.says) {
				t.Fatalf("%s %s = %d %s; want %d saying %s", tt.method, tt.path, status, body, tt.status, tt.says)
			}
			if strings.Contains(string(body), "sk-x") {
				t.Errorf("the refusal quotes the key: %s", body)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(td.data, "auth.json")); !os.IsNotExist(err) {
		t.Errorf("refused keys wrote auth.json: %v", err)
	}
	t.Run("a client without credentials cannot store a key", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPut, td.base+"/auth/openai", strings.NewReader(`{"type":"api","key":"sk-x"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := td.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", res.StatusCode)
		}
	})
}
