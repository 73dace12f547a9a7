package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/door/openapi"
)

// openAPIDoc is the part of an OpenAPI 3.1 document the checks below read.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Info       struct{ Title, Version string }       `json:"info"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
	} `json:"components"`
}

type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Responses   map[string]json.RawMessage `json:"responses"`
	Parameters  []struct {
		Name     string `json:"name"`
		In       string `json:"in"`
		Required bool   `json:"required"`
	} `json:"parameters"`
	Security []map[string][]string `json:"security"`
}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// TestOpenAPIDocumentMatchesTheRouter builds the router and the document from the same API the
// server runs and fails if either has an operation the other lacks.
func TestOpenAPIDocumentMatchesTheRouter(t *testing.T) {
	api := app.API()
	routed := map[string]bool{}
	err := chi.Walk(api.Router(nil), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routed[openapi.Key(method, route)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := api.Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			if httpMethods[method] {
				documented[openapi.Key(method, path)] = true
			}
		}
	}
	for k := range routed {
		if !documented[k] {
			t.Errorf("%s is routed but not in the document", k)
		}
	}
	for k := range documented {
		if !routed[k] {
			t.Errorf("%s is documented but not routed", k)
		}
	}
	if len(routed) < 10 {
		t.Errorf("only %d routes: the walk or the API is wrong", len(routed))
	}
}

// TestOpenAPIDocumentIsValid checks the document against the OpenAPI 3.1 rules a client generator
// trips over: the version, responses on every operation, unique operationIds, declared path
// parameters, security schemes that exist, and $refs that resolve.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	raw, err := app.API().Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if doc.Info.Title == "" || doc.Info.Version == "" {
		t.Errorf("info = %+v", doc.Info)
	}

	ids := map[string]string{}
	pathParam := regexp.MustCompile(`\{([^}]+)\}`)
	for path, item := range doc.Paths {
		for method, body := range item {
			if !httpMethods[method] {
				continue
			}
			where := strings.ToUpper(method) + " " + path
			var op openAPIOperation
			if err := json.Unmarshal(body, &op); err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			} else if prev, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s is used by %s and %s", op.OperationID, prev, where)
			}
			ids[op.OperationID] = where
			if len(op.Responses) == 0 {
				t.Errorf("%s has no responses", where)
			}
			declared := map[string]bool{}
			for _, p := range op.Parameters {
				if p.In == "path" {
					if !p.Required {
						t.Errorf("%s: path parameter %s is not required", where, p.Name)
					}
					declared[p.Name] = true
				}
			}
			for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
				if !declared[m[1]] {
					t.Errorf("%s: path parameter {%s} is not declared", where, m[1])
				}
			}
			for _, req := range op.Security {
				for name := range req {
					if _, ok := doc.Components.SecuritySchemes[name]; !ok {
						t.Errorf("%s: security scheme %q does not exist", where, name)
					}
				}
			}
		}
	}

	var whole any
	if err := json.Unmarshal(raw, &whole); err != nil {
		t.Fatal(err)
	}
	refs := 0
	walkRefs(whole, func(ref string) {
		refs++
		if !resolves(whole, ref) {
			t.Errorf("$ref %s does not resolve", ref)
		}
	})
	if refs == 0 {
		t.Error("no $ref at all: the schemas are not shared")
	}
}

func walkRefs(v any, visit func(string)) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			visit(ref)
		}
		for _, e := range v {
			walkRefs(e, visit)
		}
	case []any:
		for _, e := range v {
			walkRefs(e, visit)
		}
	}
}

// resolves follows a local JSON pointer (#/components/schemas/X).
func resolves(doc any, ref string) bool {
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	cur := doc
	for _, tok := range strings.Split(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[tok]; !ok {
			return false
		}
	}
	return true
}

func TestOpenAPICommandPrintsTheDocument(t *testing.T) {
	out, err := exec.Command(builtBinary(t), "openapi").Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := app.API().Document()
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.TrimSuffix(out, []byte("\n")); !bytes.Equal(got, want) {
		t.Errorf("`tandem openapi` printed %d bytes, want the %d-byte document", len(got), len(want))
	}
}

// TestOperationIDsAgreeWithOpenCode checks the operations tandem shares with OpenCode (same method and
// path) carry OpenCode's operationId, so generated SDK method names match.
func TestOperationIDsAgreeWithOpenCode(t *testing.T) {
	ours, err := app.API().Document()
	if err != nil {
		t.Fatal(err)
	}
	theirs := opencodeOperationIDs(t)
	var doc openAPIDoc
	if err := json.Unmarshal(ours, &doc); err != nil {
		t.Fatal(err)
	}
	var shared []string
	for path, item := range doc.Paths {
		for method, body := range item {
			key := openapi.Key(method, path)
			want, ok := theirs[key]
			if !httpMethods[method] || !ok {
				continue
			}
			var op openAPIOperation
			_ = json.Unmarshal(body, &op)
			shared = append(shared, key)
			if op.OperationID != want {
				t.Errorf("%s: operationId %q, OpenCode's is %q", key, op.OperationID, want)
			}
		}
	}
	sort.Strings(shared)
	if len(shared) < 10 {
		t.Errorf("only %d operations shared with OpenCode: %v", len(shared), shared)
	}
}

// opencodeOperationIDs reads testdata/opencode_operation_ids.json: "METHOD /path/{}" → operationId,
// extracted from OpenCode 1.18.33's openapi.json.
func opencodeOperationIDs(t *testing.T) map[string]string {
	t.Helper()
	b, err := readTestdata("opencode_operation_ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func readTestdata(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }
