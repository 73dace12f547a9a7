// The binder: how a request's path, query, headers and JSON body become a handler's typed input.

package routes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
)

// MaxBody bounds request bodies; larger ones get 413.
const MaxBody = 8 << 20

// binding is how one input type is filled in, worked out once when its operation is declared so
// that a request walks a list instead of the type's struct tags.
type binding struct {
	params  []param // path, query and header fields, in declaration order
	hasBody bool    // some field belongs to the JSON body
	isInput bool    // the input is a struct (otherwise the whole body decodes into it)
}

// param is one field filled in from the path, the query string or a header.
type param struct {
	index   []int  // the field, through embedded structs
	where   string // "path", "query" or "header"
	name    string
	pattern string // a path parameter's OpenAPI pattern ("^ses")
}

// bindingOf works out the binding of a pointer-to-input's element type.
func bindingOf(t reflect.Type) binding {
	if t.Kind() != reflect.Struct {
		return binding{}
	}
	b := binding{isInput: true}
	b.add(t, nil)
	return b
}

// add collects the parameters of t (also in embedded structs) and whether a field belongs to the body.
func (b *binding) add(t reflect.Type, at []int) {
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(append([]int(nil), at...), i)
		switch {
		case f.Tag.Get("path") != "":
			b.params = append(b.params, param{index: index, where: "path", name: f.Tag.Get("path"), pattern: f.Tag.Get("pattern")})
		case f.Tag.Get("query") != "":
			b.params = append(b.params, param{index: index, where: "query", name: f.Tag.Get("query")})
		case f.Tag.Get("header") != "":
			b.params = append(b.params, param{index: index, where: "header", name: f.Tag.Get("header")})
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			b.add(f.Type, index)
		default:
			if f.Tag.Get("json") != "-" && f.IsExported() {
				b.hasBody = true
			}
		}
	}
}

// decode fills in from path parameters, the query string, headers and the JSON body.
func (b binding) decode(r *http.Request, in any) error {
	if !b.isInput {
		return decodeBody(r, in)
	}
	if err := b.bindParams(r, reflect.ValueOf(in).Elem()); err != nil {
		return err
	}
	if !b.hasBody {
		return checkNoBody(r)
	}
	return decodeBody(r, in)
}

// bindParams sets the fields tagged path, query or header.
func (b binding) bindParams(r *http.Request, v reflect.Value) error {
	var query url.Values // parsed once, when a field asks for it
	for _, p := range b.params {
		var raw string
		var present bool
		switch p.where {
		case "path":
			raw = chi.URLParam(r, p.name)
			if r.URL.RawPath != "" {
				// chi routes the escaped path when there is one, so the parameter is still
				// escaped: "editor%40ses_…" from a browser's encodeURIComponent is "editor@ses_…".
				u, err := url.PathUnescape(raw)
				if err != nil {
					return errs.E(errs.Invalid, "%s: %v", p.name, err)
				}
				raw = u
			}
			present = raw != ""
			if err := checkID(p.name, p.pattern, raw); err != nil {
				return err
			}
		case "query":
			raw, present = queryParam(r.URL, p.name, &query)
		case "header":
			raw = r.Header.Get(p.name)
			present = raw != ""
		}
		if !present {
			continue
		}
		if err := setScalar(v.FieldByIndex(p.index), raw); err != nil {
			return errs.E(errs.Invalid, "%s parameter %q: %v", p.where, p.name, err)
		}
	}
	return nil
}

// manyPairs is the number of query pairs from which binding parses the query into url.Values once
// instead of reading it in place for each parameter.
const manyPairs = 16

// queryParam is the query parameter name as url.Values gives it: its first value, and whether the
// query has it. Binding runs on every request and most queries are a pair or two, so the raw query
// is read in place, skipping the pairs url.ParseQuery skips (with a semicolon or a bad escape);
// a query of many pairs is parsed into *parsed once and looked up there.
func queryParam(u *url.URL, name string, parsed *url.Values) (string, bool) {
	raw := u.RawQuery
	if *parsed == nil && strings.Count(raw, "&") >= manyPairs {
		*parsed = u.Query()
	}
	if *parsed != nil {
		vs, ok := (*parsed)[name]
		if len(vs) == 0 {
			return "", ok
		}
		return vs[0], true
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(k); err != nil || k != name {
			continue
		}
		v, err := url.QueryUnescape(v)
		if err != nil {
			continue
		}
		return v, true
	}
	return "", false
}

// checkID answers 400 for a path parameter that is not a well-formed ID, instead of looking it up.
// The parameter's OpenAPI pattern names the ID's prefix ("^ses"), so the declaration that documents
// an ID is also the one place that checks it.
func checkID(name, pattern, raw string) error {
	prefix, ok := strings.CutPrefix(pattern, "^")
	if !ok || prefix == "" || id.Valid(id.Prefix(prefix), raw) {
		return nil
	}
	return errs.E(errs.Invalid, "%s: expected an ID starting with %s_, got %q", name, prefix, raw)
}

func setScalar(f reflect.Value, raw string) error {
	if f.Kind() == reflect.Pointer { // an optional parameter: nil when absent
		v := reflect.New(f.Type().Elem())
		if err := setScalar(v.Elem(), raw); err != nil {
			return err
		}
		f.Set(v)
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("expected true or false, got %q", raw)
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			// OpenCode documents some of these as numbers; accept an integral float.
			fl, ferr := strconv.ParseFloat(raw, 64)
			if ferr != nil || fl != float64(int64(fl)) {
				return fmt.Errorf("expected an integer, got %q", raw)
			}
			n = int64(fl)
		}
		f.SetInt(n)
	case reflect.Float64:
		fl, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("expected a number, got %q", raw)
		}
		f.SetFloat(fl)
	default:
		return fmt.Errorf("unsupported parameter type %s", f.Type())
	}
	return nil
}

// checkNoBody refuses a non-JSON content type on a mutating request even when no body is expected,
// so a cross-site form or text/plain POST never reaches a handler.
func checkNoBody(r *http.Request) error {
	if isSafe(r.Method) {
		return nil
	}
	return checkContentType(r, false)
}

func isSafe(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// checkContentType requires application/json when a body is present or a type is declared.
func checkContentType(r *http.Request, bodyPresent bool) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if bodyPresent {
			return errs.E(errs.Unsupported, "Content-Type must be application/json")
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return errs.E(errs.Unsupported, "Content-Type must be application/json, got %q", ct)
	}
	return nil
}

func decodeBody(r *http.Request, in any) error {
	if isSafe(r.Method) {
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errs.E(errs.TooLarge, "request body larger than %d bytes", MaxBody)
		}
		return errs.E(errs.Invalid, "reading request body: %v", err)
	}
	trimmed := strings.TrimSpace(string(body))
	if err := checkContentType(r, trimmed != ""); err != nil {
		return err
	}
	if trimmed == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if err := dec.Decode(in); err != nil {
		return errs.E(errs.Invalid, "%s", describeJSONError(err))
	}
	if dec.More() {
		return errs.E(errs.Invalid, "request body: unexpected data after the JSON value")
	}
	return nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return fmt.Sprintf("%s: expected %s, got JSON %s", field, typeErr.Type, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("request body: invalid JSON at byte %d: %v", syntaxErr.Offset, err)
	default:
		return "request body: " + err.Error()
	}
}
