package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/config"
)

// fixture is a user config directory and a project directory with the given files.
type fixture struct {
	home, project string
	env           map[string]string
}

func newFixture(t *testing.T, user, project map[string]string, env map[string]string) *fixture {
	t.Helper()
	f := &fixture{home: t.TempDir(), project: t.TempDir(), env: map[string]string{}}
	f.env["XDG_CONFIG_HOME"] = filepath.Join(f.home, "xdg")
	for k, v := range env {
		f.env[k] = v
	}
	writeFiles(t, filepath.Join(f.home, "xdg", "tandem"), user)
	writeFiles(t, f.project, project)
	// These fixtures test layering, so the user trusts the project (trust_test.go tests without).
	trust := map[string]string{}
	for _, name := range []string{"tandem.json", "tandem.jsonc"} {
		if _, ok := user[name]; !ok {
			trust[name] = fmt.Sprintf(`{"trust": [%q]}`, f.project)
			break
		}
	}
	writeFiles(t, filepath.Join(f.home, "xdg", "tandem"), trust)
	return f
}

// newUntrustedFixture is newFixture without the user's trust in the project.
func newUntrustedFixture(t *testing.T, user, project map[string]string, env map[string]string) *fixture {
	t.Helper()
	f := &fixture{home: t.TempDir(), project: t.TempDir(), env: map[string]string{}}
	f.env["XDG_CONFIG_HOME"] = filepath.Join(f.home, "xdg")
	maps.Copy(f.env, env)
	writeFiles(t, filepath.Join(f.home, "xdg", "tandem"), user)
	writeFiles(t, f.project, project)
	return f
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) getenv(k string) string { return f.env[k] }

func (f *fixture) loader() *config.Loader { return config.NewLoader(f.project, f.getenv) }

func mustLoad(t *testing.T, f *fixture) config.Config {
	t.Helper()
	cfg, err := f.loader().Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

func TestLoadMergesLayersInPrecedenceOrder(t *testing.T) {
	tests := []struct {
		name    string
		user    map[string]string
		project map[string]string
		env     map[string]string
		check   func(t *testing.T, cfg config.Config)
	}{
		{
			name:    "the project file overrides the user's model",
			user:    map[string]string{"tandem.json": `{"model": "openai/gpt-4.1", "username": "ada"}`},
			project: map[string]string{"tandem.json": `{"model": "anthropic/claude-haiku-4-5"}`},
			check: func(t *testing.T, cfg config.Config) {
				if cfg.Model != "anthropic/claude-haiku-4-5" || cfg.Username != "ada" {
					t.Errorf("model %q username %q", cfg.Model, cfg.Username)
				}
			},
		},
		{
			name: "objects merge key by key across files",
			user: map[string]string{"tandem.jsonc": `{
				// the user's key
				"provider": {"openai": {"options": {"apiKey": "sk-user", "headers": {"X-A": "1"}}}},
			}`},
			project: map[string]string{"tandem.json": `{"provider": {"openai": {"options": {"baseURL": "http://127.0.0.1:1/v1", "headers": {"X-B": "2"}}}}}`},
			check: func(t *testing.T, cfg config.Config) {
				o := cfg.Provider["openai"].Options
				want := config.ProviderOptions{APIKey: "sk-user", BaseURL: "http://127.0.0.1:1/v1", Headers: map[string]string{"X-A": "1", "X-B": "2"}}
				if diff := cmp.Diff(want, o, cmp.AllowUnexported(config.Timeout{})); diff != "" {
					t.Errorf("options (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:    "arrays replace instead of concatenating",
			user:    map[string]string{"tandem.json": `{"server": {"cors": ["http://a"], "port": 4100}}`},
			project: map[string]string{"tandem.json": `{"server": {"cors": ["http://b"]}}`},
			check: func(t *testing.T, cfg config.Config) {
				if diff := cmp.Diff(config.ServerConfig{Port: 4100, CORS: []string{"http://b"}}, cfg.Server); diff != "" {
					t.Errorf("server (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:    "tandem.json wins over tandem.jsonc in the same directory",
			project: map[string]string{"tandem.jsonc": `{"model": "a/one", "username": "jsonc"}`, "tandem.json": `{"model": "b/two"}`},
			check: func(t *testing.T, cfg config.Config) {
				if cfg.Model != "b/two" || cfg.Username != "jsonc" {
					t.Errorf("model %q username %q", cfg.Model, cfg.Username)
				}
			},
		},
		{
			name:    "the environment overrides both files",
			user:    map[string]string{"tandem.json": `{"provider": {"openai": {"options": {"apiKey": "sk-file"}}}}`},
			project: map[string]string{"tandem.json": `{"model": "openai/gpt-4.1"}`},
			env: map[string]string{
				"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:2/v1",
				"ANTHROPIC_API_KEY": "ant-env", "ANTHROPIC_BASE_URL": "http://127.0.0.1:3",
				"TANDEM_MODEL": "anthropic/claude-opus-4-1",
			},
			check: func(t *testing.T, cfg config.Config) {
				got := []string{cfg.Model, cfg.Provider["openai"].Options.APIKey, cfg.Provider["openai"].Options.BaseURL,
					cfg.Provider["anthropic"].Options.APIKey, cfg.Provider["anthropic"].Options.BaseURL}
				want := []string{"anthropic/claude-opus-4-1", "sk-env", "http://127.0.0.1:2/v1", "ant-env", "http://127.0.0.1:3"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		{
			name:    "unknown keys are kept in the merged document",
			user:    map[string]string{"tandem.json": `{"theme": "tokyonight", "keybinds": {"leader": "ctrl+x"}}`},
			project: map[string]string{"tandem.json": `{"keybinds": {"quit": "q"}, "permission": {"bash": "ask"}}`},
			check: func(t *testing.T, cfg config.Config) {
				var doc map[string]any
				if err := json.Unmarshal(cfg.Document, &doc); err != nil {
					t.Fatal(err)
				}
				want := map[string]any{
					"theme":      "tokyonight",
					"keybinds":   map[string]any{"leader": "ctrl+x", "quit": "q"},
					"permission": map[string]any{"bash": "ask"},
				}
				if diff := cmp.Diff(want, doc); diff != "" {
					t.Errorf("document (-want +got):\n%s", diff)
				}
				if string(cfg.Permission) != `{"bash":"ask"}` {
					t.Errorf("permission kept raw as %s", cfg.Permission)
				}
			},
		},
		{
			name:    "mcp servers of both kinds and timeouts decode",
			project: map[string]string{"tandem.json": `{"mcp": {"fs": {"type": "local", "command": ["npx", "srv"], "environment": {"A": "b"}}, "web": {"type": "remote", "url": "http://127.0.0.1:9/mcp", "enabled": false}}, "provider": {"ollama": {"options": {"timeout": false, "chunkTimeout": 1500}}}}`},
			check: func(t *testing.T, cfg config.Config) {
				if fs := cfg.MCP["fs"]; fs.Type != "local" || len(fs.Command) != 2 || !switchedOn(fs) || fs.Environment["A"] != "b" {
					t.Errorf("fs = %+v", fs)
				}
				if web := cfg.MCP["web"]; web.URL == "" || switchedOn(web) {
					t.Errorf("web = %+v", web)
				}
				o := cfg.Provider["ollama"].Options
				if _, ok := o.Timeout.Duration(0); ok {
					t.Errorf("timeout false should disable it")
				}
				if d, ok := o.ChunkTimeout.Duration(0); !ok || d.Milliseconds() != 1500 {
					t.Errorf("chunkTimeout = %v %v", d, ok)
				}
			},
		},
		{
			name:    "a project can switch off a user's MCP server with enabled alone",
			user:    map[string]string{"tandem.json": `{"mcp": {"fs": {"type": "local", "command": ["srv"]}}}`},
			project: map[string]string{"tandem.json": `{"mcp": {"fs": {"enabled": false}}}`},
			check: func(t *testing.T, cfg config.Config) {
				if fs := cfg.MCP["fs"]; switchedOn(fs) || fs.Type != "local" {
					t.Errorf("fs = %+v", fs)
				}
			},
		},
		{
			name: "no files at all give an empty configuration",
			check: func(t *testing.T, cfg config.Config) {
				if cfg.Model != "" || len(cfg.Provider) != 0 || string(cfg.Document) != "{}" {
					t.Errorf("cfg = %+v doc %s", cfg, cfg.Document)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustLoad(t, newFixture(t, tt.user, tt.project, tt.env)))
		})
	}
}

func TestUserDirFallsBackToHomeDotConfig(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, filepath.Join(home, ".config", "tandem"), map[string]string{"tandem.json": `{"username": "home"}`})
	env := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	cfg, err := config.NewLoader(t.TempDir(), env).Load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Username != "home" {
		t.Errorf("username %q, want the one from ~/.config/tandem", cfg.Username)
	}
}

func TestEnvSubstitution(t *testing.T) {
	tests := []struct {
		name  string
		value string
		env   map[string]string
		want  string
	}{
		{"a whole value is replaced", `{env:KEY}`, map[string]string{"KEY": "sk-1"}, "sk-1"},
		{"references inside text are replaced", `Bearer {env:TOK}-{env:TOK}`, map[string]string{"TOK": "t"}, "Bearer t-t"},
		{"an unset variable becomes empty", `x{env:NOPE}y`, nil, "xy"},
		{"a value with quotes stays one string", `{env:Q}`, map[string]string{"Q": `a"b\c`}, `a"b\c`},
		{"text that only looks similar is kept", `{env:}{ENV:X}`, nil, `{env:}{ENV:X}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _ := json.Marshal(tt.value)
			f := newFixture(t, nil, map[string]string{"tandem.json": fmt.Sprintf(`{"provider": {"p": {"options": {"apiKey": %s}}}, "mcp": {"m": {"type": "local", "command": [%s]}}}`, v, v)}, tt.env)
			cfg := mustLoad(t, f)
			if got := cfg.Provider["p"].Options.APIKey; got != tt.want {
				t.Errorf("apiKey = %q, want %q", got, tt.want)
			}
			if got := cfg.MCP["m"].Command[0]; got != tt.want {
				t.Errorf("command[0] = %q, want %q (inside arrays)", got, tt.want)
			}
		})
	}
}

func TestLoadErrorsNameFileLineAndColumn(t *testing.T) {
	tests := []struct {
		name     string
		file     string // project tandem.json
		env      map[string]string
		wantFile string // "" means the project's tandem.json
		line     int
		column   int
		contains string
	}{
		{"a missing comma is a syntax error", "{\n  \"model\": \"a/b\"\n  \"username\": \"x\"\n}", nil, "", 3, 3, "invalid character"},
		{"an unterminated object is a syntax error", "{\n  \"model\": \"a/b\",\n", nil, "", 3, 1, "unexpected EOF"},
		{"a number where a string belongs points at the value", "{\n  \"username\": \"x\",\n  \"model\": 42\n}", nil, "", 3, 12, "model: expected a string, got number"},
		{"a string where an object belongs points at the value", "{\"provider\": {\"openai\": {\"options\": \"nope\"}}}", nil, "", 1, 37, "expected an object"},
		{"a model without a provider points at the key", "{\n\n    \"model\": \"gpt-4.1\"}", nil, "", 3, 14, `"provider/model"`},
		{"an MCP server of unknown type points at the server", "{\"mcp\": {\n  \"x\": {\"type\": \"stdio\", \"command\": [\"a\"]}}}", nil, "", 2, 8, `type must be "local" or "remote"`},
		{"a local MCP server without a command", "{\"mcp\": {\"x\": {\"type\": \"local\"}}}", nil, "", 1, 15, "needs a command"},
		{"a negative timeout points at it", "{\"provider\": {\"o\": {\"options\": {\"timeout\": -5}}}}", nil, "", 1, 44, "positive number of milliseconds or false"},
		{"a baseURL that is not http points at it", "{\"provider\": {\"o\": {\"options\": {\"baseURL\": \"localhost:11434\"}}}}", nil, "", 1, 44, "must be an http or https URL"},
		{"the demo provider ID is reserved", "{\"provider\": {\"demo\": {}}}", nil, "", 1, 23, "reserved"},
		{"a negative compaction.reserved points at it", "{\"compaction\": {\"reserved\": -1}}", nil, "", 1, 29, "compaction.reserved must not be negative"},
		{"a compaction.auto that is not a boolean points at it", "{\"compaction\": {\"auto\": \"yes\"}}", nil, "", 1, 25, "compaction.auto: expected true or false"},
		{"a top-level array is refused", "[1]", nil, "", 1, 1, "must be a JSON object"},
		{"a bad TANDEM_MODEL names the environment", "{}", map[string]string{"TANDEM_MODEL": "nomodel"}, "environment", 0, 0, `"provider/model"`},
		{"a bad permission.timeout points at it", "{\n  \"permission\": {\n    \"timeout\": \"soon\"\n  }\n}", nil, "", 3, 16, `permission.timeout: expected seconds or a duration`},
		{"a bad permission action points at it", `{"permission": {"bash": {"rm *": "maybe"}}}`, nil, "", 1, 34, `expected "ask" | "allow" | "deny", got "maybe"`},
		{"a notify target without a url points at the target", `{"notify": [{"type": "ntfy"}]}`, nil, "", 1, 13, "notify[0] (ntfy): url is required"},
		{"a webhook without a secret points at the target", `{"notify": [{"type": "webhook", "url": "https://x.example/h"}]}`, nil, "", 1, 13, "secret is required"},
		{"an unknown notify type points at it", `{"notify": [{"type": "pager", "url": "https://x.example"}]}`, nil, "", 1, 22, `type must be one of webhook, ntfy`},
		{"a negative notify delay points at it", `{"notify": [{"type": "ntfy", "url": "https://ntfy.sh/t", "delay": -1}]}`, nil, "", 1, 67, "delay must be a number of seconds"},
		{"an ntfy priority out of range points at it", `{"notify": [{"type": "ntfy", "url": "https://ntfy.sh/t", "priority": 9}]}`, nil, "", 1, 70, "priority must be 1-5"},
		{"a notify url without a scheme points at it", `{"notify": [{"type": "ntfy", "url": "ntfy.sh/t"}]}`, nil, "", 1, 37, "url must be an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, map[string]string{"tandem.json": tt.file}, tt.env)
			l := f.loader()
			// As the server does: the permission package checks its own part of the file.
			l.Check(func(c config.Config) error {
				_, err := permission.ParseConfig(c.Permission)
				return err
			})
			_, err := l.Load()
			var e *errs.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *errs.Error", err)
			}
			wantFile := tt.wantFile
			if wantFile == "" {
				wantFile = filepath.Join(f.project, "tandem.json")
			}
			if e.Kind != errs.Invalid || e.Data["path"] != wantFile {
				t.Errorf("kind %v path %v, want Invalid %s", e.Kind, e.Data["path"], wantFile)
			}
			if tt.line > 0 {
				if e.Data["line"] != tt.line || e.Data["column"] != tt.column {
					t.Errorf("at %v:%v, want %d:%d (%v)", e.Data["line"], e.Data["column"], tt.line, tt.column, err)
				}
				if prefix := fmt.Sprintf("%s:%d:%d: ", wantFile, tt.line, tt.column); !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("message %q does not start with %q", err, prefix)
				}
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("message %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestErrorsInTheUserFileNameTheUserFile(t *testing.T) {
	f := newFixture(t, map[string]string{"tandem.jsonc": "{\n  // fine\n  \"model\": ,\n}"}, map[string]string{"tandem.json": `{}`}, nil)
	_, err := f.loader().Load()
	want := filepath.Join(f.home, "xdg", "tandem", "tandem.jsonc") + ":3:12: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want prefix %q", err, want)
	}
}

func TestPatch(t *testing.T) {
	commented, err := os.ReadFile("testdata/commented.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	patched, err := os.ReadFile("testdata/commented.patched.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		project   map[string]string
		patch     string
		wantFile  string // which project file must change
		wantText  string // exact new content, when set
		wantErr   string // the patch is refused with this text, and nothing changes
		checkDoc  map[string]any
		checkFunc func(t *testing.T, cfg config.Config)
	}{
		{
			name:     "a patch changes only the values it sets: comments, layout and unknown keys stay as written",
			project:  map[string]string{"tandem.jsonc": string(commented)},
			patch:    `{"model": "anthropic/claude-sonnet-4-5", "username": "ada", "provider": {"openai": {"options": {"baseURL": "http://127.0.0.1:11434/v1"}}}}`,
			wantFile: "tandem.jsonc",
			wantText: string(patched),
			checkFunc: func(t *testing.T, cfg config.Config) {
				if cfg.Provider["openai"].Options.APIKey != "sk-from-env" {
					t.Errorf("apiKey %q: {env:} must still be substituted after a patch", cfg.Provider["openai"].Options.APIKey)
				}
			},
		},
		{
			name:     "a patch creates tandem.json when the project has no file",
			patch:    `{"mcp": {"fs": {"type": "local", "command": ["srv"]}}}`,
			wantFile: "tandem.json",
			checkDoc: map[string]any{"mcp": map[string]any{"fs": map[string]any{"type": "local", "command": []any{"srv"}}}},
		},
		{
			name:     "null removes a key",
			project:  map[string]string{"tandem.json": `{"model": "a/b", "username": "x", "server": {"port": 5}}`},
			patch:    `{"username": null, "server": {"port": null, "hostname": "h"}, "absent": null}`,
			wantFile: "tandem.json",
			checkDoc: map[string]any{"model": "a/b", "server": map[string]any{"hostname": "h"}},
		},
		{
			name:     "a value replaces an object and an array replaces an array",
			project:  map[string]string{"tandem.json": `{"permission": {"bash": "ask"}, "server": {"cors": ["a", "b"]}}`},
			patch:    `{"permission": "allow", "server": {"cors": ["c"]}}`,
			wantFile: "tandem.json",
			checkDoc: map[string]any{"permission": "allow", "server": map[string]any{"cors": []any{"c"}}},
		},
		{
			name:    "a patch that makes the configuration invalid is refused",
			project: map[string]string{"tandem.json": `{"model": "a/b"}`},
			patch:   `{"model": "no-slash"}`,
			wantErr: `"provider/model"`,
		},
		{
			name:    "a patch with the wrong type is refused",
			project: map[string]string{"tandem.json": `{"model": "a/b"}`},
			patch:   `{"mcp": {"x": {"type": "local", "command": "not-an-array"}}}`,
			wantErr: "expected an array",
		},
		{
			name:    "a patch that is not an object is refused",
			project: map[string]string{"tandem.json": `{"model": "a/b"}`},
			patch:   `["model"]`,
			wantErr: "must be a JSON object",
		},
		{
			name:    "a broken project file is reported, not overwritten",
			project: map[string]string{"tandem.json": "{\"model\": \"a/b\",,}"},
			patch:   `{"username": "x"}`,
			wantErr: "tandem.json:1:17",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, tt.project, map[string]string{"MY_OPENAI_KEY": "sk-from-env"})
			cfg, err := f.loader().Patch([]byte(tt.patch))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errs.Is(err, errs.Invalid) {
					t.Fatalf("err = %v, want Invalid containing %q", err, tt.wantErr)
				}
				for name, content := range tt.project {
					got, _ := os.ReadFile(filepath.Join(f.project, name))
					if string(got) != content {
						t.Errorf("%s changed to %q", name, got)
					}
				}
				entries, _ := os.ReadDir(f.project)
				if len(entries) != len(tt.project) {
					t.Errorf("project holds %d files, want %d (no temp files left)", len(entries), len(tt.project))
				}
				return
			}
			if err != nil {
				t.Fatalf("Patch: %v", err)
			}
			written, err := os.ReadFile(filepath.Join(f.project, tt.wantFile))
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantText != "" {
				if diff := cmp.Diff(tt.wantText, string(written)); diff != "" {
					t.Errorf("file (-want +got):\n%s", diff)
				}
			}
			reloaded := mustLoad(t, f)
			if string(reloaded.Document) != string(cfg.Document) {
				t.Errorf("Patch returned %s, but a fresh Load gives %s", cfg.Document, reloaded.Document)
			}
			if tt.checkDoc != nil {
				var doc map[string]any
				if err := json.Unmarshal(cfg.Document, &doc); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.checkDoc, doc); diff != "" {
					t.Errorf("document (-want +got):\n%s", diff)
				}
			}
			if tt.checkFunc != nil {
				tt.checkFunc(t, cfg)
			}
		})
	}
}

func TestPatchRunsTheRegisteredChecksBeforeWriting(t *testing.T) {
	f := newFixture(t, nil, map[string]string{"tandem.json": `{"permission": "ask"}`}, nil)
	l := f.loader()
	l.Check(func(cfg config.Config) error {
		if string(cfg.Permission) == `"sometimes"` {
			return errors.New(`permission: "sometimes" is not ask, allow or deny`)
		}
		return nil
	})
	if _, err := l.Patch([]byte(`{"permission": "sometimes"}`)); err == nil || !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("err = %v, want the check's Invalid error", err)
	}
	raw, _ := os.ReadFile(filepath.Join(f.project, "tandem.json"))
	if string(raw) != `{"permission": "ask"}` {
		t.Errorf("file changed to %s", raw)
	}
	if _, err := l.Patch([]byte(`{"permission": "allow"}`)); err != nil {
		t.Errorf("a valid patch failed: %v", err)
	}
}

func TestConcurrentPatchesAllLand(t *testing.T) {
	f := newFixture(t, nil, map[string]string{"tandem.jsonc": "{\n  // agents\n  \"agent\": {},\n}\n"}, nil)
	l := f.loader()
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := l.Patch(fmt.Appendf(nil, `{"agent": {"a%d": {"model": "p/m%d"}}}`, i, i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	cfg := mustLoad(t, f)
	if len(cfg.Agent) != n {
		t.Errorf("%d agents survived, want %d", len(cfg.Agent), n)
	}
	raw, _ := os.ReadFile(filepath.Join(f.project, "tandem.jsonc"))
	if !strings.Contains(string(raw), "// agents") {
		t.Errorf("comment lost:\n%s", raw)
	}
}

// switchedOn is how the MCP manager reads "enabled": servers are on unless switched off.
func switchedOn(m config.MCPConfig) bool { return m.Enabled == nil || *m.Enabled }

func TestStoredKeysAreTheTopLayer(t *testing.T) {
	f := newFixture(t, nil,
		map[string]string{"tandem.json": `{"provider": {"local": {"options": {"baseURL": "http://127.0.0.1:1/v1", "apiKey": "from-file"}}}}`},
		map[string]string{"OPENAI_API_KEY": "from-env"})
	l := f.loader()
	l.Keys(func() map[string]string {
		return map[string]string{"openai": "stored-openai", "local": "stored-local", "elsewhere": "stored-elsewhere"}
	})
	cfg, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, provider, want string
		stored               bool
	}{
		{"a stored key replaces the environment's", "openai", "stored-openai", true},
		{"a stored key replaces the file's", "local", "stored-local", true},
		{"a key for a provider neither built in nor configured is left out", "elsewhere", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cfg.Provider[tt.provider].Options.APIKey; got != tt.want {
				t.Errorf("apiKey = %q, want %q", got, tt.want)
			}
			if cfg.StoredKeys[tt.provider] != tt.stored {
				t.Errorf("StoredKeys[%s] = %v", tt.provider, cfg.StoredKeys[tt.provider])
			}
			if _, listed := cfg.Provider[tt.provider]; listed != (tt.want != "") {
				t.Errorf("provider %s listed: %v", tt.provider, listed)
			}
		})
	}
	if _, err := l.Patch([]byte(`{"username": "ada"}`)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(f.project, "tandem.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "stored-") {
		t.Errorf("a patch wrote a stored key into the project file: %s", raw)
	}
}

func TestPatchChecksSeeThePatchAndTheMergedResult(t *testing.T) {
	f := newFixture(t, nil, map[string]string{"tandem.json": `{"username": "ada"}`}, nil)
	l := f.loader()
	refuse := func(patch map[string]any, merged config.Config) error {
		if _, ok := patch["model"]; ok && merged.Username == "ada" {
			return errs.E(errs.Invalid, "model: refused")
		}
		return nil
	}
	if _, err := l.Patch([]byte(`{"model": "a/b"}`), refuse); !errs.Is(err, errs.Invalid) {
		t.Fatalf("err = %v, want the check's refusal", err)
	}
	if raw, _ := os.ReadFile(filepath.Join(f.project, "tandem.json")); string(raw) != `{"username": "ada"}` {
		t.Errorf("a refused patch changed the file: %s", raw)
	}
	if _, err := l.Patch([]byte(`{"small_model": "a/b"}`), refuse); err != nil {
		t.Errorf("a patch the check lets through failed: %v", err)
	}
}

func TestNotifyTargetsDecode(t *testing.T) {
	f := newFixture(t, map[string]string{"tandem.jsonc": `{
		"notify": [
			{"type": "webhook", "url": "https://ops.example/h", "secret": "{env:HOOK_SECRET}", "delay": 90, "backoff": "250ms", "kinds": ["permission"]},
			{"type": "ntfy", "name": "phone", "url": "https://ntfy.sh/t", "priority": "urgent", "delay": "2m", "enabled": false},
			{"type": "ntfy", "url": "https://ntfy.sh/u", "priority": 2, "delay": 1.5},
		],
	}`}, nil, map[string]string{"HOOK_SECRET": "from-the-environment"})
	cfg := mustLoad(t, f)
	if len(cfg.Notify) != 3 {
		t.Fatalf("notify %+v", cfg.Notify)
	}
	hook, phone, third := cfg.Notify[0], cfg.Notify[1], cfg.Notify[2]
	if hook.Secret != "from-the-environment" || hook.Delay.D != 90*time.Second || hook.Backoff.D != 250*time.Millisecond || hook.DisplayName(0) != "webhook-1" || !hook.Active() {
		t.Errorf("webhook %+v", hook)
	}
	if phone.Priority.Level != 5 || phone.Delay.D != 2*time.Minute || phone.DisplayName(1) != "phone" || phone.Active() {
		t.Errorf("phone %+v", phone)
	}
	if third.Priority.Level != 2 || third.Delay.D != 1500*time.Millisecond || third.DisplayName(2) != "ntfy-3" {
		t.Errorf("third %+v", third)
	}
}

func TestTwoNotifyTargetsMayNotShareAName(t *testing.T) {
	f := newFixture(t, nil, map[string]string{"tandem.json": `{"notify": [{"type": "ntfy", "url": "https://ntfy.sh/a"}, {"type": "ntfy", "name": "ntfy-1", "url": "https://ntfy.sh/b"}]}`}, nil)
	if _, err := f.loader().Load(); err == nil || !strings.Contains(err.Error(), `notify[1]: the name "ntfy-1" is taken by notify[0]`) {
		t.Fatalf("err = %v", err)
	}
}
