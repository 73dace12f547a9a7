package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// keyOrder records the order of the members of every object of a JSON document, by the object's
// JSON pointer. The layers are merged as maps, which forget order; permission rules are evaluated
// in order (the last match wins), so the merged document is written back in the files' order.
type keyOrder map[string][]string

// orderOf reads the member order of every object in a standard JSON document.
func orderOf(std []byte) (keyOrder, error) {
	order := keyOrder{}
	dec := json.NewDecoder(bytes.NewReader(std))
	dec.UseNumber()
	if err := order.walk(dec, ""); err != nil {
		return nil, err
	}
	return order, nil
}

// walk reads one value from dec, recording the member order of the objects in it.
func (o keyOrder) walk(dec *json.Decoder, ptr string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		keys := []string{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, ok := tok.(string)
			if !ok {
				return fmt.Errorf("an object key must be a string")
			}
			// A key written twice counts once, where the decoder keeps it: at its last value.
			keys = append(slices.DeleteFunc(keys, func(k string) bool { return k == key }), key)
			if err := o.walk(dec, ptr+"/"+escapePointer(key)); err != nil {
				return err
			}
		}
		o[ptr] = keys
	case '[':
		for i := 0; dec.More(); i++ {
			if err := o.walk(dec, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// overlay records in o the order after the layer whose tree and order are over was merged on top.
// A key both have keeps its place, and a new key comes after the old ones, except inside
// "permission" objects: there every key over sets moves to the end, so that a later layer's rules
// come after an earlier layer's and win where both match.
func (o keyOrder) overlay(over keyOrder, tree any, ptr string) {
	obj, ok := tree.(map[string]any)
	if !ok {
		// A value that is not an object replaces whatever object was there, with its order.
		for p := range o {
			if p == ptr || strings.HasPrefix(p, ptr+"/") {
				delete(o, p)
			}
		}
		if _, isArray := tree.([]any); isArray {
			for p, keys := range over {
				if strings.HasPrefix(p, ptr+"/") {
					o[p] = keys
				}
			}
		}
		return
	}
	// Keys the layer no longer has (an untrusted project's loosening, removed) do not move.
	keys := slices.DeleteFunc(slices.Clone(over[ptr]), func(k string) bool { _, ok := obj[k]; return !ok })
	base := o[ptr]
	if isPermission(ptr) {
		base = slices.DeleteFunc(slices.Clone(base), func(k string) bool { return slices.Contains(keys, k) })
		o[ptr] = append(base, keys...)
	} else {
		merged := slices.Clone(base)
		for _, k := range keys {
			if !slices.Contains(merged, k) {
				merged = append(merged, k)
			}
		}
		o[ptr] = merged
	}
	for k, child := range obj {
		o.overlay(over, child, ptr+"/"+escapePointer(k))
	}
}

// isPermission reports whether the object at ptr holds permission rules: the top-level
// "permission" or an agent's, and the pattern objects inside them.
func isPermission(ptr string) bool {
	return slices.Contains(strings.Split(ptr, "/"), "permission")
}

// encode writes v as compact JSON with the members of each object in o's order; members o does
// not know (those set by the environment) follow in sorted order.
func (o keyOrder) encode(buf *bytes.Buffer, v any, ptr string) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for _, k := range o[ptr] {
			if _, ok := v[k]; ok && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		rest := make([]string, 0, len(v)-len(keys))
		for k := range v {
			if !slices.Contains(keys, k) {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		buf.WriteByte('{')
		for i, k := range append(keys, rest...) {
			if i > 0 {
				buf.WriteByte(',')
			}
			name, err := json.Marshal(k)
			if err != nil {
				return err
			}
			buf.Write(name)
			buf.WriteByte(':')
			if err := o.encode(buf, v[k], ptr+"/"+escapePointer(k)); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, child := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := o.encode(buf, child, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}

// under returns the order of the objects at ptr and below, with ptr as their root.
func (o keyOrder) under(ptr string) keyOrder {
	out := keyOrder{}
	for p, keys := range o {
		if p == ptr {
			out[""] = keys
		} else if rest, ok := strings.CutPrefix(p, ptr+"/"); ok {
			out["/"+rest] = keys
		}
	}
	return out
}

// marshalOrdered encodes v with the member order o.
func marshalOrdered(v any, o keyOrder) ([]byte, error) {
	var buf bytes.Buffer
	if err := o.encode(&buf, v, ""); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
