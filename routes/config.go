package routes

import (
	"encoding/json"
	"net/http"

	"tandem/config"
	"tandem/provider"
)

// Configuration serves the config file and the providers it configures.
type Configuration struct {
	// Load reads the merged configuration seen from a directory.
	Load func(dir string) (config.Config, error)
	// Patch merges a patch into a directory's project file and applies the result.
	Patch func(dir string, patch []byte) (config.Config, error)
	// Providers is the current provider registry (it is rebuilt when the config changes).
	Providers func() *provider.Registry
}

// Ops declares the config and provider routes.
func (cf *Configuration) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/config", "config.get", "Get configuration", func(c *Call, _ *struct{}) (json.RawMessage, error) {
			cfg, err := cf.Load(c.Dir)
			if err != nil {
				return nil, err
			}
			return document(cfg), nil
		}).doc("The merged configuration (user file, project file, environment), unknown keys included; API keys are masked."),
		op(http.MethodPatch, "/config", "config.update", "Update configuration", func(c *Call, in *json.RawMessage) (json.RawMessage, error) {
			cfg, err := cf.Patch(c.Dir, *in)
			if err != nil {
				return nil, err
			}
			return document(cfg), nil
		}).doc("A JSON merge patch (null removes a key) written to the project's tandem.json, comments kept; "+
			"validated first, so a bad patch changes nothing. Providers and permission rules reload.", 415),
		op(http.MethodGet, "/config/providers", "config.providers", "List config providers", func(c *Call, _ *struct{}) (provider.ConfigProviderList, error) {
			return cf.Providers().ConfigProviders(), nil
		}),
		op(http.MethodGet, "/provider", "provider.list", "List providers", func(c *Call, _ *struct{}) (provider.ProviderList, error) {
			return cf.Providers().List(), nil
		}).doc("With nothing configured, the offline demo model is the default and the only connected provider."),
		op(http.MethodGet, "/provider/auth", "provider.auth", "Get provider auth methods", func(c *Call, _ *struct{}) (map[string][]provider.AuthMethod, error) {
			return cf.Providers().AuthMethods(), nil
		}),
	}
}

// document is the merged configuration as clients see it: API keys are masked, because the
// document may carry keys from the environment that no client wrote, and the web UI shows it.
func document(cfg config.Config) json.RawMessage {
	if len(cfg.Document) == 0 {
		return json.RawMessage("{}")
	}
	var doc map[string]any
	if err := json.Unmarshal(cfg.Document, &doc); err != nil {
		return cfg.Document
	}
	if providers, ok := doc["provider"].(map[string]any); ok {
		for _, p := range providers {
			entry, _ := p.(map[string]any)
			if opts, ok := entry["options"].(map[string]any); ok {
				if key, ok := opts["apiKey"].(string); ok && key != "" {
					opts["apiKey"] = maskSecret(key)
				}
			}
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return cfg.Document
	}
	return out
}

// maskSecret keeps a secret recognisable without revealing it.
func maskSecret(s string) string {
	if len(s) <= 8 {
		return "********"
	}
	return s[:4] + "…" + s[len(s)-2:]
}
