package mcpclient

import (
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// FormSchema is the requested schema of a form elicitation: a flat object of primitive fields, as the
// MCP 2025-11-25 specification limits it.
type FormSchema struct {
	Type       string            `json:"type,omitempty"`
	Properties map[string]*Field `json:"properties,omitempty"`
	Required   []string          `json:"required,omitempty"`
	raw        json.RawMessage   // what the server sent, so clients see it unchanged
	order      []string          // property names, sorted, for stable error messages
}

// Field is one property of a form.
type Field struct {
	Type        string   `json:"type"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Format      string   `json:"format,omitempty"`
	MinLength   *int     `json:"minLength,omitempty"`
	MaxLength   *int     `json:"maxLength,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	OneOf       []Choice `json:"oneOf,omitempty"`
	Items       *Items   `json:"items,omitempty"`
	MinItems    *int     `json:"minItems,omitempty"`
	MaxItems    *int     `json:"maxItems,omitempty"`
	Default     any      `json:"default,omitempty"`
}

// Items describes the values of a multi-select field.
type Items struct {
	Type  string   `json:"type,omitempty"`
	Enum  []string `json:"enum,omitempty"`
	AnyOf []Choice `json:"anyOf,omitempty"`
}

// Choice is one titled option of a single- or multi-select field.
type Choice struct {
	Const string `json:"const"`
	Title string `json:"title,omitempty"`
}

// parseFormSchema reads the requestedSchema of an elicitation as the SDK decoded it. sent is the same
// schema as the server wrote it, when known: clients get it unchanged, properties in their order.
func parseFormSchema(v any, sent json.RawMessage) (*FormSchema, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(sent) > 0 {
		raw = sent
	}
	s := &FormSchema{raw: raw}
	if v == nil || string(raw) == "null" {
		s.raw = json.RawMessage(`{"type":"object","properties":{}}`)
		return s, nil
	}
	type fields FormSchema // the struct's own decoding, not UnmarshalJSON's
	if err := json.Unmarshal(raw, (*fields)(s)); err != nil {
		return nil, fmt.Errorf("requestedSchema: %w", err)
	}
	if s.Type != "" && s.Type != "object" {
		return nil, fmt.Errorf("requestedSchema: type must be object, got %q", s.Type)
	}
	for name, f := range s.Properties {
		if f == nil {
			return nil, fmt.Errorf("requestedSchema.properties.%s: empty", name)
		}
		switch f.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			if f.Items == nil || (len(f.Items.Enum) == 0 && len(f.Items.AnyOf) == 0) {
				return nil, fmt.Errorf("requestedSchema.properties.%s: an array must list its choices in items.enum or items.anyOf", name)
			}
		default:
			return nil, fmt.Errorf("requestedSchema.properties.%s: unsupported type %q", name, f.Type)
		}
		s.order = append(s.order, name)
	}
	sort.Strings(s.order)
	return s, nil
}

// MarshalJSON gives clients the schema exactly as the server sent it.
func (s *FormSchema) MarshalJSON() ([]byte, error) { return s.raw, nil }

// UnmarshalJSON reads a schema MarshalJSON wrote (a stored elicitation), as parseFormSchema does.
func (s *FormSchema) UnmarshalJSON(data []byte) error {
	parsed, err := parseFormSchema(json.RawMessage(data), data)
	if err != nil {
		return err
	}
	*s = *parsed
	return nil
}

// choices returns the allowed values of a single-select string field, or nil when any string goes.
func (f *Field) choices() []string {
	if len(f.Enum) > 0 {
		return f.Enum
	}
	out := make([]string, 0, len(f.OneOf))
	for _, c := range f.OneOf {
		out = append(out, c.Const)
	}
	return out
}

// itemChoices returns the allowed values of a multi-select field.
func (f *Field) itemChoices() []string {
	if len(f.Items.Enum) > 0 {
		return f.Items.Enum
	}
	out := make([]string, 0, len(f.Items.AnyOf))
	for _, c := range f.Items.AnyOf {
		out = append(out, c.Const)
	}
	return out
}

// Check validates a person's answer against the schema and returns it with the schema's defaults
// filled in for the fields left out (the specification asks clients to pre-fill defaults, so an
// omitted field means "the default"). The first problem is an Invalid error naming the field, e.g.
// "content.email: must be an email address".
func (s *FormSchema) Check(content map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(s.Properties))
	names := make([]string, 0, len(content))
	for k := range content {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := s.Properties[k]; !ok {
			return nil, errs.E(errs.Invalid, "content.%s: not a field of the requested form", k)
		}
	}
	for _, name := range s.order {
		f := s.Properties[name]
		v, ok := content[name]
		if !ok || v == nil {
			if f.Default == nil {
				continue
			}
			v = f.Default
		}
		norm, err := f.check(v)
		if err != nil {
			return nil, errs.E(errs.Invalid, "content.%s: %s", name, err)
		}
		out[name] = norm
	}
	for _, name := range s.Required {
		if _, ok := out[name]; !ok {
			return nil, errs.E(errs.Invalid, "content.%s: required", name)
		}
	}
	return out, nil
}

// check validates one value and returns it in the JSON shape the server expects.
func (f *Field) check(v any) (any, error) {
	switch f.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("must be a string")
		}
		if cs := f.choices(); len(cs) > 0 && !slices.Contains(cs, s) {
			return nil, fmt.Errorf("%q is not one of %q", s, cs)
		}
		n := utf8.RuneCountInString(s)
		if f.MinLength != nil && n < *f.MinLength {
			return nil, fmt.Errorf("must be at least %d characters", *f.MinLength)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			return nil, fmt.Errorf("must be at most %d characters", *f.MaxLength)
		}
		if err := checkFormat(f.Format, s); err != nil {
			return nil, err
		}
		return s, nil
	case "number", "integer":
		n, ok := number(v)
		if !ok {
			return nil, fmt.Errorf("must be a %s", f.Type)
		}
		if f.Type == "integer" && n != math.Trunc(n) {
			return nil, fmt.Errorf("must be a whole number, got %v", n)
		}
		if f.Minimum != nil && n < *f.Minimum {
			return nil, fmt.Errorf("must be at least %v", *f.Minimum)
		}
		if f.Maximum != nil && n > *f.Maximum {
			return nil, fmt.Errorf("must be at most %v", *f.Maximum)
		}
		return n, nil
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("must be true or false")
		}
		return b, nil
	case "array":
		items, ok := stringList(v)
		if !ok {
			return nil, fmt.Errorf("must be a list of strings")
		}
		allowed := f.itemChoices()
		for i, s := range items {
			if !slices.Contains(allowed, s) {
				return nil, fmt.Errorf("item %d: %q is not one of %q", i, s, allowed)
			}
			if slices.Index(items, s) != i {
				return nil, fmt.Errorf("item %d: %q is chosen twice", i, s)
			}
		}
		if f.MinItems != nil && len(items) < *f.MinItems {
			return nil, fmt.Errorf("choose at least %d", *f.MinItems)
		}
		if f.MaxItems != nil && len(items) > *f.MaxItems {
			return nil, fmt.Errorf("choose at most %d", *f.MaxItems)
		}
		return items, nil
	}
	return nil, fmt.Errorf("unsupported type %q", f.Type)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func stringList(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return l, true
	case []any:
		out := make([]string, len(l))
		for i, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func checkFormat(format, s string) error {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return fmt.Errorf("must be an email address")
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Errorf("must be an absolute URI")
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("must be a date (YYYY-MM-DD)")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("must be a date and time (RFC 3339)")
		}
	}
	return nil
}
