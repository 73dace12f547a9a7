package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// Sandbox is the "sandbox" setting: how the commands tandem runs for the agent are confined. It is
// written either as the mode alone ("workspace-write", "read-only", "off") or as an object:
//
//	"sandbox": {"mode": "workspace-write", "network": "deny", "mcp": true, "writable": ["~/.cache/go-build"]}
//
// Only the user's own files set it; a project's file may only make it stricter (a stricter mode,
// "network": "deny", "mcp": true; its "writable" is ignored), whether or not the project is trusted.
type Sandbox struct {
	Mode    sandbox.Mode `json:"mode"`
	Network string       `json:"network"` // "allow" (the default) or "deny"
	// MCP confines the local MCP servers too (each may then write its working directory).
	MCP bool `json:"mcp"`
	// Writable are more directories every command may write in workspace-write mode (a build
	// cache): absolute, or "~/" for the home directory.
	Writable []string `json:"writable,omitempty"`
}

// Policy is the setting as the sandbox package takes it; home replaces a leading "~/".
func (s Sandbox) Policy(protected []string, tempDir, home string) sandbox.Policy {
	var writable []string
	for _, w := range s.Writable {
		if rest, ok := strings.CutPrefix(w, "~/"); ok {
			if home == "" {
				continue
			}
			w = filepath.Join(home, rest)
		}
		writable = append(writable, filepath.Clean(w))
	}
	return sandbox.Policy{Mode: s.Mode, DenyNetwork: s.Network == "deny", Protected: protected, TempDir: tempDir, Writable: writable}
}

// parseSandbox reads one layer's "sandbox" value.
func parseSandbox(v any) (Sandbox, string, error) {
	var s Sandbox
	switch v := v.(type) {
	case string:
		m, err := sandbox.ParseMode(v)
		if err != nil || v == "" {
			return Sandbox{}, "", fmt.Errorf("sandbox must be \"workspace-write\", \"read-only\", \"off\" or an object {\"mode\", \"network\", \"mcp\"}, got %q", v)
		}
		s.Mode = m
	case map[string]any:
		for key, val := range v {
			switch key {
			case "mode":
				str, _ := val.(string)
				m, err := sandbox.ParseMode(str)
				if err != nil || str == "" {
					return Sandbox{}, "/mode", fmt.Errorf("sandbox.mode must be \"workspace-write\", \"read-only\" or \"off\", got %v", jsonText(val))
				}
				s.Mode = m
			case "network":
				str, _ := val.(string)
				if str != "allow" && str != "deny" {
					return Sandbox{}, "/network", fmt.Errorf("sandbox.network must be \"allow\" or \"deny\", got %v", jsonText(val))
				}
				s.Network = str
			case "writable":
				list, ok := val.([]any)
				if !ok {
					return Sandbox{}, "/writable", fmt.Errorf("sandbox.writable must be an array of directories, got %v", jsonText(val))
				}
				for i, item := range list {
					dir, _ := item.(string)
					if !filepath.IsAbs(dir) && !strings.HasPrefix(dir, "~/") {
						return Sandbox{}, fmt.Sprintf("/writable/%d", i), fmt.Errorf("sandbox.writable: %v is not an absolute directory or one under ~/", jsonText(item))
					}
					s.Writable = append(s.Writable, dir)
				}
			case "mcp":
				b, ok := val.(bool)
				if !ok {
					return Sandbox{}, "/mcp", fmt.Errorf("sandbox.mcp must be true or false, got %v", jsonText(val))
				}
				s.MCP = b
			default:
				return Sandbox{}, "/" + escapePointer(key), fmt.Errorf("sandbox: unknown key %q (known: mode, network, mcp, writable)", key)
			}
		}
	default:
		return Sandbox{}, "", fmt.Errorf("sandbox must be \"workspace-write\", \"read-only\", \"off\" or an object {\"mode\", \"network\", \"mcp\"}, got %v", jsonText(v))
	}
	return s, "", nil
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// sandboxSetting combines the layers' settings: the user's files set it (tandem.json over
// tandem.jsonc, key by key), a project's files may only tighten it. An invalid value is an error
// at its place in its file, wherever it comes from.
func sandboxSetting(layers []layer, userDir string) (Sandbox, error) {
	user := Sandbox{Mode: sandbox.WorkspaceWrite, Network: "allow"}
	var project []Sandbox
	for _, ly := range layers {
		v, ok := ly.tree["sandbox"]
		if !ok {
			continue
		}
		s, ptr, err := parseSandbox(v)
		if err != nil {
			return Sandbox{}, locate([]layer{ly}, "/sandbox"+ptr, err.Error())
		}
		if userDir != "" && filepath.Dir(ly.name) == userDir {
			if s.Mode != "" {
				user.Mode = s.Mode
			}
			if s.Network != "" {
				user.Network = s.Network
			}
			if obj, ok := v.(map[string]any); ok {
				if _, set := obj["mcp"]; set {
					user.MCP = s.MCP
				}
				if _, set := obj["writable"]; set {
					user.Writable = s.Writable
				}
			}
			continue
		}
		project = append(project, s)
	}
	for _, s := range project {
		if s.Mode != "" {
			user.Mode = sandbox.Stricter(user.Mode, s.Mode)
		}
		if s.Network == "deny" {
			user.Network = "deny"
		}
		user.MCP = user.MCP || s.MCP
	}
	return user, nil
}
