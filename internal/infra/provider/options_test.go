package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// sentBody runs one call through a registry's provider and returns the body the server received.
func sentBody(t *testing.T, r *provider.Registry, providerID string, req provider.Request, requests func() []providertest.Request) (map[string]any, string, error) {
	t.Helper()
	p, ok := r.Get(providerID)
	if !ok {
		t.Fatalf("no provider %s", providerID)
	}
	err := p.Stream(context.Background(), req, func(provider.Event) error { return nil })
	reqs := requests()
	if len(reqs) == 0 {
		return nil, "", err
	}
	var body map[string]any
	if err := reqs[len(reqs)-1].Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body, reqs[len(reqs)-1].Path, err
}

func TestVariantsAndOptionsReachTheWire(t *testing.T) {
	t.Run("an Anthropic model's built-in variant asks for extended thinking with its budget", func(t *testing.T) {
		s := providertest.NewAnthropic(t, providertest.Turn{Text: []string{"ok"}}, providertest.Turn{Text: []string{"ok"}})
		r := registryFrom(t, fmt.Sprintf(`{"provider":{"anthropic":{"options":{"apiKey":"k","baseURL":%q}}}}`, s.BaseURL), nil)
		body, _, err := sentBody(t, r, "anthropic", provider.Request{Model: "claude-sonnet-4-5", Variant: "high", Messages: simpleRequest.Messages}, s.Requests)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"type": "enabled", "budget_tokens": 16000.0}, body["thinking"]); diff != "" {
			t.Errorf("thinking (-want +got):\n%s", diff)
		}
		body, _, err = sentBody(t, r, "anthropic", provider.Request{Model: "claude-sonnet-4-5", Messages: simpleRequest.Messages}, s.Requests)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := body["thinking"]; ok {
			t.Errorf("a call without a variant asked for thinking: %v", body["thinking"])
		}
	})
	t.Run("configured options and variants replace the built-in ones", func(t *testing.T) {
		s := providertest.NewAnthropic(t, providertest.Turn{Text: []string{"ok"}}, providertest.Turn{Text: []string{"ok"}})
		r := registryFrom(t, fmt.Sprintf(`{"provider":{"anthropic":{"options":{"apiKey":"k","baseURL":%q},"models":{"claude-haiku-4-5":{
			"options":{"thinking":{"type":"enabled","budgetTokens":2048},"parallelToolCalls":false},
			"variants":{"max":{"disabled":true},"off":{"thinking":{"type":"disabled"}}}}}}}}`, s.BaseURL), nil)
		req := provider.Request{Model: "claude-haiku-4-5", Messages: simpleRequest.Messages, Tools: conversation.Tools}
		body, _, err := sentBody(t, r, "anthropic", req, s.Requests)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"type": "enabled", "budget_tokens": 2048.0}, body["thinking"]); diff != "" {
			t.Errorf("thinking (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"type": "auto", "disable_parallel_tool_use": true}, body["tool_choice"]); diff != "" {
			t.Errorf("tool_choice (-want +got):\n%s", diff)
		}
		req.Variant, req.Tools = "off", nil
		if body, _, err = sentBody(t, r, "anthropic", req, s.Requests); err != nil {
			t.Fatal(err)
		}
		if _, ok := body["thinking"]; ok {
			t.Errorf("the variant that switches thinking off asked for it: %v", body["thinking"])
		}
		if _, ok := body["tool_choice"]; ok {
			t.Errorf("a call without tools sent a tool_choice, which the API refuses: %v", body["tool_choice"])
		}
		m, _ := r.Model("anthropic", "claude-haiku-4-5")
		if _, ok := m.Variants["max"]; ok {
			t.Error("a disabled variant is still listed")
		}
	})
	t.Run("a variant the model does not have is refused with the ones it has", func(t *testing.T) {
		s := providertest.NewAnthropic(t)
		r := registryFrom(t, fmt.Sprintf(`{"provider":{"anthropic":{"options":{"apiKey":"k","baseURL":%q}}}}`, s.BaseURL), nil)
		_, _, err := sentBody(t, r, "anthropic", provider.Request{Model: "claude-sonnet-4-5", Variant: "turbo", Messages: simpleRequest.Messages}, s.Requests)
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != provider.ErrBadRequest || !strings.Contains(pe.Message, "high, max") {
			t.Fatalf("error %v, want a bad request naming the variants", err)
		}
		if n := len(s.Requests()); n != 0 {
			t.Errorf("the server saw %d requests", n)
		}
	})
	t.Run("an OpenAI model configured for the Responses API is called there, with its reasoning effort", func(t *testing.T) {
		replay := providertest.NewReplay(t, providertest.LoadRecording(t, "testdata/recordings/responses/text"))
		r := registryFrom(t, fmt.Sprintf(`{"provider":{"openai":{"options":{"apiKey":"k","baseURL":%q},"models":{"o4-mini":{
			"options":{"api":"responses","reasoningSummary":"auto"}}}}}}`, replay.BaseURL), nil)
		body, path, err := sentBody(t, r, "openai", provider.Request{Model: "o4-mini", Variant: "low", Messages: simpleRequest.Messages}, replay.Requests)
		if err != nil {
			t.Fatal(err)
		}
		if path != "/v1/responses" {
			t.Errorf("path %s, want /v1/responses", path)
		}
		if diff := cmp.Diff(map[string]any{"effort": "low", "summary": "auto"}, body["reasoning"]); diff != "" {
			t.Errorf("reasoning (-want +got):\n%s", diff)
		}
	})
	t.Run("OpenAI's reasoning models take a reasoning effort on Chat Completions", func(t *testing.T) {
		s := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"ok"}})
		r := registryFrom(t, fmt.Sprintf(`{"provider":{"openai":{"options":{"apiKey":"k","baseURL":%q}}}}`, s.BaseURL), nil)
		body, path, err := sentBody(t, r, "openai", provider.Request{Model: "o4-mini", Variant: "high", Messages: simpleRequest.Messages}, s.Requests)
		if err != nil {
			t.Fatal(err)
		}
		if path != "/v1/chat/completions" || body["reasoning_effort"] != "high" {
			t.Errorf("path %s reasoning_effort %v", path, body["reasoning_effort"])
		}
	})
}

func TestAConfiguredReasoningModelGetsTheVariantsOfItsProtocol(t *testing.T) {
	r := registryFrom(t, `{"provider":{
		"lab":{"options":{"baseURL":"http://127.0.0.1:8000/v1"},"models":{"r1":{"reasoning":true},"plain":{}}},
		"proxy":{"npm":"@ai-sdk/anthropic","options":{"apiKey":"k","baseURL":"http://127.0.0.1:8001"},"models":{"claude-x":{"reasoning":true}}}}}`, nil)
	cases := []struct{ provider, model, want string }{
		{"lab", "r1", "high, low, medium"},
		{"lab", "plain", ""},
		{"proxy", "claude-x", "high, max"},
	}
	for _, c := range cases {
		m, ok := r.Model(c.provider, c.model)
		if !ok {
			t.Fatalf("no model %s/%s", c.provider, c.model)
		}
		if got := strings.Join(slices.Sorted(maps.Keys(m.Variants)), ", "); got != c.want {
			t.Errorf("%s/%s has variants %q, want %q", c.provider, c.model, got, c.want)
		}
	}
}

func TestCapabilitiesSayWhatIsSent(t *testing.T) {
	r := registryFrom(t, `{"provider":{"anthropic":{"options":{"apiKey":"k"}},"openai":{"options":{"apiKey":"k"}},
		"ollama":{"options":{"baseURL":"http://127.0.0.1:11434/v1"},"models":{"llava":{"attachment":true},"llama3":{}}}}}`, nil)
	cases := []struct {
		name, provider, model, mime string
		says                        string // "" when the model takes it
	}{
		{"an Anthropic model takes images", "anthropic", "claude-sonnet-4-5", "image/webp", ""},
		{"an Anthropic model takes PDFs", "anthropic", "claude-sonnet-4-5", "application/pdf", ""},
		{"an OpenAI model takes images", "openai", "gpt-4.1", "image/png", ""},
		{"an OpenAI model is not sent PDFs", "openai", "gpt-4.1", "application/pdf", "PDFs to Anthropic's models only"},
		{"a configured model marked attachment takes images", "ollama", "llava", "image/jpeg", ""},
		{"a configured model without attachment takes none", "ollama", "llama3", "image/jpeg", "does not take image attachments"},
		{"a model tandem does not know is sent none", "ollama", "qwen", "image/jpeg", "not described in the configuration"},
		{"the demo model takes no images", "demo", "demo", "image/png", "does not take image"},
		{"other media types are not sent as content", "anthropic", "claude-sonnet-4-5", "image/bmp", "not image/bmp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := r.Takes(c.provider, c.model, c.mime)
			switch {
			case c.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
		})
	}
	list := r.List()
	for _, p := range list.All {
		for _, m := range p.Models {
			if m.Capabilities.Attachment != (m.Capabilities.Input.Image || m.Capabilities.Input.PDF) {
				t.Errorf("%s/%s: attachment %v but input %+v", p.ID, m.ID, m.Capabilities.Attachment, m.Capabilities.Input)
			}
			if err := r.Takes(p.ID, m.ID, "image/png"); (err == nil) != m.Capabilities.Input.Image {
				t.Errorf("%s/%s: the card says image %v, Takes says %v", p.ID, m.ID, m.Capabilities.Input.Image, err)
			}
		}
	}
}

func TestModelOptionsAreValidated(t *testing.T) {
	cases := []struct{ name, model, says string }{
		{"an unknown API is refused", `{"options":{"api":"completions"}}`, `api must be "chat" or "responses"`},
		{"an unknown reasoning effort is refused", `{"options":{"reasoningEffort":"extreme"}}`, "reasoningEffort must be one of"},
		{"a thinking budget under Anthropic's minimum is refused", `{"variants":{"low":{"thinking":{"type":"enabled","budgetTokens":500}}}}`, "at least 1024"},
		{"a thinking type other than enabled or disabled is refused", `{"options":{"thinking":{"type":"adaptive"}}}`, `thinking.type must be`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var models map[string]config.ModelConfig
			if err := json.Unmarshal([]byte(`{"m":`+c.model+`}`), &models); err != nil {
				t.Fatal(err)
			}
			cfg := config.Config{Provider: map[string]config.ProviderConfig{"anthropic": {Models: models}}}
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
		})
	}
}
