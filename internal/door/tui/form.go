package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// field is one property of an MCP elicitation form, in the order the server sent it.
type field struct {
	name        string
	title       string
	description string
	kind        string   // string, number, integer, boolean, enum, multi
	format      string   // email, uri, date, date-time
	choices     []string // enum, multi: the values sent
	labels      []string // enum, multi: what is shown (titles where the server gave them)
	required    bool

	text     string       // string, number, integer: what was typed
	on       bool         // boolean
	pick     int          // enum: the chosen index (-1: none)
	picked   map[int]bool // multi
	cursor   int          // multi: the option under the cursor
	errorMsg string       // the server's 400 for this field
}

// parseForm reads a requestedSchema, keeping the properties' order.
func parseForm(raw json.RawMessage) ([]*field, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var schema struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	names, err := orderedKeys(schema.Properties)
	if err != nil {
		return nil, err
	}
	var props map[string]struct {
		Type        string          `json:"type"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Format      string          `json:"format"`
		Enum        []string        `json:"enum"`
		EnumNames   []string        `json:"enumNames"`
		OneOf       []choiceJSON    `json:"oneOf"`
		Default     json.RawMessage `json:"default"`
		Items       *struct {
			Enum  []string     `json:"enum"`
			AnyOf []choiceJSON `json:"anyOf"`
		} `json:"items"`
	}
	if len(schema.Properties) > 0 {
		if err := json.Unmarshal(schema.Properties, &props); err != nil {
			return nil, err
		}
	}
	out := make([]*field, 0, len(names))
	for _, n := range names {
		p := props[n]
		f := &field{name: n, title: p.Title, description: p.Description, kind: p.Type, format: p.Format, pick: -1, picked: map[int]bool{}}
		for _, r := range schema.Required {
			f.required = f.required || r == n
		}
		switch {
		case len(p.Enum) > 0:
			f.kind, f.choices, f.labels = "enum", p.Enum, p.Enum
			if len(p.EnumNames) == len(p.Enum) {
				f.labels = p.EnumNames
			}
		case len(p.OneOf) > 0:
			f.kind = "enum"
			for _, c := range p.OneOf {
				f.choices, f.labels = append(f.choices, c.Const), append(f.labels, c.label())
			}
		case p.Type == "array" && p.Items != nil:
			f.kind = "multi"
			f.choices, f.labels = p.Items.Enum, p.Items.Enum
			for _, c := range p.Items.AnyOf {
				f.choices, f.labels = append(f.choices, c.Const), append(f.labels, c.label())
			}
		}
		f.setDefault(p.Default)
		out = append(out, f)
	}
	return out, nil
}

type choiceJSON struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

func (c choiceJSON) label() string {
	if c.Title != "" {
		return c.Title
	}
	return c.Const
}

// setDefault fills the field with the schema's default, so the form shows what an empty answer means.
func (f *field) setDefault(raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	switch f.kind {
	case "boolean":
		f.on, _ = v.(bool)
	case "enum":
		for i, c := range f.choices {
			if c == fmt.Sprint(v) {
				f.pick = i
			}
		}
	case "multi":
		list, _ := v.([]any)
		for _, x := range list {
			for i, c := range f.choices {
				if c == fmt.Sprint(x) {
					f.picked[i] = true
				}
			}
		}
	default:
		f.text = fmt.Sprint(v)
	}
}

// orderedKeys lists an object's keys in the order they were written.
func orderedKeys(obj json.RawMessage) ([]string, error) {
	if len(obj) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("properties: not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// content is the form's answer: every field the person filled in, typed as the schema says. A
// number that does not parse is sent as the text typed, so the server's 400 names the field.
func formContent(fields []*field) map[string]any {
	out := map[string]any{}
	for _, f := range fields {
		switch f.kind {
		case "boolean":
			out[f.name] = f.on
		case "enum":
			if f.pick >= 0 {
				out[f.name] = f.choices[f.pick]
			}
		case "multi":
			list := []string{}
			for i, c := range f.choices {
				if f.picked[i] {
					list = append(list, c)
				}
			}
			out[f.name] = list
		case "number", "integer":
			t := strings.TrimSpace(f.text)
			if t == "" {
				continue
			}
			if n, err := strconv.ParseFloat(t, 64); err == nil {
				out[f.name] = n
			} else {
				out[f.name] = t
			}
		default:
			if f.text != "" {
				out[f.name] = f.text
			}
		}
	}
	return out
}

// fieldOfError finds the field a 400 names ("content.<name>: …").
func fieldOfError(msg string) (name, detail string, ok bool) {
	i := strings.Index(msg, "content.")
	if i < 0 {
		return "", msg, false
	}
	rest := msg[i+len("content."):]
	name, detail, ok = strings.Cut(rest, ": ")
	return name, detail, ok
}
