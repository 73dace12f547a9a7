package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/permission"
)

// rules parses the merged permission entry as the server does.
func rules(t *testing.T, raw json.RawMessage) []permission.Rule {
	t.Helper()
	pc, err := permission.ParseConfig(raw)
	if err != nil {
		t.Fatalf("ParseConfig(%s): %v", raw, err)
	}
	return pc.Rules
}

func rule(perm, pattern string, a permission.Action) permission.Rule {
	return permission.Rule{Permission: perm, Pattern: pattern, Action: a}
}

func TestPermissionRulesKeepTheirOrderThroughTheMerge(t *testing.T) {
	const allow, ask, deny = permission.Allow, permission.Ask, permission.Deny
	tests := []struct {
		name    string
		user    map[string]string
		project map[string]string
		want    []permission.Rule
		// decides maps a bash command to what the merged rules must say about it.
		decides map[string]permission.Action
	}{
		{
			name: "a file's rules keep the file's order, so a later deny beats an earlier allow",
			user: map[string]string{"tandem.json": `{"permission": {"bash": {"npm*": "allow", "npm publish*": "deny"}}}`},
			want: []permission.Rule{rule("bash", "npm*", allow), rule("bash", "npm publish*", deny)},
			decides: map[string]permission.Action{
				"npm ci": allow, "npm publish --tag next": deny,
			},
		},
		{
			name: "a JSONC file with comments and trailing commas keeps its order",
			user: map[string]string{"tandem.jsonc": `{
				// the project's scripts are fine
				"permission": {
					"bash": {
						"npm*": "allow", /* but never publish */
						"npm publish*": "deny",
					},
				},
			}`},
			want:    []permission.Rule{rule("bash", "npm*", allow), rule("bash", "npm publish*", deny)},
			decides: map[string]permission.Action{"npm publish": deny},
		},
		{
			name: "permission keys keep the file's order, not the alphabet's",
			user: map[string]string{"tandem.json": `{"permission": {"webfetch": "deny", "*": "allow"}}`},
			want: []permission.Rule{rule("webfetch", "*", deny), rule("*", "*", allow)},
		},
		{
			name:    "a project's rules come after the user's, so they win where both match",
			user:    map[string]string{"tandem.json": `{"permission": {"bash": {"*": "ask", "git *": "allow"}}}`},
			project: map[string]string{"tandem.json": `{"permission": {"bash": {"git push *": "deny"}}}`},
			want:    []permission.Rule{rule("bash", "*", ask), rule("bash", "git *", allow), rule("bash", "git push *", deny)},
			decides: map[string]permission.Action{"git status": allow, "git push origin": deny, "ls": ask},
		},
		{
			name:    "a pattern a later file sets again moves after the earlier file's rules",
			user:    map[string]string{"tandem.json": `{"permission": {"bash": {"*": "allow", "rm *": "deny"}}}`},
			project: map[string]string{"tandem.json": `{"permission": {"bash": {"*": "ask"}}}`},
			want:    []permission.Rule{rule("bash", "rm *", deny), rule("bash", "*", ask)},
			decides: map[string]permission.Action{"rm -rf x": ask, "ls": ask},
		},
		{
			name:    "a permission key a later file sets again moves after the earlier file's keys",
			user:    map[string]string{"tandem.json": `{"permission": {"bash": "deny", "*": "allow"}}`},
			project: map[string]string{"tandem.json": `{"permission": {"bash": {"ls *": "deny"}}}`},
			want:    []permission.Rule{rule("*", "*", allow), rule("bash", "ls *", deny)},
			decides: map[string]permission.Action{"ls": deny, "cat x": allow},
		},
		{
			name:    "tandem.json's rules come after tandem.jsonc's in the same directory",
			project: map[string]string{"tandem.jsonc": `{"permission": {"bash": {"make *": "allow", "*": "ask"}}}`, "tandem.json": `{"permission": {"bash": {"make *": "allow"}}}`},
			want:    []permission.Rule{rule("bash", "*", ask), rule("bash", "make *", allow)},
			decides: map[string]permission.Action{"make test": allow},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, newFixture(t, tt.user, tt.project, nil))
			got := rules(t, cfg.Permission)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			for cmd, want := range tt.decides {
				if a := permission.Evaluate(got, "bash", cmd); a != want {
					t.Errorf("%q: %s, want %s", cmd, a, want)
				}
			}
			var doc struct {
				Permission json.RawMessage `json:"permission"`
			}
			if err := json.Unmarshal(cfg.Document, &doc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rules(t, doc.Permission)); diff != "" {
				t.Errorf("the document GET /config serves has other rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnAgentsRulesKeepTheirOrder(t *testing.T) {
	cfg := mustLoad(t, newFixture(t, map[string]string{"tandem.json": `{"agent": {"review": {"permission": {"bash": {"z*": "allow", "a*": "deny"}}}}}`}, nil, nil))
	var agent struct {
		Permission json.RawMessage `json:"permission"`
	}
	if err := json.Unmarshal(cfg.Agent["review"], &agent); err != nil {
		t.Fatal(err)
	}
	want := []permission.Rule{rule("bash", "z*", permission.Allow), rule("bash", "a*", permission.Deny)}
	if diff := cmp.Diff(want, rules(t, agent.Permission)); diff != "" {
		t.Errorf("agent rules (-want +got):\n%s", diff)
	}
}

func TestPatchedRulesKeepThePatchsOrder(t *testing.T) {
	const allow, ask, deny = permission.Allow, permission.Ask, permission.Deny
	tests := []struct {
		name    string
		project string
		patch   string
		want    []permission.Rule
	}{
		{
			name:  "rules a patch adds to a new file are written in the patch's order",
			patch: `{"permission": {"bash": {"npm*": "allow", "npm publish*": "deny"}}}`,
			want:  []permission.Rule{rule("bash", "npm*", allow), rule("bash", "npm publish*", deny)},
		},
		{
			name:    "rules a patch adds to a permission object come after the file's, in the patch's order",
			project: `{"permission": {"bash": {"*": "ask"}}}`,
			patch:   `{"permission": {"bash": {"npm*": "allow", "npm publish*": "deny"}}}`,
			want:    []permission.Rule{rule("bash", "*", ask), rule("bash", "npm*", allow), rule("bash", "npm publish*", deny)},
		},
		{
			name:    "a patch that replaces a rule's action leaves it where the file has it",
			project: `{"permission": {"bash": {"npm*": "ask", "npm publish*": "deny"}}}`,
			patch:   `{"permission": {"bash": {"npm*": "allow"}}}`,
			want:    []permission.Rule{rule("bash", "npm*", allow), rule("bash", "npm publish*", deny)},
		},
		{
			name:    "permission keys a patch adds keep the patch's order",
			project: `{"model": "a/b"}`,
			patch:   `{"permission": {"webfetch": "deny", "*": "allow", "bash": {"z*": "deny", "a*": "ask"}}}`,
			want:    []permission.Rule{rule("webfetch", "*", deny), rule("*", "*", allow), rule("bash", "z*", deny), rule("bash", "a*", ask)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project := map[string]string{}
			if tt.project != "" {
				project["tandem.json"] = tt.project
			}
			f := newFixture(t, nil, project, nil)
			cfg, err := f.loader().Patch([]byte(tt.patch))
			if err != nil {
				t.Fatalf("Patch: %v", err)
			}
			if diff := cmp.Diff(tt.want, rules(t, cfg.Permission)); diff != "" {
				t.Errorf("rules after the patch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, rules(t, mustLoad(t, f).Permission)); diff != "" {
				written, _ := os.ReadFile(filepath.Join(f.project, "tandem.json"))
				t.Errorf("rules read back from the file (-want +got):\n%s\nfile:\n%s", diff, written)
			}
		})
	}
}

func TestThePatchOrderIsTheOrderOfItsText(t *testing.T) {
	// A key written twice in a patch counts once, at its last value and place, as a decoder reads it.
	f := newFixture(t, nil, nil, nil)
	cfg, err := f.loader().Patch([]byte(`{"permission": {"bash": {"a*": "deny", "b*": "allow", "a*": "ask"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := rules(t, cfg.Permission)
	want := []permission.Rule{rule("bash", "b*", permission.Allow), rule("bash", "a*", permission.Ask)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if strings.Count(string(cfg.Document), `"a*"`) != 1 {
		t.Errorf("document %s", cfg.Document)
	}
}
