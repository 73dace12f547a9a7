package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
