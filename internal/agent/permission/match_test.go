package permission

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		name             string
		pattern, subject string
		want             bool
	}{
		{"a star matches everything", "*", "rm -rf /", true},
		{"a star matches the empty string", "*", "", true},
		{"a literal matches itself", "git status", "git status", true},
		{"a literal does not match a longer command", "git status", "git status --short", false},
		{"a trailing space-star matches the arguments", "git status *", "git status --short", true},
		{"a trailing space-star also matches the bare command", "git status *", "git status", true},
		{"a trailing space-star does not match a longer word", "git status *", "git statusx", false},
		{"a trailing space-star does not match another command", "git status *", "git push", false},
		{"a star in the middle spans words", "git * --force", "git push origin --force", true},
		{"a star in the middle needs the suffix", "git * --force", "git push origin", false},
		{"a question mark is one character", "ca?", "cat", true},
		{"a question mark is not zero characters", "ca?", "ca", false},
		{"matching is case-sensitive", "Echo *", "echo hi", false},
		{"backtracking finds a later suffix", "*.go", "a.go.txt.go", true},
		{"several stars backtrack", "a*b*c", "axxbyybzzc", true},
		{"several stars fail cleanly", "a*b*c", "axxbyyb", false},
		{"a path pattern matches below it", "src/*", "src/deep/file.go", true},
		{"an empty pattern matches only the empty string", "", "x", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Match(c.pattern, c.subject); got != c.want {
				t.Fatalf("Match(%q, %q) = %v, want %v", c.pattern, c.subject, got, c.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	bashRules := []Rule{
		{Permission: "bash", Pattern: "*", Action: Ask},
		{Permission: "bash", Pattern: "echo *", Action: Allow},
		{Permission: "bash", Pattern: "rm *", Action: Deny},
		{Permission: "bash", Pattern: "rm -i *", Action: Ask},
	}
	cases := []struct {
		name       string
		rules      []Rule
		permission string
		pattern    string
		want       Action
	}{
		{"no rules ask", nil, "bash", "ls", Ask},
		{"a matching allow allows", bashRules, "bash", "echo hi", Allow},
		{"a matching deny denies", bashRules, "bash", "rm -rf x", Deny},
		{"the last matching rule wins over an earlier deny", bashRules, "bash", "rm -i x", Ask},
		{"an unmatched command falls back to the catch-all", bashRules, "bash", "ls -la", Ask},
		{"rules of another permission do not apply", bashRules, "edit", "echo hi", Ask},
		{"a later catch-all overrides earlier specific rules", append(append([]Rule{}, bashRules...), Rule{Permission: "*", Pattern: "*", Action: Deny}), "bash", "echo hi", Deny},
		{"the permission is a wildcard too", []Rule{{Permission: "mcp_*", Pattern: "*", Action: Allow}}, "mcp_search", "x", Allow},
		{"defaults allow reads", Defaults(), "read", "src/main.go", Allow},
		{"defaults allow todo bookkeeping", Defaults(), "todowrite", "*", Allow},
		{"defaults ask for bash", Defaults(), "bash", "ls", Ask},
		{"defaults ask for edits", Defaults(), "edit", "main.go", Ask},
		{"defaults ask outside the project", Defaults(), "external_directory", "/etc/*", Ask},
		{"defaults ask for MCP tools", Defaults(), "github_create_issue", "*", Ask},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Evaluate(c.rules, c.permission, c.pattern); got != c.want {
				t.Fatalf("Evaluate(%s %q) = %s, want %s", c.permission, c.pattern, got, c.want)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want Config
	}{
		{"nothing configured is no rules", ``, Config{}},
		{"null is no rules", `null`, Config{}},
		{"one action applies to everything", `"allow"`, Config{Rules: []Rule{{Permission: "*", Pattern: "*", Action: Allow}}}},
		{"a per-permission action covers every pattern", `{"edit": "deny"}`, Config{Rules: []Rule{{Permission: "edit", Pattern: "*", Action: Deny}}}},
		{"pattern maps keep their written order", `{"bash": {"*": "ask", "git *": "allow", "git push *": "deny"}}`,
			Config{Rules: []Rule{{Permission: "bash", Pattern: "*", Action: Ask}, {Permission: "bash", Pattern: "git *", Action: Allow}, {Permission: "bash", Pattern: "git push *", Action: Deny}}}},
		{"keys keep their written order across permissions", `{"read": "allow", "bash": {"echo *": "allow", "rm *": "deny"}, "edit": "ask"}`,
			Config{Rules: []Rule{{Permission: "read", Pattern: "*", Action: Allow}, {Permission: "bash", Pattern: "echo *", Action: Allow}, {Permission: "bash", Pattern: "rm *", Action: Deny}, {Permission: "edit", Pattern: "*", Action: Ask}}}},
		{"a timeout in seconds", `{"timeout": 1, "bash": "ask"}`, Config{Timeout: time.Second, Rules: []Rule{{Permission: "bash", Pattern: "*", Action: Ask}}}},
		{"a fractional timeout", `{"timeout": 0.25}`, Config{Timeout: 250 * time.Millisecond}},
		{"a timeout as a duration string", `{"timeout": "5m"}`, Config{Timeout: 5 * time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseConfig(json.RawMessage(c.raw))
			if err != nil {
				t.Fatalf("ParseConfig(%s): %v", c.raw, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("ParseConfig(%s) (-want +got):\n%s", c.raw, diff)
			}
		})
	}
}

func TestParseConfigRejectsBadInput(t *testing.T) {
	cases := []struct {
		name, raw, says string
	}{
		{"an unknown action", `"maybe"`, `permission: expected "ask" | "allow" | "deny", got "maybe"`},
		{"actions are case-sensitive", `{"bash": "Allow"}`, `permission.bash: expected "ask" | "allow" | "deny", got "Allow"`},
		{"a bad action under a pattern names the pattern", `{"bash": {"rm *": "nope"}}`, `permission.bash["rm *"]`},
		{"a non-string action under a pattern", `{"bash": {"rm *": 1}}`, `permission.bash["rm *"]`},
		{"a list is neither an action nor an object", `["allow"]`, `permission: expected`},
		{"a number for a permission", `{"bash": 3}`, `permission.bash: expected an action or {pattern: action}`},
		{"a negative timeout", `{"timeout": -1}`, `permission.timeout: must not be negative`},
		{"an unparsable timeout string", `{"timeout": "soon"}`, `permission.timeout: expected seconds or a duration`},
		{"a timeout of the wrong type", `{"timeout": true}`, `permission.timeout`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig(json.RawMessage(c.raw))
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("ParseConfig(%s) = %v, want an error saying %q", c.raw, err, c.says)
			}
		})
	}
}

func TestParseReply(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"once is accepted", "once", true},
		{"always is accepted", "always", true},
		{"reject is accepted", "reject", true},
		{"a capitalised reply is refused, as OpenCode does", "Once", false},
		{"an unknown reply is refused", "sometimes", false},
		{"an empty reply is refused", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseReply(c.in)
			if (err == nil) != c.ok || (c.ok && string(r) != c.in) {
				t.Fatalf("ParseReply(%q) = %q, %v", c.in, r, err)
			}
		})
	}
}
