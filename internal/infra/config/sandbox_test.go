package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

func TestTheSandboxSettingIsTheUsersAndAProjectCanOnlyTightenIt(t *testing.T) {
	tests := []struct {
		name      string
		user      string // the user's tandem.json ("" for none)
		project   string // the project's tandem.json ("" for none)
		untrusted bool
		want      config.Sandbox
	}{
		{"nothing set is workspace-write with the network", "", "", false, config.Sandbox{Mode: sandbox.WorkspaceWrite, Network: "allow"}},
		{"the user turns it off", `{"sandbox": "off"}`, "", false, config.Sandbox{Mode: sandbox.Off, Network: "allow"}},
		{"the user's object form", `{"sandbox": {"mode": "read-only", "network": "deny", "mcp": true}}`, "", false, config.Sandbox{Mode: sandbox.ReadOnly, Network: "deny", MCP: true}},
		{"a trusted project cannot turn it off", "", `{"sandbox": "off"}`, false, config.Sandbox{Mode: sandbox.WorkspaceWrite, Network: "allow"}},
		{"a project cannot loosen the user's read-only", `{"sandbox": "read-only"}`, `{"sandbox": {"mode": "workspace-write", "network": "allow"}}`, false, config.Sandbox{Mode: sandbox.ReadOnly, Network: "allow"}},
		{"a project cannot give back the network", `{"sandbox": {"network": "deny"}}`, `{"sandbox": {"network": "allow"}}`, false, config.Sandbox{Mode: sandbox.WorkspaceWrite, Network: "deny"}},
		{"a project may make it read-only", `{"sandbox": "off"}`, `{"sandbox": "read-only"}`, false, config.Sandbox{Mode: sandbox.ReadOnly, Network: "allow"}},
		{"an untrusted project may deny the network", "", `{"sandbox": {"network": "deny", "mcp": true}}`, true, config.Sandbox{Mode: sandbox.WorkspaceWrite, Network: "deny", MCP: true}},
		{"an untrusted project cannot turn it off", "", `{"sandbox": "off"}`, true, config.Sandbox{Mode: sandbox.WorkspaceWrite, Network: "allow"}},
		{"the user names more writable directories", `{"sandbox": {"writable": ["~/.cache/go-build", "/srv/cache"]}}`, "", false, config.Sandbox{Mode: sandbox.WorkspaceWrite, Network: "allow", Writable: []string{"~/.cache/go-build", "/srv/cache"}}},
		{"a project's writable directories are ignored", `{"sandbox": {"writable": ["/srv/cache"]}}`, `{"sandbox": {"writable": ["/"]}}`, false, config.Sandbox{Mode: sandbox.WorkspaceWrite, Network: "allow", Writable: []string{"/srv/cache"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, project := map[string]string{}, map[string]string{}
			if tt.user != "" {
				user["tandem.json"] = tt.user
			}
			if tt.project != "" {
				project["tandem.json"] = tt.project
			}
			f := newFixture(t, user, project, nil)
			if tt.untrusted {
				f = newUntrustedFixture(t, user, project, nil)
			}
			if got := mustLoad(t, f).Sandbox; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Sandbox = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAnInvalidSandboxValueIsAConfigErrorAtItsPlace(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"an unknown mode", "{\n  \"sandbox\": \"readonly\"\n}", `tandem.json:2:14: sandbox must be "workspace-write", "read-only", "off" or an object`},
		{"an unknown network value", "{\"sandbox\": {\n \"network\": \"none\"}}", `tandem.json:2:13: sandbox.network must be "allow" or "deny", got "none"`},
		{"an unknown key", "{\"sandbox\": {\"net\": \"deny\"}}", `sandbox: unknown key "net"`},
		{"a number", "{\"sandbox\": 1}", `sandbox must be`},
		{"a relative writable directory", "{\"sandbox\": {\"writable\": [\"cache\"]}}", `sandbox.writable: "cache" is not an absolute directory or one under ~/`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, where := range []string{"user", "project"} {
				files := map[string]string{"tandem.json": tt.file}
				f := newFixture(t, files, nil, nil)
				if where == "project" {
					f = newFixture(t, nil, files, nil)
				}
				_, err := f.loader().Load()
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("%s file: Load error = %v, want it to contain %q", where, err, tt.want)
				}
			}
		})
	}
}
