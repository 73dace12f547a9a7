package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// openapiSchemas are the OpenCode schemas the listings must satisfy, extracted from
// reference/opencode/openapi.json into testdata.
type openapiSchemas struct {
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
	Responses map[string]any `json:"responses"`
}

func loadSchemas(t *testing.T) openapiSchemas {
	t.Helper()
	raw, err := os.ReadFile("testdata/opencode-schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	var s openapiSchemas
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// validate checks value (Go data, marshalled and re-read as JSON) against one of the responses
// and returns every violation.
func (s openapiSchemas) validate(t *testing.T, response string, value any) []string {
	t.Helper()
	schema, ok := s.Responses[response]
	if !ok {
		t.Fatalf("no schema for %s", response)
	}
	raw, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var problems []string
	s.check(schema, doc, "$", &problems)
	return problems
}

// check implements the subset of JSON Schema the OpenCode document uses: $ref, anyOf, type,
// enum, required, properties, additionalProperties, items and minimum.
func (s openapiSchemas) check(schema, v any, path string, problems *[]string) {
	sch, _ := schema.(map[string]any)
	if sch == nil {
		return
	}
	if ref, ok := sch["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		target, ok := s.Components.Schemas[name]
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: unresolved %s", path, ref))
			return
		}
		s.check(target, v, path, problems)
		return
	}
	if anyOf, ok := sch["anyOf"].([]any); ok {
		var all []string
		for _, alt := range anyOf {
			var p []string
			s.check(alt, v, path, &p)
			if len(p) == 0 {
				return
			}
			all = append(all, p...)
		}
		*problems = append(*problems, fmt.Sprintf("%s: matches no alternative: %s", path, strings.Join(all, "; ")))
		return
	}
	if typ, ok := sch["type"].(string); ok && !hasType(typ, v) {
		*problems = append(*problems, fmt.Sprintf("%s: want %s, got %T", path, typ, v))
		return
	}
	if enum, ok := sch["enum"].([]any); ok && !slices.Contains(enum, v) {
		*problems = append(*problems, fmt.Sprintf("%s: %v is not one of %v", path, v, enum))
	}
	if min, ok := sch["minimum"].(float64); ok {
		if n, isNum := v.(float64); isNum && n < min {
			*problems = append(*problems, fmt.Sprintf("%s: %v < minimum %v", path, n, min))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := sch["properties"].(map[string]any)
		for _, r := range asStrings(sch["required"]) {
			if _, ok := v[r]; !ok {
				*problems = append(*problems, fmt.Sprintf("%s: missing required %q", path, r))
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := props[k]; ok {
				s.check(p, v[k], path+"."+k, problems)
				continue
			}
			switch extra := sch["additionalProperties"].(type) {
			case bool:
				if !extra {
					*problems = append(*problems, fmt.Sprintf("%s: unexpected property %q", path, k))
				}
			case map[string]any:
				s.check(extra, v[k], path+"."+k, problems)
			}
		}
	case []any:
		for i, item := range v {
			s.check(sch["items"], item, fmt.Sprintf("%s[%d]", path, i), problems)
		}
	}
}

func hasType(typ string, v any) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		n, ok := v.(float64)
		return ok && n == float64(int64(n))
	case "null":
		return v == nil
	}
	return true
}

func asStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestTheSchemaCheckerCatchesMistakes(t *testing.T) {
	s := loadSchemas(t)
	bad := map[string]any{
		"all":       []any{map[string]any{"id": "x", "name": "X", "source": "nowhere", "env": []any{}, "options": map[string]any{}, "models": map[string]any{}, "extra": 1}},
		"default":   map[string]any{},
		"connected": []any{},
	}
	problems := s.validate(t, "GET /provider", bad)
	want := []string{`$.all[0]: unexpected property "extra"`, `$.all[0].source: nowhere is not one of [env config custom api]`}
	for _, w := range want {
		if !slices.Contains(problems, w) {
			t.Errorf("checker missed %q; it said %q", w, problems)
		}
	}
	if p := s.validate(t, "GET /provider", map[string]any{"all": []any{}}); len(p) != 2 {
		t.Errorf("missing default and connected should give 2 problems, got %q", p)
	}
}
