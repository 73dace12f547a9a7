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

	"tandem/errs"
	"tandem/id"
)

// MaxBody bounds request bodies; larger ones get 413.
const MaxBody = 8 << 20

// decode fills in from path parameters, the query string, headers and the JSON body.
func decode(r *http.Request, in any) error {
	v := reflect.ValueOf(in).Elem()
	if v.Kind() != reflect.Struct {
		return decodeBody(r, in)
	}
	var query url.Values // parsed once, when a field asks for it
	hasBody, err := bindParams(r, v, &query)
	if err != nil {
		return err
	}
	if !hasBody {
		return checkNoBody(r)
	}
	return decodeBody(r, in)
}

// bindParams sets the fields tagged path, query or header (also in embedded structs) and reports
// whether any field belongs to the JSON body.
func bindParams(r *http.Request, v reflect.Value, query *url.Values) (hasBody bool, err error) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		var raw, where, name string
		var present bool
		switch {
		case f.Tag.Get("path") != "":
			where, name = "path", f.Tag.Get("path")
			raw = chi.URLParam(r, name)
			present = raw != ""
			if err := checkID(name, f.Tag.Get("pattern"), raw); err != nil {
				return false, err
			}
		case f.Tag.Get("query") != "":
			where, name = "query", f.Tag.Get("query")
			if *query == nil {
				*query = r.URL.Query()
			}
			present = query.Has(name)
			raw = query.Get(name)
		case f.Tag.Get("header") != "":
			where, name = "header", f.Tag.Get("header")
			raw = r.Header.Get(name)
			present = raw != ""
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			body, err := bindParams(r, v.Field(i), query)
			if err != nil {
				return false, err
			}
			hasBody = hasBody || body
			continue
		default:
			if f.Tag.Get("json") != "-" && f.IsExported() {
				hasBody = true
			}
			continue
		}
		if !present {
			continue
		}
		if err := setScalar(v.Field(i), raw); err != nil {
			return false, errs.E(errs.Invalid, "%s parameter %q: %v", where, name, err)
		}
	}
	return hasBody, nil
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
