package provider_test

import (
	"slices"
	"testing"

	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestTheSchemaCheckerCatchesMistakes(t *testing.T) {
	s := testenv.LoadSchemas(t, "testdata/opencode-schemas.json")
	bad := map[string]any{
		"all":       []any{map[string]any{"id": "x", "name": "X", "source": "nowhere", "env": []any{}, "options": map[string]any{}, "models": map[string]any{}, "extra": 1}},
		"default":   map[string]any{},
		"connected": []any{},
	}
	problems := s.Problems(t, "GET /provider", bad)
	want := []string{`$.all[0]: unexpected property "extra"`, `$.all[0].source: nowhere is not one of [env config custom api]`}
	for _, w := range want {
		if !slices.Contains(problems, w) {
			t.Errorf("checker missed %q; it said %q", w, problems)
		}
	}
	if p := s.Problems(t, "GET /provider", map[string]any{"all": []any{}}); len(p) != 2 {
		t.Errorf("missing default and connected should give 2 problems, got %q", p)
	}
}
