package permission

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
)

// Directories lists the directories for which a request of permission (external_directory) would
// be allowed without asking, by the user's rules or by remembered grants: the kernel sandbox lets a
// command write them although the command itself named none. Only patterns that name one directory
// count, "/abs/dir/*" or "/abs/dir/**"; a pattern with a wildcard elsewhere ("*") names none, so
// "never ask about directories" never becomes "let commands write everywhere". A directory with a
// deny or ask rule for a directory inside it is left out whole.
func (g gate) Directories(ctx context.Context, permission string) ([]string, error) {
	user, grants, _, err := g.s.rulesFor(ctx, g.sc)
	if err != nil {
		return nil, err
	}
	rules := append(slices.Clip(user), g.sc.Rules...)
	for _, l := range g.sc.Within {
		rules = append(rules, l.Rules...) // a parent's deny or ask of a directory inside narrows it too
	}
	var dirs []string
	for _, r := range append(slices.Clone(rules), grants...) {
		if r.Action != Allow || !Match(r.Permission, permission) {
			continue
		}
		dir, ok := namedDirectory(r.Pattern)
		if !ok || slices.Contains(dirs, dir) {
			continue
		}
		// The decision check makes for this directory, without asking.
		pattern := filepath.ToSlash(filepath.Join(dir, "*"))
		if a, _ := grantFor(grants, permission, pattern); a == Deny {
			continue
		}
		if narrower(append(slices.Clone(rules), grants...), permission, dir) {
			continue // Landlock grants whole trees: a deny or ask for a directory inside wins
		}
		action, _, _, _ := decide(user, Scope{Rules: g.sc.Rules, Within: g.sc.Within}, permission, pattern)
		switch action {
		case Allow:
			dirs = append(dirs, dir)
		case Ask:
			if granted(grants, permission, pattern) {
				dirs = append(dirs, dir)
			}
		}
	}
	return dirs, nil
}

// namedDirectory reads "/abs/dir/*" or "/abs/dir/**" as /abs/dir.
func namedDirectory(pattern string) (string, bool) {
	dir, ok := strings.CutSuffix(pattern, "/**")
	if !ok {
		dir, ok = strings.CutSuffix(pattern, "/*")
	}
	if !ok || !strings.HasPrefix(dir, "/") || strings.ContainsAny(dir, "*?[") || filepath.Clean(dir) != dir || dir == "/" {
		return "", false
	}
	return dir, true
}

// narrower reports whether a rule that does not allow (deny, ask) names a directory inside dir.
func narrower(rules []Rule, permission, dir string) bool {
	for _, r := range rules {
		if r.Action == Allow || !Match(r.Permission, permission) {
			continue
		}
		if inner, ok := namedDirectory(r.Pattern); ok && inner != dir && strings.HasPrefix(inner, dir+"/") {
			return true
		}
	}
	return false
}
