package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

func TestPatchingTheDefaultModel(t *testing.T) {
	td := startTandem(t, setup{config: `{"provider": {"local": {"options": {"baseURL": "http://127.0.0.1:1/v1"}, "models": {"qwen": {}}}}}`})
	file := filepath.Join(td.project, "tandem.json")
	tests := []struct {
		name   string
		patch  string
		status int
		says   []string
	}{
		{"an unknown provider is refused and named", `{"model": "nope/gpt-4o"}`, http.StatusBadRequest,
			[]string{"ConfigInvalidError", `no provider \"nope\"`, "configure provider.nope"}},
		{"a model the provider does not list is refused with the ones it does", `{"model": "local/llama"}`, http.StatusBadRequest,
			[]string{`no model \"llama\"`, "it lists qwen", "provider.local.models"}},
		{"a small model is checked the same way", `{"small_model": "openai/gpt-9000"}`, http.StatusBadRequest,
			[]string{"small_model", `no model \"gpt-9000\"`}},
		{"a model that is not provider/model is refused", `{"model": "gpt-4o"}`, http.StatusBadRequest,
			[]string{`provider/model`}},
		{"a configured model is accepted", `{"model": "local/qwen"}`, http.StatusOK, nil},
		{"the demo model is accepted", `{"model": "demo/demo"}`, http.StatusOK, nil},
		{"a built-in provider pointed at another server accepts that server's models", `{"provider": {"openai": {"options": {"baseURL": "http://127.0.0.1:1/v1"}}}, "model": "openai/qwen2.5-coder:7b"}`, http.StatusOK, nil},
		{"a built-in provider at its own URL still refuses a model it does not list", `{"provider": {"openai": {"options": {"baseURL": "https://api.openai.com/v1"}}}, "model": "openai/qwen2.5-coder:7b"}`, http.StatusBadRequest,
			[]string{`no model \"qwen2.5-coder:7b\"`}},
		{"a model added in the same patch is accepted", `{"provider": {"local": {"models": {"llama": {}}}}, "model": "local/llama"}`, http.StatusOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			status, body := td.request(t, http.MethodPatch, "/config", tt.patch)
			if status != tt.status {
				t.Fatalf("PATCH /config %s = %d %s, want %d", tt.patch, status, body, tt.status)
			}
			for _, s := range tt.says {
				if !strings.Contains(string(body), s) {
					t.Errorf("the answer %s does not say %s", body, s)
				}
			}
			after, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if changed := string(before) != string(after); changed != (status == http.StatusOK) {
				t.Errorf("file changed: %v, answer %d:\n%s", changed, status, after)
			}
		})
	}
	var list struct{ Default map[string]string }
	td.call(t, http.MethodGet, "/config/providers", "", http.StatusOK, &list)
	if list.Default["local"] != "llama" {
		t.Errorf("the accepted default is not the provider's default: %v", list.Default)
	}
}

// TestTheOllamaRecipe follows the README's container recipe, where the built-in openai provider
// points at Ollama (OPENAI_BASE_URL), against a loopback server speaking Ollama's OpenAI-compatible
// API: the model Ollama has pulled, which tandem's table of OpenAI's models does not list, is the
// one asked for, whether it comes from TANDEM_MODEL or from PATCH /config.
func TestTheOllamaRecipe(t *testing.T) {
	ollamaEnv := func(ollama *providertest.Server) map[string]string {
		return map[string]string{"OPENAI_BASE_URL": ollama.BaseURL, "OPENAI_API_KEY": "ollama"}
	}
	askedFor := func(t *testing.T, ollama *providertest.Server) []string {
		t.Helper()
		var models []string
		for _, r := range ollama.Requests() {
			var body struct{ Model string }
			if err := r.Decode(&body); err != nil {
				t.Fatal(err)
			}
			models = append(models, body.Model)
		}
		return models
	}

	t.Run("TANDEM_MODEL names the model Ollama is asked for", func(t *testing.T) {
		ollama := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"hi from qwen"}})
		env := ollamaEnv(ollama)
		env["TANDEM_MODEL"] = "openai/qwen2.5-coder:7b"
		td := startTandem(t, setup{env: env})
		td.prompt(t, td.newSession(t), "hello")
		if got := askedFor(t, ollama); len(got) != 1 || got[0] != "qwen2.5-coder:7b" {
			t.Errorf("Ollama was asked for %q, want [qwen2.5-coder:7b]", got)
		}
	})

	t.Run("PATCH /config makes a model Ollama has the default", func(t *testing.T) {
		ollama := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"hi from llama"}})
		td := startTandem(t, setup{env: ollamaEnv(ollama)})
		td.call(t, http.MethodPatch, "/config", `{"model": "openai/llama3.2"}`, http.StatusOK, nil)
		var list struct{ Default map[string]string }
		td.call(t, http.MethodGet, "/config/providers", "", http.StatusOK, &list)
		if list.Default["openai"] != "llama3.2" {
			t.Errorf("after the patch the openai default is %q, want llama3.2", list.Default["openai"])
		}
		td.prompt(t, td.newSession(t), "hello")
		if got := askedFor(t, ollama); len(got) != 1 || got[0] != "llama3.2" {
			t.Errorf("Ollama was asked for %q, want [llama3.2]", got)
		}
	})
}
