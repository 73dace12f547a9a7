package mcpclient

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

func mustSchema(t *testing.T, s string) *FormSchema {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	fs, err := parseFormSchema(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

const formatsSchema = `{"type":"object","properties":{
 "site":{"type":"string","format":"uri"},
 "born":{"type":"string","format":"date"},
 "at":{"type":"string","format":"date-time"},
 "hero":{"type":"string","oneOf":[{"const":"hero-1","title":"Superman"},{"const":"hero-2","title":"Batman"}],"default":"hero-1"},
 "fish":{"type":"array","items":{"anyOf":[{"const":"fish-1","title":"Tuna"},{"const":"fish-2","title":"Trout"}]},"default":["fish-1"]},
 "score":{"type":"number","maximum":10}},"required":["hero"]}`

func TestFormContentIsCheckedFieldByField(t *testing.T) {
	s := mustSchema(t, formatsSchema)
	tests := []struct {
		name    string
		content map[string]any
		want    map[string]any
		err     string
	}{
		{"defaults fill the fields left out", map[string]any{}, map[string]any{"hero": "hero-1", "fish": []string{"fish-1"}}, ""},
		{"valid formats pass", map[string]any{"site": "https://a.example/x", "born": "1815-12-10", "at": "2026-11-21T10:00:00Z", "score": 9.5},
			map[string]any{"site": "https://a.example/x", "born": "1815-12-10", "at": "2026-11-21T10:00:00Z", "score": 9.5, "hero": "hero-1", "fish": []string{"fish-1"}}, ""},
		{"a relative URI is refused", map[string]any{"site": "/x"}, nil, "content.site: must be an absolute URI"},
		{"a bad date is refused", map[string]any{"born": "10/12/1815"}, nil, "content.born: must be a date"},
		{"a date-time without zone is refused", map[string]any{"at": "2026-11-21 10:00"}, nil, "content.at: must be a date and time"},
		{"a titled choice must be one of the consts", map[string]any{"hero": "Superman"}, nil, `content.hero: "Superman" is not one of`},
		{"a titled multi-select must use the consts", map[string]any{"fish": []any{"Tuna"}}, nil, `content.fish: item 0: "Tuna"`},
		{"a number above the maximum is refused", map[string]any{"score": 11.0}, nil, "content.score: must be at most 10"},
		{"a string is not a number", map[string]any{"score": "9"}, nil, "content.score: must be a number"},
		{"a choice may not be repeated", map[string]any{"fish": []any{"fish-1", "fish-1"}}, nil, `content.fish: item 1: "fish-1" is chosen twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Check(tt.content)
			if tt.err != "" {
				if !errs.Is(err, errs.Invalid) || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error = %v, want Invalid starting %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnsupportedSchemasAreRefused(t *testing.T) {
	for name, s := range map[string]string{
		"a non-object root":       `{"type":"array"}`,
		"a nested object":         `{"type":"object","properties":{"a":{"type":"object"}}}`,
		"an array without values": `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var v any
			_ = json.Unmarshal([]byte(s), &v)
			if _, err := parseFormSchema(v, nil); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestTheSchemaIsShownAsTheServerSentIt(t *testing.T) {
	s := mustSchema(t, formatsSchema)
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(got, &a)
	_ = json.Unmarshal([]byte(formatsSchema), &b)
	if !cmp.Equal(a, b) {
		t.Fatalf("marshalled schema %s differs from the original", got)
	}
}

func TestSchemaAsSentKeepsThePropertyOrder(t *testing.T) {
	const sent = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string","format":"email"}},"required":["name"]}`
	params, err := json.Marshal(map[string]any{"message": "Who are you?", "requestedSchema": json.RawMessage(sent)})
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal([]byte(sent), &decoded); err != nil {
		t.Fatal(err)
	}
	s := newSentSchemas()
	s.note(params)
	t.Run("clients see the schema as the server wrote it, name first", func(t *testing.T) {
		fs, err := parseFormSchema(decoded, s.take(decoded))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(fs)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != sent {
			t.Errorf("schema = %s, want %s", got, sent)
		}
		if _, err := fs.Check(map[string]any{"name": "Ada", "age": 36.0}); err != nil {
			t.Errorf("Check = %v", err)
		}
	})
	t.Run("a schema is taken once, then the decoded one is used", func(t *testing.T) {
		if got := s.take(decoded); got != nil {
			t.Fatalf("second take = %s", got)
		}
		fs, err := parseFormSchema(decoded, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(fs)
		if !strings.HasPrefix(string(got), `{"properties":{"age"`) {
			t.Errorf("decoded schema = %s", got)
		}
	})
}
