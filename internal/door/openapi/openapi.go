// Package openapi builds tandem's OpenAPI 3.1 document from the same operation declarations that
// build the router, so the document cannot drift from the code.
package openapi

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/swaggest/jsonschema-go"

	oa "github.com/swaggest/openapi-go"
	"github.com/swaggest/openapi-go/openapi31"

	"github.com/tandem-dev/tandem/api"
)

// Operation describes one HTTP operation for the document.
type Operation struct {
	Method      string
	Path        string // chi pattern: /session/{sessionID}
	ID          string // operationId, OpenCode's where it has one ("session.list")
	Summary     string
	Description string
	Tags        []string
	// Request is a value of the input struct: fields tagged path/query/header are parameters, fields
	// tagged json form the body. nil: no input.
	Request any
	// Response is a value of the success body type; nil with Status 204 means no body.
	Response    any
	Status      int    // success status; 0 means 200
	ContentType string // success content type when not JSON (text/event-stream)
	Errors      []int  // documented error statuses
	Public      bool   // served without credentials
}

// ErrorBody is the one error shape every route answers with.
type ErrorBody struct {
	Name string `json:"name" example:"NotFoundError"`
	Data struct {
		Message string `json:"message" example:"Session not found: ses_x"`
	} `json:"data"`
}

// wireSchemaName is the schema name of a type of package api. The types lived in the domain
// packages before api existed and their schemas were named after them (SessionMessage); clients
// generated from the document refer to those names, so they stay.
func wireSchemaName(typ string) (string, bool) {
	switch typ {
	case "AgentInfo", "FileDiff", "Message", "MessageError", "MessageModel", "MessagePath", "MessageSummary",
		"MessageTime", "Part", "PartInput", "PartTime", "Tokens", "TokensCache", "ToolState":
		return "Session" + typ, true
	case "Session", "SessionModel", "SessionTime":
		return "Session" + typ, true
	case "SessionRevert", "SessionShare", "SessionStatus", "SessionSummary",
		"PermissionChoice", "PermissionRule", "PermissionToolRef", "QuestionInfo", "QuestionOption", "QuestionToolRef":
		return typ, true
	case "MessageWithParts":
		return "SessionWithParts", true
	case "CacheCost", "Capabilities", "CardCost", "CardLimit", "ConfigProviderList", "Modalities", "ModelAPI",
		"ModelCard", "ProviderInfo", "ProviderList":
		return "Provider" + typ, true
	case "MCPStatus":
		return "McpclientStatus", true
	case "CommandFilePart":
		return "SlashFilePart", true
	case "PtyInfo":
		return "TerminalInfo", true
	case "Todo":
		return "ToolTodo", true
	}
	return "", false
}

// Info names the document.
type Info struct {
	Title, Version, Description string
}

// Build returns the OpenAPI 3.1 document as JSON.
func Build(info Info, ops []Operation) ([]byte, error) {
	r := openapi31.NewReflector()
	apiPackage := reflect.TypeFor[api.Session]().PkgPath()
	r.JSONSchemaReflector().DefaultOptions = append(r.JSONSchemaReflector().DefaultOptions,
		jsonschema.InterceptDefName(func(t reflect.Type, name string) string {
			if t.PkgPath() == apiPackage {
				if old, ok := wireSchemaName(t.Name()); ok {
					return old
				}
			}
			return name
		}))
	r.Spec.Info.WithTitle(info.Title).WithVersion(info.Version).WithDescription(info.Description)
	r.Spec.SetHTTPBasicSecurity("basic", "Username (default tandem) and the server password")
	r.Spec.SetHTTPBearerTokenSecurity("bearer", "", "The server password as a bearer token")
	r.Spec.SetAPIKeySecurity("auth_token", "auth_token", oa.InQuery, "base64(user:password), for EventSource and WebSocket clients")
	for _, op := range ops {
		oc, err := r.NewOperationContext(op.Method, op.Path)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s %s: %w", op.Method, op.Path, err)
		}
		oc.SetID(op.ID)
		oc.SetSummary(op.Summary)
		oc.SetDescription(op.Description)
		oc.SetTags(op.Tags...)
		if !op.Public {
			oc.AddSecurity("basic")
			oc.AddSecurity("bearer")
			oc.AddSecurity("auth_token")
		}
		if op.Request != nil {
			oc.AddReqStructure(op.Request)
		}
		status := op.Status
		if status == 0 {
			status = http.StatusOK
		}
		switch {
		case op.ContentType != "":
			oc.AddRespStructure(op.Response, oa.WithHTTPStatus(status), oa.WithContentType(op.ContentType))
		case op.Response == nil:
			oc.AddRespStructure(nil, oa.WithHTTPStatus(status))
		default:
			oc.AddRespStructure(op.Response, oa.WithHTTPStatus(status))
		}
		for _, code := range op.Errors {
			oc.AddRespStructure(ErrorBody{}, oa.WithHTTPStatus(code))
		}
		if err := r.AddOperation(oc); err != nil {
			return nil, fmt.Errorf("openapi: %s %s: %w", op.Method, op.Path, err)
		}
	}
	return r.Spec.MarshalJSON()
}

// Key is how the document and the router name one operation: "GET /session/{}".
func Key(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToUpper(method))
	b.WriteByte(' ')
	depth := 0
	for _, c := range path {
		switch {
		case c == '{':
			depth++
			if depth == 1 {
				b.WriteString("{}")
			}
		case c == '}':
			depth--
		case depth == 0:
			b.WriteRune(c)
		}
	}
	return b.String()
}
