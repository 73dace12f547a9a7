// Package config loads tandem's JSONC configuration: an OpenCode-compatible subset of OpenCode's
// Config schema, layered from the user's file, the project's file and the environment.
//
// Keys this package does not model are kept: Config.Document is the merged document that
// GET /config serves, so a client that writes an OpenCode key tandem ignores gets it back.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is the typed view of the merged configuration.
type Config struct {
	Schema     string                    `json:"$schema,omitempty"`
	Model      string                    `json:"model,omitempty"` // "providerID/modelID"
	SmallModel string                    `json:"small_model,omitempty"`
	Username   string                    `json:"username,omitempty"`
	Provider   map[string]ProviderConfig `json:"provider,omitempty"`
	// Agent is kept raw: the agent package owns its meaning.
	Agent map[string]json.RawMessage `json:"agent,omitempty"`
	// Permission is kept raw: the permission package parses it (a string or a per-tool map).
	Permission json.RawMessage      `json:"permission,omitempty"`
	MCP        map[string]MCPConfig `json:"mcp,omitempty"`
	Server     ServerConfig         `json:"server,omitzero"`
	Compaction Compaction           `json:"compaction,omitzero"`
	// Notify lists where requests that wait for a person are announced (webhooks, ntfy, ...).
	Notify []NotifyTarget `json:"notify,omitempty"`
	// Sandbox confines the agent's commands; the user's files set it, a project only tightens it.
	Sandbox Sandbox `json:"-"`

	// Untrusted, when set, says what the project's own file asked for and was refused because the
	// user has not trusted the directory (`tandem trust DIR`).
	Untrusted *Untrusted `json:"-"`

	// StoredKeys names the providers whose API key came from the keys stored through
	// PUT /auth/{providerID} (Loader.Keys).
	StoredKeys map[string]bool `json:"-"`

	// Document is the whole merged document, unknown keys included.
	Document json.RawMessage `json:"-"`
	// Shown is Document as a client may read it (GET /config): a value a file wrote as {env:VAR}
	// keeps that form instead of the secret it expands to.
	Shown json.RawMessage `json:"-"`
}

// ProviderConfig configures one LLM provider. The ID is its key in Config.Provider.
type ProviderConfig struct {
	Name    string                 `json:"name,omitempty"`
	NPM     string                 `json:"npm,omitempty"` // OpenCode's adapter package; tandem reads it to pick the wire protocol
	API     string                 `json:"api,omitempty"`
	Env     []string               `json:"env,omitempty"`
	Options ProviderOptions        `json:"options,omitzero"`
	Models  map[string]ModelConfig `json:"models,omitempty"`
}

// ProviderOptions are the connection settings of a provider.
type ProviderOptions struct {
	APIKey  string            `json:"apiKey,omitempty"`
	BaseURL string            `json:"baseURL,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds the silence between two streamed chunks (and before the first one).
	Timeout Timeout `json:"timeout,omitzero"`
	// ChunkTimeout is OpenCode's name for the same idle bound; when both are set it wins.
	ChunkTimeout Timeout `json:"chunkTimeout,omitzero"`
}

// Timeout is a duration in milliseconds, or false to disable it (OpenCode's `number | false`).
// Decoding never fails; a malformed value is kept and reported by validation, which knows
// where in which file it came from.
type Timeout struct {
	Set      bool // the key was present
	Disabled bool // the value was false
	Millis   int64
	invalid  json.RawMessage
}

// UnmarshalJSON accepts a positive integer or false.
func (t *Timeout) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "false":
		*t = Timeout{Set: true, Disabled: true}
		return nil
	case "null":
		*t = Timeout{}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n <= 0 {
		*t = Timeout{Set: true, invalid: append(json.RawMessage(nil), b...)}
		return nil
	}
	*t = Timeout{Set: true, Millis: n}
	return nil
}

// MarshalJSON writes the value back the way it was written.
func (t Timeout) MarshalJSON() ([]byte, error) {
	switch {
	case t.invalid != nil:
		return t.invalid, nil
	case t.Disabled:
		return []byte("false"), nil
	}
	return strconv.AppendInt(nil, t.Millis, 10), nil
}

// IsZero lets omitzero drop an absent timeout.
func (t Timeout) IsZero() bool { return !t.Set }

// Duration returns the timeout, or def when none is set; ok is false when it is disabled.
func (t Timeout) Duration(def time.Duration) (d time.Duration, ok bool) {
	switch {
	case !t.Set:
		return def, true
	case t.Disabled:
		return 0, false
	}
	return time.Duration(t.Millis) * time.Millisecond, true
}

// Compaction is OpenCode's `compaction` key: when a turn's input nears the model's context window,
// the conversation before the turn is summarised first. Keys tandem does not act on (prune,
// tail_turns, preserve_recent_tokens) stay in Document.
type Compaction struct {
	// Auto switches automatic compaction; absent means on.
	Auto *bool `json:"auto,omitempty"`
	// Reserved is how many tokens of the context window are kept free for the answer; absent
	// means min(20000, the model's output limit).
	Reserved *int64 `json:"reserved,omitempty"`
}

// ModelConfig describes or overrides one model of a provider.
type ModelConfig struct {
	ID          string      `json:"id,omitempty"` // the ID sent to the API when it differs from the key
	Name        string      `json:"name,omitempty"`
	Family      string      `json:"family,omitempty"`
	ReleaseDate string      `json:"release_date,omitempty"`
	Attachment  *bool       `json:"attachment,omitempty"`
	Reasoning   *bool       `json:"reasoning,omitempty"`
	Temperature *bool       `json:"temperature,omitempty"`
	ToolCall    *bool       `json:"tool_call,omitempty"`
	Cost        *ModelCost  `json:"cost,omitempty"`
	Limit       *ModelLimit `json:"limit,omitempty"`
	// Modalities, Options and Variants: see models.go.
	Modalities *ModelModalities        `json:"modalities,omitempty"`
	Options    *ModelOptions           `json:"options,omitempty"`
	Variants   map[string]ModelOptions `json:"variants,omitempty"`
	// Patch offers the model apply_patch instead of edit, multiedit and write (true), or those
	// instead of apply_patch (false); unset, GPT models get apply_patch (OpenCode's rule).
	Patch *bool `json:"patch,omitempty"`
}

// ModelCost is in US dollars per million tokens, as OpenCode writes it.
type ModelCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// ModelLimit is in tokens.
type ModelLimit struct {
	Context int64 `json:"context"`
	Input   int64 `json:"input,omitempty"`
	Output  int64 `json:"output"`
}

// MCPConfig is a local (stdio) or remote (Streamable HTTP) MCP server. An entry that only says
// {"enabled": false} switches off a server defined in a lower layer.
type MCPConfig struct {
	Type        string            `json:"type,omitempty"` // "local" | "remote"
	Command     []string          `json:"command,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	URL         string            `json:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	OAuth       json.RawMessage   `json:"oauth,omitempty"`
	Enabled     *bool             `json:"enabled,omitempty"`
	Timeout     int64             `json:"timeout,omitempty"` // milliseconds
}

// ServerConfig holds the network settings of `tandem serve` and `tandem web`.
type ServerConfig struct {
	Port       int      `json:"port,omitempty"`
	Hostname   string   `json:"hostname,omitempty"`
	CORS       []string `json:"cors,omitempty"`
	MDNS       bool     `json:"mdns,omitempty"`
	MDNSDomain string   `json:"mdnsDomain,omitempty"`
}

// SplitModel splits "provider/model" at the first slash; model IDs may contain more slashes
// (OpenRouter's "openai/gpt-4o").
func SplitModel(s string) (providerID, modelID string, ok bool) {
	providerID, modelID, ok = strings.Cut(s, "/")
	if !ok || providerID == "" || modelID == "" {
		return "", "", false
	}
	return providerID, modelID, true
}

// Validate checks what the types alone cannot. Load already ran it; it is exported for code that
// builds a Config by hand.
func (c *Config) Validate() error {
	_, err := c.validate()
	return err
}

// validate checks what the types alone cannot; the returned path names the offending key as a
// JSON pointer so the caller can point into the file.
func (c *Config) validate() (pointer string, err error) {
	for _, m := range []struct{ key, value string }{{"model", c.Model}, {"small_model", c.SmallModel}} {
		if m.value == "" {
			continue
		}
		if _, _, ok := SplitModel(m.value); !ok {
			return "/" + m.key, fmt.Errorf("%s must look like \"provider/model\", got %q", m.key, m.value)
		}
	}
	if r := c.Compaction.Reserved; r != nil && *r < 0 {
		return "/compaction/reserved", fmt.Errorf("compaction.reserved must not be negative, got %d", *r)
	}
	for name, m := range c.MCP {
		ptr := "/mcp/" + escapePointer(name)
		switch m.Type {
		case "local":
			if len(m.Command) == 0 || m.Command[0] == "" {
				return ptr, fmt.Errorf("mcp %q: a local server needs a command", name)
			}
		case "remote":
			if m.URL == "" {
				return ptr, fmt.Errorf("mcp %q: a remote server needs a url", name)
			}
		case "":
			if m.Enabled == nil || len(m.Command) > 0 || m.URL != "" {
				return ptr, fmt.Errorf("mcp %q: type must be \"local\" or \"remote\"", name)
			}
		default:
			return ptr, fmt.Errorf("mcp %q: type must be \"local\" or \"remote\", got %q", name, m.Type)
		}
		if m.Timeout < 0 {
			return ptr, fmt.Errorf("mcp %q: timeout must be positive", name)
		}
	}
	for id, p := range c.Provider {
		ptr := "/provider/" + escapePointer(id)
		if id == "demo" {
			return ptr, fmt.Errorf("provider %q: this ID is reserved for tandem's offline demo model", id)
		}
		if b := p.Options.BaseURL; b != "" {
			u, err := url.Parse(b)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return ptr + "/options/baseURL", fmt.Errorf("provider %q: options.baseURL must be an http or https URL, got %q", id, b)
			}
		}
		for name, m := range p.Models {
			if pointer, err := m.validate(ptr+"/models/"+escapePointer(name), id, name); err != nil {
				return pointer, err
			}
		}
		for _, t := range []struct {
			key string
			t   Timeout
		}{{"timeout", p.Options.Timeout}, {"chunkTimeout", p.Options.ChunkTimeout}} {
			if t.t.invalid != nil {
				return ptr + "/options/" + t.key,
					fmt.Errorf("provider %q: options.%s must be a positive number of milliseconds or false, got %s", id, t.key, t.t.invalid)
			}
		}
	}
	if pointer, err := validateNotify(c.Notify); err != nil {
		return pointer, err
	}
	if c.Server.Port < 0 || c.Server.Port > 65535 {
		return "/server/port", fmt.Errorf("server.port must be between 1 and 65535, got %d", c.Server.Port)
	}
	return "", nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
