package mcpclient

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/config"
)

// Config is one MCP server's configuration in OpenCode's shape: McpLocalConfig
// {"type":"local","command":[...],"cwd"?,"environment"?,"enabled"?,"timeout"?} or McpRemoteConfig
// {"type":"remote","url":...,"headers"?,"oauth"?,"enabled"?,"timeout"?}. It is the type tandem.json's
// "mcp" entries decode into, so a configured server reaches the manager as it was read.
type Config = config.MCPConfig

// defaultConnectTimeout bounds connecting and listing tools when the config names no timeout
// (OpenCode's default is 5 s; npx may need longer on a cold cache, so tandem allows 30 s).
const defaultConnectTimeout = 30 * time.Second

// ParseConfig decodes and checks one server's configuration (POST /mcp's body). Problems are Invalid
// errors naming the field under prefix (e.g. "config.command").
func ParseConfig(prefix string, raw json.RawMessage) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, errs.E(errs.Invalid, "%s: %v", prefix, strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := checkConfig(prefix, c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// checkConfig reports the first problem with a server's configuration, naming the field under prefix.
func checkConfig(prefix string, c Config) error {
	switch c.Type {
	case "local":
		if len(c.Command) == 0 || strings.TrimSpace(c.Command[0]) == "" {
			return errs.E(errs.Invalid, "%s.command: a local server needs a command to run", prefix)
		}
		if c.URL != "" || len(c.Headers) > 0 {
			return errs.E(errs.Invalid, "%s: url and headers belong to remote servers", prefix)
		}
	case "remote":
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errs.E(errs.Invalid, "%s.url: must be an http or https URL, got %q", prefix, c.URL)
		}
		if len(c.Command) > 0 || c.Cwd != "" || len(c.Environment) > 0 {
			return errs.E(errs.Invalid, "%s: command, cwd and environment belong to local servers", prefix)
		}
	case "":
		return errs.E(errs.Invalid, "%s.type: required (local or remote)", prefix)
	default:
		return errs.E(errs.Invalid, "%s.type: must be local or remote, got %q", prefix, c.Type)
	}
	if c.Timeout < 0 {
		return errs.E(errs.Invalid, "%s.timeout: must be a positive number of milliseconds", prefix)
	}
	return nil
}

// enabled reports whether a server should be connected; servers are on unless switched off.
func enabled(c Config) bool { return c.Enabled == nil || *c.Enabled }

func connectTimeout(c Config) time.Duration {
	if c.Timeout > 0 {
		return time.Duration(c.Timeout) * time.Millisecond
	}
	return defaultConnectTimeout
}

// Status is a server's state as GET /mcp reports it.
type Status = api.MCPStatus

// The status values.
const (
	Connected               = "connected"
	Disabled                = "disabled"
	Failed                  = "failed"
	NeedsAuth               = "needs_auth"
	NeedsClientRegistration = "needs_client_registration"
)
