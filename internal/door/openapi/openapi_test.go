package openapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tandem-dev/tandem/internal/door/openapi"
)

func TestKeyNamesAnOperationTheSameWayForChiAndTheDocument(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"get", "/session", "GET /session"},
		{"GET", "/session/{sessionID}", "GET /session/{}"},
		{"delete", "/session/{id}/message/{messageID}", "DELETE /session/{}/message/{}"},
		{"GET", "/file/{path:.*}", "GET /file/{}"},
		{"GET", "/x/{a:[0-9]{2}}/y", "GET /x/{}/y"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" is "+tt.want, func(t *testing.T) {
			if got := openapi.Key(tt.method, tt.path); got != tt.want {
				t.Errorf("Key = %q", got)
			}
		})
	}
}

type widgetPath struct {
	WidgetID string `path:"widgetID" json:"-"`
	Verbose  bool   `query:"verbose"`
	Name     string `json:"name"`
}

type widget struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func TestBuildDocumentsParametersBodiesErrorsAndSecurity(t *testing.T) {
	raw, err := openapi.Build(openapi.Info{Title: "t", Version: "1"}, []openapi.Operation{
		{Method: http.MethodPatch, Path: "/widget/{widgetID}", ID: "widget.update", Request: &widgetPath{}, Response: &widget{}, Errors: []int{400, 404}},
		{Method: http.MethodGet, Path: "/health", ID: "health", Response: &widget{}, Public: true},
		{Method: http.MethodDelete, Path: "/widget/{widgetID}", ID: "widget.delete", Request: &widgetPath{}, Status: http.StatusNoContent},
		{Method: http.MethodGet, Path: "/stream", ID: "stream", Response: "", ContentType: "text/event-stream"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Parameters  []struct {
				Name, In string
				Required bool
			} `json:"parameters"`
			RequestBody *struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Content map[string]any `json:"content"`
			} `json:"responses"`
			Security []map[string]any `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	upd := doc.Paths["/widget/{widgetID}"]["patch"]
	params := map[string]string{}
	for _, p := range upd.Parameters {
		params[p.Name] = p.In
		if p.In == "path" && !p.Required {
			t.Errorf("path parameter %s is optional", p.Name)
		}
	}
	if params["widgetID"] != "path" || params["verbose"] != "query" {
		t.Errorf("parameters %v", params)
	}
	if upd.RequestBody == nil || upd.RequestBody.Content["application/json"] == nil {
		t.Error("the JSON body is not documented")
	}
	for _, code := range []string{"200", "400", "404"} {
		if _, ok := upd.Responses[code]; !ok {
			t.Errorf("response %s is missing", code)
		}
	}
	if len(upd.Security) != 3 {
		t.Errorf("security %v, want basic, bearer and auth_token", upd.Security)
	}
	if h := doc.Paths["/health"]["get"]; len(h.Security) != 0 {
		t.Errorf("a public operation requires %v", h.Security)
	}
	if d := doc.Paths["/widget/{widgetID}"]["delete"]; len(d.Responses["204"].Content) != 0 {
		t.Errorf("204 has a body: %v", d.Responses["204"])
	}
	if s := doc.Paths["/stream"]["get"]; s.Responses["200"].Content["text/event-stream"] == nil {
		t.Errorf("the stream's content type is missing: %v", s.Responses["200"])
	}
}
