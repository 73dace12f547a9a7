package routes

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// Configuration serves the config file and the providers it configures.
type Configuration struct {
	// Load reads the merged configuration seen from a directory.
	Load func(dir string) (config.Config, error)
	// Patch merges a patch into a directory's project file and applies the result.
	Patch func(dir string, patch []byte) (config.Config, error)
	// PatchUser merges a patch into the user's own file (seen from a directory) and applies the result.
	PatchUser func(dir string, patch []byte) (config.Config, error)
	// Providers is the current provider registry (it is rebuilt when the config changes).
	Providers func() *provider.Registry
	// SetKey stores a provider's API key; its models are listed from then on.
	SetKey func(providerID, key string, metadata map[string]string) error
	// RemoveKey deletes a provider's stored API key.
	RemoveKey func(providerID string) error
	// Sandbox confines the agent's commands; GET /config reports what the kernel enforces of it.
	Sandbox *sandbox.Policy
}

// AuthPath names a provider in PUT and DELETE /auth/{providerID}.
type AuthPath struct {
	ProviderID string `path:"providerID" json:"-"`
}

// AuthSet is PUT /auth/{providerID}: OpenCode's Auth union (ApiAuth | OAuth | WellKnownAuth) in one
// struct. tandem stores API keys; the other two are refused with 400.
type AuthSet struct {
	AuthPath
	Type     string            `json:"type" required:"true" enum:"api,oauth,wellknown" description:"\"api\" (the only one tandem stores), \"oauth\" or \"wellknown\"."`
	Key      string            `json:"key,omitempty" description:"The API key (type api)."`
	Metadata map[string]string `json:"metadata,omitempty"`
	// OAuth and WellKnownAuth fields, accepted so that their refusal names the type, not a field.
	Refresh       string `json:"refresh,omitempty"`
	Access        string `json:"access,omitempty"`
	Expires       int64  `json:"expires,omitempty"`
	AccountID     string `json:"accountId,omitempty"`
	EnterpriseURL string `json:"enterpriseUrl,omitempty"`
	Token         string `json:"token,omitempty"`
}

// Validate refuses what tandem cannot store. The key itself is never quoted.
func (a *AuthSet) Validate() error {
	switch a.Type {
	case "api":
		if a.Key == "" {
			return errs.E(errs.Invalid, "key: required for type \"api\"")
		}
		return nil
	case "oauth", "wellknown":
		return errs.E(errs.Invalid, "type %q: tandem stores API keys only ({\"type\":\"api\",\"key\":\"...\"}); OAuth and well-known credentials are not supported", a.Type)
	case "":
		return errs.E(errs.Invalid, "type: required (\"api\")")
	default:
		return errs.E(errs.Invalid, "type: must be \"api\", \"oauth\" or \"wellknown\", got %q", a.Type)
	}
}

// Ops declares the config and provider routes.
func (cf *Configuration) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/config", "config.get", "Get configuration", func(c *Call, _ *struct{}) (json.RawMessage, error) {
			cfg, err := cf.Load(c.Dir)
			if err != nil {
				return nil, err
			}
			return cf.withSandboxStatus(document(cfg)), nil
		}).doc("The merged configuration (user file, project file, environment), unknown keys included. A value written as {env:VAR} is shown in that form, never expanded; API keys, provider, MCP and notify headers, MCP environment variables and notify secrets and tokens are masked. " +
			"sandbox_status says what the kernel enforces of the sandbox setting (mode, network, enforced, mechanism, abi, reason)."),
		op(http.MethodPatch, "/config", "config.update", "Update configuration", func(c *Call, in *json.RawMessage) (json.RawMessage, error) {
			cfg, err := cf.Patch(c.Dir, *in)
			if err != nil {
				return nil, err
			}
			return document(cfg), nil
		}).doc("A JSON merge patch (null removes a key) written to the project's tandem.json, comments kept; "+
			"validated first, so a bad patch changes nothing. Providers and permission rules reload.", 415),
		op(http.MethodPatch, "/global/config", "global.config.update", "Update global configuration", func(c *Call, in *json.RawMessage) (json.RawMessage, error) {
			cfg, err := cf.PatchUser(c.Dir, *in)
			if err != nil {
				return nil, err
			}
			return document(cfg), nil
		}).doc("A JSON merge patch written to the user's own tandem.json ($XDG_CONFIG_HOME/tandem; created when there is none), "+
			"checked as PATCH /config checks one; the answer is the merged configuration as GET /config shows it. "+
			"This is where a provider's baseURL and models go: a project's file the user has not trusted cannot set them. "+
			"\"trust\" is refused (tandem trust edits it).", 415),
		op(http.MethodGet, "/config/providers", "config.providers", "List config providers", func(c *Call, _ *struct{}) (provider.ConfigProviderList, error) {
			return cf.Providers().ConfigProviders(), nil
		}),
		op(http.MethodGet, "/provider", "provider.list", "List providers", func(c *Call, _ *struct{}) (provider.ProviderList, error) {
			return cf.Providers().List(), nil
		}).doc("With nothing configured, the offline demo model is the default and the only connected provider."),
		op(http.MethodGet, "/provider/auth", "provider.auth", "Get provider auth methods", func(c *Call, _ *struct{}) (map[string][]provider.AuthMethod, error) {
			return cf.Providers().AuthMethods(), nil
		}),
		op(http.MethodPut, "/auth/{providerID}", "auth.set", "Set auth credentials", func(c *Call, in *AuthSet) (bool, error) {
			return true, cf.SetKey(in.ProviderID, in.Key, in.Metadata)
		}).doc("Stores the provider's API key in a file only the server's user can read (auth.json in the data directory); "+
			"the provider is connected and its models listed at once. A stored key replaces the environment's and the "+
			"configuration's key of that provider. Keys are never logged and GET /config masks them. Only API keys "+
			"(type \"api\") are stored; the provider must be built in or configured.", 413, 415),
		op(http.MethodDelete, "/auth/{providerID}", "auth.remove", "Remove auth credentials", func(c *Call, in *AuthPath) (bool, error) {
			return true, cf.RemoveKey(in.ProviderID)
		}).doc("Deletes the stored key; a key from the environment or the configuration files stays in effect."),
	}
}

// document is the merged configuration as clients see it: a value a file wrote as {env:VAR} keeps
// that form (config.Config.Shown), and what can carry a secret (API keys, request headers, an MCP
// server's environment, notify secrets and tokens) is masked, because the document may carry keys
// from the environment that no client wrote, and the web UI shows it.
func document(cfg config.Config) json.RawMessage {
	shown := cfg.Shown
	if len(shown) == 0 {
		shown = cfg.Document
	}
	if len(shown) == 0 {
		return json.RawMessage("{}")
	}
	var doc map[string]any
	if err := json.Unmarshal(shown, &doc); err != nil {
		return shown
	}
	if providers, ok := doc["provider"].(map[string]any); ok {
		for _, p := range providers {
			entry, _ := p.(map[string]any)
			if opts, ok := entry["options"].(map[string]any); ok {
				maskFields(opts, "apiKey")
				maskAll(opts["headers"])
			}
		}
	}
	if servers, ok := doc["mcp"].(map[string]any); ok {
		for _, m := range servers {
			entry, _ := m.(map[string]any)
			maskAll(entry["headers"])
			maskAll(entry["environment"])
		}
	}
	if targets, ok := doc["notify"].([]any); ok {
		for _, t := range targets {
			entry, _ := t.(map[string]any)
			maskFields(entry, "secret", "token")
			maskAll(entry["headers"])
		}
	}
	// Only the masked members are encoded again: the others keep the document's member order, which
	// for permission rules is the order they are evaluated in.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(shown, &top); err != nil {
		return shown
	}
	for _, k := range []string{"provider", "mcp", "notify"} {
		if v, ok := doc[k]; ok {
			b, err := json.Marshal(v)
			if err != nil {
				return shown
			}
			top[k] = b
		}
	}
	out, err := json.Marshal(top)
	if err != nil {
		return shown
	}
	return out
}

// maskFields masks the named string values of obj.
func maskFields(obj map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := obj[k].(string); ok {
			obj[k] = maskSecret(v)
		}
	}
}

// maskAll masks every string value of an object (headers, environment variables).
func maskAll(v any) {
	if obj, ok := v.(map[string]any); ok {
		for k, child := range obj {
			if s, ok := child.(string); ok {
				obj[k] = maskSecret(s)
			}
		}
	}
}

// maskSecret keeps a secret recognisable without revealing it. A value that names its variable
// ({env:VAR}, as the file wrote it) reveals nothing and stays, so the user sees where it comes from.
func maskSecret(s string) string {
	if s == "" || strings.Contains(s, "{env:") {
		return s
	}
	if len(s) <= 8 {
		return "********"
	}
	return s[:4] + "…" + s[len(s)-2:]
}

// withSandboxStatus adds what the kernel enforces of the sandbox setting: where it cannot (no
// Landlock, not Linux), a client shows that every command is asked for.
func (cf *Configuration) withSandboxStatus(doc json.RawMessage) json.RawMessage {
	if cf.Sandbox == nil {
		return doc
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return doc
	}
	st, err := json.Marshal(cf.Sandbox.Status())
	if err != nil {
		return doc
	}
	m["sandbox_status"] = st
	out, err := json.Marshal(m)
	if err != nil {
		return doc
	}
	return out
}
