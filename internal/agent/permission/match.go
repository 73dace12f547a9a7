package permission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Match reports whether s matches a wildcard pattern: * is any run of characters, ? one character.
// A pattern ending in " *" also matches the bare command ("git status *" matches "git status").
func Match(pattern, s string) bool {
	if wildcard(pattern, s) {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, " *"); ok {
		return wildcard(base, s)
	}
	return false
}

func wildcard(p, s string) bool {
	// Iterative glob with backtracking on the last star: linear in practice, no regexp compile.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// Evaluate returns the action of the last rule matching permission and pattern, and Ask when none does.
func Evaluate(rules []Rule, permission, pattern string) Action {
	action := Ask
	for _, r := range rules {
		if Match(r.Permission, permission) && Match(r.Pattern, pattern) {
			action = r.Action
		}
	}
	return action
}

// Decide returns what a call gets from the user's rules (the defaults, the configuration, the
// agent's) and the rules a client set on its session together. The user's rules decide; the
// session's last matching rule can only make that stricter: its ask turns an allow into an ask,
// its deny refuses. A session rule never loosens what the user's rules ask or deny, so a client
// (an MCP client's model, a script) cannot approve its own calls: ignored is the session's allow
// that would have, when there is one, so the caller can say so. by is the session rule that made
// the call stricter, if one did.
func Decide(user, session []Rule, permission, pattern string) (action Action, by, ignored *Rule) {
	action = Evaluate(user, permission, pattern)
	var last *Rule
	for i := range session {
		if Match(session[i].Permission, permission) && Match(session[i].Pattern, pattern) {
			last = &session[i]
		}
	}
	switch {
	case last == nil:
	case strictness(last.Action) > strictness(action):
		return last.Action, last, nil
	case last.Action == Allow && action != Allow:
		return action, nil, last
	}
	return action, nil, nil
}

// strictness orders the actions: allow, then ask, then deny.
func strictness(a Action) int {
	switch a {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2
}

// Defaults are the rules before any configuration: reads and bookkeeping are allowed; commands,
// edits, MCP tools and anything outside the session directory ask.
func Defaults() []Rule {
	rules := []Rule{{Permission: "*", Pattern: "*", Action: Ask}}
	for _, p := range []string{"read", "list", "glob", "grep", "todoread", "todowrite", "question", "lsp"} {
		rules = append(rules, Rule{Permission: p, Pattern: "*", Action: Allow})
	}
	return rules
}

// Config is the parsed `permission` entry of the config file.
type Config struct {
	Rules []Rule
	// Timeout rejects requests nobody answers in time; zero waits forever.
	Timeout time.Duration
}

// ParseConfig reads OpenCode's permission config: "ask"|"allow"|"deny", or an object whose keys are
// permissions mapped to an action or to {pattern: action} in order. tandem adds "timeout": seconds
// or a duration string ("90s", "5m").
//
// An error names the offending value by its JSON pointer (ConfigError.Pointer), so the config loader
// can report the file, line and column that set it.
func ParseConfig(raw json.RawMessage) (Config, error) {
	c, pointer, err := parseConfig(raw)
	if err != nil {
		return Config{}, &ConfigError{pointer: pointer, err: err}
	}
	return c, nil
}

// ConfigError is a problem in the permission config.
type ConfigError struct {
	pointer string
	err     error
}

func (e *ConfigError) Error() string { return e.err.Error() }

func (e *ConfigError) Unwrap() error { return e.err }

// Pointer is the JSON pointer (RFC 6901) of the value at fault, from the configuration's root.
func (e *ConfigError) Pointer() string { return e.pointer }

// pointerTo builds a JSON pointer from keys, escaping "~" and "/".
func pointerTo(keys ...string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func parseConfig(raw json.RawMessage) (c Config, pointer string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return c, "", nil
	}
	var action string
	if json.Unmarshal(raw, &action) == nil {
		a, err := parseAction(action, "permission")
		if err != nil {
			return c, pointerTo("permission"), err
		}
		c.Rules = []Rule{{Permission: "*", Pattern: "*", Action: a}}
		return c, "", nil
	}
	keys, values, err := orderedObject(raw)
	if err != nil {
		return c, pointerTo("permission"), fmt.Errorf("permission: expected \"ask\" | \"allow\" | \"deny\" or an object: %w", err)
	}
	for i, key := range keys {
		v := values[i]
		if key == "timeout" {
			if c.Timeout, err = parseTimeout(v); err != nil {
				return c, pointerTo("permission", key), err
			}
			continue
		}
		if json.Unmarshal(v, &action) == nil {
			a, err := parseAction(action, "permission."+key)
			if err != nil {
				return c, pointerTo("permission", key), err
			}
			c.Rules = append(c.Rules, Rule{Permission: key, Pattern: "*", Action: a})
			continue
		}
		patterns, actions, err := orderedObject(v)
		if err != nil {
			return c, pointerTo("permission", key), fmt.Errorf("permission.%s: expected an action or {pattern: action}: %w", key, err)
		}
		for j, pattern := range patterns {
			if json.Unmarshal(actions[j], &action) != nil {
				return c, pointerTo("permission", key, pattern), fmt.Errorf("permission.%s[%q]: expected \"ask\" | \"allow\" | \"deny\"", key, pattern)
			}
			a, err := parseAction(action, fmt.Sprintf("permission.%s[%q]", key, pattern))
			if err != nil {
				return c, pointerTo("permission", key, pattern), err
			}
			c.Rules = append(c.Rules, Rule{Permission: key, Pattern: pattern, Action: a})
		}
	}
	return c, "", nil
}

func parseAction(s, where string) (Action, error) {
	switch a := Action(s); a {
	case Allow, Ask, Deny:
		return a, nil
	}
	return "", fmt.Errorf("%s: expected \"ask\" | \"allow\" | \"deny\", got %q", where, s)
}

func parseTimeout(v json.RawMessage) (time.Duration, error) {
	var secs float64
	if json.Unmarshal(v, &secs) == nil {
		if secs < 0 {
			return 0, fmt.Errorf("permission.timeout: must not be negative")
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("permission.timeout: expected seconds or a duration like \"5m\", got %q", s)
		}
		return d, nil
	}
	return 0, fmt.Errorf("permission.timeout: expected seconds or a duration like \"5m\"")
}

// orderedObject splits a JSON object into its keys and raw values, keeping their order (rule order matters).
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, key), append(values, v)
	}
	return keys, values, nil
}
