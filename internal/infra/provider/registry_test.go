package provider_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// registryFrom loads a project configuration through the real config loader and builds a
// registry from it.
func registryFrom(t *testing.T, projectJSON string, env map[string]string) *provider.Registry {
	t.Helper()
	dir := t.TempDir()
	if projectJSON != "" {
		if err := os.WriteFile(filepath.Join(dir, "tandem.json"), []byte(projectJSON), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	getenv := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return filepath.Join(dir, "user-config")
		}
		return env[k]
	}
	// The project is the user's own: trusted, so its providers apply.
	if _, err := config.Trust(getenv, dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.NewLoader(dir, getenv).Load()
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	r, err := provider.NewRegistry(cfg, getenv)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

var registryCases = []struct {
	name          string
	config        string
	env           map[string]string
	wantDefault   string
	wantDemo      bool
	wantConnected []string
}{
	{name: "nothing configured falls back to the demo model", wantDefault: "demo/demo", wantDemo: true, wantConnected: []string{"demo"}},
	{name: "an OpenAI key from the environment makes gpt-4.1 the default",
		env: map[string]string{"OPENAI_API_KEY": "sk-x"}, wantDefault: "openai/gpt-4.1", wantConnected: []string{"openai", "demo"}},
	{name: "an Anthropic key in the file makes claude-sonnet-4-5 the default",
		config: `{"provider": {"anthropic": {"options": {"apiKey": "ant-x"}}}}`, wantDefault: "anthropic/claude-sonnet-4-5", wantConnected: []string{"anthropic", "demo"}},
	{name: "the configured model wins over the first provider",
		config: `{"model": "anthropic/claude-haiku-4-5"}`, env: map[string]string{"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "ant-x"},
		wantDefault: "anthropic/claude-haiku-4-5", wantConnected: []string{"openai", "anthropic", "demo"}},
	{name: "a configured demo model stays the default next to a key",
		config: `{"model": "demo/demo"}`, env: map[string]string{"OPENAI_API_KEY": "sk-x"},
		wantDefault: "demo/demo", wantConnected: []string{"openai", "demo"}},
	{name: "an Ollama endpoint without a key is connected and lists its models",
		config:      `{"provider": {"ollama": {"name": "Ollama", "options": {"baseURL": "http://127.0.0.1:11434/v1"}, "models": {"qwen3": {}, "llama3.2": {"name": "Llama 3.2", "limit": {"context": 131072, "output": 8192}}}}}}`,
		wantDefault: "ollama/llama3.2", wantConnected: []string{"ollama", "demo"}},
	{name: "an OpenAI-compatible service that names its key variable waits for a key",
		config:      `{"provider": {"router": {"env": ["ROUTER_KEY"], "options": {"baseURL": "https://router.example/v1"}, "models": {"m1": {}}}}}`,
		wantDefault: "demo/demo", wantDemo: true, wantConnected: []string{"demo"}},
	{name: "an OpenAI-compatible service is connected by the key variable it names",
		config: `{"provider": {"router": {"env": ["ROUTER_KEY"], "options": {"baseURL": "https://router.example/v1"}, "models": {"m1": {}}}}}`,
		env:    map[string]string{"ROUTER_KEY": "rk-1"}, wantDefault: "router/m1", wantConnected: []string{"router", "demo"}},
	{name: "an adapter tandem cannot speak is listed but not connected",
		config:      `{"provider": {"gemini": {"npm": "@ai-sdk/google", "options": {"apiKey": "g"}, "models": {"gemini-2.5-pro": {}}}}}`,
		wantDefault: "demo/demo", wantDemo: true, wantConnected: []string{"demo"}},
	{name: "TANDEM_MODEL picks the default",
		env: map[string]string{"OPENAI_API_KEY": "sk-x", "TANDEM_MODEL": "openai/o4-mini"}, wantDefault: "openai/o4-mini", wantConnected: []string{"openai", "demo"}},
}

func TestRegistryDefaults(t *testing.T) {
	for _, tt := range registryCases {
		t.Run(tt.name, func(t *testing.T) {
			r := registryFrom(t, tt.config, tt.env)
			p, m := r.Default()
			if got := p + "/" + m; got != tt.wantDefault {
				t.Errorf("Default() = %s, want %s", got, tt.wantDefault)
			}
			if r.Demo() != tt.wantDemo {
				t.Errorf("Demo() = %v, want %v", r.Demo(), tt.wantDemo)
			}
			if diff := cmp.Diff(tt.wantConnected, r.List().Connected); diff != "" {
				t.Errorf("connected (-want +got):\n%s", diff)
			}
			if _, ok := r.Get(p); !ok {
				t.Errorf("Get(%q) found nothing for the default provider", p)
			}
		})
	}
}

func TestRegistryListingsMatchOpenCodeSchemas(t *testing.T) {
	schemas := testenv.LoadSchemas(t, "testdata/opencode-schemas.json")
	for _, tt := range registryCases {
		t.Run(tt.name, func(t *testing.T) {
			r := registryFrom(t, tt.config, tt.env)
			for route, body := range map[string]any{
				"GET /provider":         r.List(),
				"GET /config/providers": r.ConfigProviders(),
				"GET /provider/auth":    r.AuthMethods(),
			} {
				for _, p := range schemas.Problems(t, route, body) {
					t.Errorf("%s: %s", route, p)
				}
			}
			cp := r.ConfigProviders()
			p, m := r.Default()
			if cp.Default[p] != m {
				t.Errorf("config/providers default[%s] = %q, want %q", p, cp.Default[p], m)
			}
			if len(cp.Providers) == 0 || cp.Providers[0].ID != p {
				t.Errorf("config/providers lists %d providers, the first is not the default's provider %s", len(cp.Providers), p)
			}
			found := false
			for _, prov := range cp.Providers {
				if prov.ID == p {
					_, found = prov.Models[m]
				}
			}
			if !found {
				t.Errorf("the default model %s/%s is not among the listed providers' models", p, m)
			}
		})
	}
}

func TestErrorPayloadsMatchOpenCodeSchemas(t *testing.T) {
	schemas := testenv.LoadSchemas(t, "testdata/opencode-schemas.json")
	for _, e := range []*provider.Error{
		{Kind: provider.ErrAuth, Provider: "openai", Message: "bad key", Status: 401},
		{Kind: provider.ErrRateLimit, Provider: "openai", Message: "slow down", Status: 429, RetryAfter: time.Second,
			ResponseBody: `{"error":{}}`, ResponseHeaders: map[string]string{"retry-after": "1"}},
		{Kind: provider.ErrServer, Provider: "anthropic", Message: "overloaded"},
		{Kind: provider.ErrNetwork, Provider: "ollama", Message: "connection refused"},
		{Kind: provider.ErrTimeout, Provider: "ollama", Message: "silent"},
		{Kind: provider.ErrContextOverflow, Provider: "anthropic", Message: "prompt is too long", ResponseBody: "{}"},
		{Kind: provider.ErrBadRequest, Provider: "openai", Message: "bad", Status: 400},
		{Kind: provider.ErrOther, Provider: "openai", Message: "strange"},
	} {
		t.Run(e.Kind.String(), func(t *testing.T) {
			for _, p := range schemas.Problems(t, "AssistantMessage.error", e.Payload()) {
				t.Error(p)
			}
		})
	}
}

func TestRegistryModels(t *testing.T) {
	r := registryFrom(t, `{"provider": {"openai": {"models": {"gpt-4.1": {"name": "Custom name"}, "ft:gpt-4o:acme": {"cost": {"input": 3.75, "output": 15}, "limit": {"context": 128000, "output": 16384}}}}}}`,
		map[string]string{"OPENAI_API_KEY": "sk-x"})
	m, ok := r.Model("openai", "gpt-4.1")
	if !ok || m.Name != "Custom name" || m.Context != 1047576 || m.Output != 32768 {
		t.Errorf("gpt-4.1 = %+v, %v: config overrides the name and keeps the built-in limits", m, ok)
	}
	cost := m.CostOf(provider.Usage{Input: 1_000_000, Output: 500_000, Reasoning: 500_000, CacheRead: 2_000_000})
	if want := 2.0 + 8.0 + 1.0; math.Abs(cost-want) > 1e-9 {
		t.Errorf("cost = %v, want %v", cost, want)
	}
	ft, ok := r.Model("openai", "ft:gpt-4o:acme")
	if !ok || ft.Cost.Input != 3.75 || ft.Context != 128000 {
		t.Errorf("a configured model is added: %+v %v", ft, ok)
	}
	if _, ok := r.Model("openai", "gpt-nope"); ok {
		t.Errorf("an unknown model must not be found")
	}
	if d, ok := r.Model("demo", "demo"); !ok || d.CostOf(provider.Usage{Input: 100, Output: 100}) != 0 {
		t.Errorf("the demo model is free: %+v %v", d, ok)
	}
}

func TestAModelsConfigChoosesBetweenApplyPatchAndEdit(t *testing.T) {
	r := registryFrom(t, `{"provider": {"openai": {"models": {"gpt-5": {"patch": false}, "house-model": {"patch": true}}}}}`,
		map[string]string{"OPENAI_API_KEY": "sk-x"})
	for _, tt := range []struct{ provider, model, want string }{
		{"openai", "gpt-5", provider.EditToolsEdit},
		{"openai", "house-model", provider.EditToolsPatch},
		{"openai", "gpt-5.1-codex", provider.EditToolsPatch},
		{"openai", "gpt-4.1", provider.EditToolsEdit},
		{"openai", "gpt-oss-20b", provider.EditToolsEdit},
		{"anthropic", "claude-sonnet-4-5", provider.EditToolsEdit},
		{"demo", "demo", provider.EditToolsAll},
	} {
		if got := r.EditTools(tt.provider, tt.model); got != tt.want {
			t.Errorf("EditTools(%s, %s) = %q, want %q", tt.provider, tt.model, got, tt.want)
		}
	}
}

func TestRegistryProvidersThatCannotRunSayWhy(t *testing.T) {
	r := registryFrom(t, `{"provider": {"gemini": {"npm": "@ai-sdk/google", "options": {"apiKey": "g"}}}}`, nil)
	tests := []struct {
		id       string
		kind     provider.ErrorKind
		contains string
	}{
		{"openai", provider.ErrAuth, "OPENAI_API_KEY"},
		{"anthropic", provider.ErrAuth, "ANTHROPIC_API_KEY"},
		{"gemini", provider.ErrBadRequest, `"@ai-sdk/google" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			p, ok := r.Get(tt.id)
			if !ok {
				t.Fatalf("Get(%q) found nothing", tt.id)
			}
			err := p.Stream(context.Background(), simpleRequest, func(provider.Event) error { return nil })
			var perr *provider.Error
			if !errors.As(err, &perr) || perr.Kind != tt.kind || !strings.Contains(perr.Message, tt.contains) {
				t.Errorf("err = %v, want %v mentioning %q", err, tt.kind, tt.contains)
			}
		})
	}
	if _, ok := r.Get("nope"); ok {
		t.Errorf("Get of an unknown provider must fail")
	}
}

func TestNewRegistryRejectsBadProviders(t *testing.T) {
	for name, cfg := range map[string]config.Config{
		"a provider may not take the demo's ID": {Provider: map[string]config.ProviderConfig{"demo": {}}},
		"a baseURL must be http or https":       {Provider: map[string]config.ProviderConfig{"x": {Options: config.ProviderOptions{BaseURL: "ftp://host/v1"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := provider.NewRegistry(cfg, nil); err == nil {
				t.Errorf("NewRegistry accepted %+v", cfg)
			}
		})
	}
}

func TestRegistryProviderTalksToTheConfiguredEndpoint(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"hi"}}, providertest.Turn{Hang: true})
	r := registryFrom(t, `{"provider": {"local": {"options": {"baseURL": "`+s.BaseURL+`", "headers": {"X-Team": "core"}, "timeout": 200},
		"models": {"small": {"id": "qwen3:0.6b"}}}}}`, nil)
	p, ok := r.Get("local")
	if !ok {
		t.Fatal("no provider local")
	}
	req := simpleRequest
	req.Model = "small"
	req.MaxTokens = 256
	if err := p.Stream(context.Background(), req, func(provider.Event) error { return nil }); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	got := s.Requests()[0]
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
	}
	if err := got.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "qwen3:0.6b" || body.MaxTokens != 256 {
		t.Errorf("sent model %q max_tokens %d, want the configured API ID and the legacy max_tokens field", body.Model, body.MaxTokens)
	}
	if got.Header.Get("X-Team") != "core" || got.Header.Get("Authorization") != "" {
		t.Errorf("headers X-Team=%q Authorization=%q, want the configured header and no key", got.Header.Get("X-Team"), got.Header.Get("Authorization"))
	}

	// The second turn hangs: options.timeout (200 ms) must end it.
	err := p.Stream(context.Background(), req, func(provider.Event) error { return nil })
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Kind != provider.ErrTimeout || !strings.Contains(perr.Message, "provider.local.options.timeout") {
		t.Errorf("err = %v, want ErrTimeout naming the setting", err)
	}
}
