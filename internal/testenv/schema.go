package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Schemas are OpenCode's response schemas, extracted from its openapi.json into a package's
// testdata as {"responses": {name: schema}, "components": {"schemas": {...}}}, so a test can check
// that what tandem sends is what OpenCode's clients accept.
type Schemas struct {
	Responses  map[string]any `json:"responses"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

// LoadSchemas reads a schema extract, or fails the test.
func LoadSchemas(tb testing.TB, path string) *Schemas {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var s Schemas
	if err := json.Unmarshal(raw, &s); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return &s
}

// Problems checks value against the named response schema and returns every violation. value is
// JSON text ([]byte, json.RawMessage) or Go data, which is checked as it marshals.
func (s *Schemas) Problems(tb testing.TB, response string, value any) []string {
	tb.Helper()
	schema, ok := s.Responses[response]
	if !ok {
		tb.Fatalf("no OpenCode schema for %s", response)
	}
	raw, ok := value.([]byte)
	if r, isRaw := value.(json.RawMessage); isRaw {
		raw, ok = r, true
	}
	if !ok {
		var err error
		if raw, err = json.Marshal(value); err != nil {
			tb.Fatal(err)
		}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatalf("%s: %v in %s", response, err, raw)
	}
	var problems []string
	s.check(schema, doc, "$", &problems)
	return problems
}

// check implements the subset of JSON Schema that OpenCode's document uses: $ref, anyOf, type,
// enum, required, properties, additionalProperties, items and minimum.
func (s *Schemas) check(schema, v any, path string, problems *[]string) {
	sch, _ := schema.(map[string]any)
	if sch == nil {
		return
	}
	if ref, ok := sch["$ref"].(string); ok {
		target, ok := s.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
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
	if typ, ok := sch["type"].(string); ok && !hasJSONType(typ, v) {
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
		required, _ := sch["required"].([]any)
		for _, r := range required {
			if name, _ := r.(string); name != "" {
				if _, ok := v[name]; !ok {
					*problems = append(*problems, fmt.Sprintf("%s: missing required %q", path, name))
				}
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

func hasJSONType(typ string, v any) bool {
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
