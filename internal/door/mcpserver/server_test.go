package mcpserver

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
)

func TestElicitationAnswersBecomePermissionReplies(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  mcp.ElicitResult
		want permission.Answer
	}{
		{"each decision key goes back as the key", mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny-always"}}, permission.Answer{Decision: "deny-always"}},
		{"the message goes with the key", mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "reject-with-message", "message": "no"}}, permission.Answer{Decision: "reject-with-message", Message: "no"}},
		{"an unknown key is passed on for the permission service to refuse", mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "maybe"}}, permission.Answer{Decision: "maybe"}},
		{"decline rejects", mcp.ElicitResult{Action: "decline"}, permission.Answer{Decision: "reject", Message: "the user declined the approval"}},
		{"cancel rejects", mcp.ElicitResult{Action: "cancel"}, permission.Answer{Decision: "reject", Message: "the user cancelled the approval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := permissionAnswer(&tc.res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestTheApprovalFormIsTheRequestsDecisionList: the form offers the request's decisions, in their
// order, titled with their labels and patterns, and nothing else.
func TestTheApprovalFormIsTheRequestsDecisionList(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  permission.Request
		keys []string
	}{
		{"a command that can be judged offers every key", permission.Request{PermissionRequest: api.PermissionRequest{Permission: "bash", Patterns: []string{"git push origin"}, Always: []string{"git push *"}, Metadata: map[string]any{}}},
			[]string{"once", "session", "always", "reject", "reject-with-message", "deny-always"}},
		{"a command that cannot be judged offers nothing lasting", permission.Request{PermissionRequest: api.PermissionRequest{Permission: "bash", Patterns: []string{`eval "$x"`}, Metadata: map[string]any{"unjudged": []string{"eval"}}}},
			[]string{"once", "reject", "reject-with-message"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Decisions = permission.Decisions(tc.req)
			schema := approvalSchema(tc.req)
			decision := schema["properties"].(map[string]any)["decision"].(map[string]any)
			var keys []string
			for i, c := range decision["oneOf"].([]map[string]any) {
				d := tc.req.Decisions[i]
				keys = append(keys, c["const"].(string))
				if title := c["title"].(string); !strings.HasPrefix(title, d.Label) || !strings.Contains(title, d.Patterns[0]) {
					t.Fatalf("title %q of %s: want its label %q and patterns %v", title, d.Key, d.Label, d.Patterns)
				}
			}
			if !slices.Equal(keys, tc.keys) {
				t.Fatalf("keys %v, want %v", keys, tc.keys)
			}
			msg := schema["properties"].(map[string]any)["message"].(map[string]any)["title"].(string)
			if !strings.Contains(msg, "required with") {
				t.Fatalf("the message field does not say when it is required: %q", msg)
			}
		})
	}
}

func TestQuestionFormsReadBackOneAnswerPerQuestion(t *testing.T) {
	no := false
	q := question.Request{QuestionRequest: api.QuestionRequest{Questions: []question.Info{
		{Question: "DB?", Options: []question.Option{{Label: "Postgres"}, {Label: "SQLite"}}},
		{Question: "Features?", Multiple: true, Custom: &no, Options: []question.Option{{Label: "auth"}, {Label: "search"}}},
		{Question: "Name?"},
	}}}
	schema := questionSchema(q)
	if req := schema["required"].([]string); !reflect.DeepEqual(req, []string{"q1"}) {
		t.Fatalf("required %v: only the question without custom answers is required", req)
	}
	if _, ok := schema["properties"].(map[string]any)["q1_other"]; ok {
		t.Fatal("a question with custom:false offers free text")
	}
	got := questionAnswers(q, map[string]any{"q0": "SQLite", "q1": []any{"auth", "search"}, "q2_other": "tandem"})
	want := []question.Answer{{"SQLite"}, {"auth", "search"}, {"tandem"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAFormAnswerWithAQuestionLeftEmptyIsNoAnswer(t *testing.T) {
	q := question.Request{QuestionRequest: api.QuestionRequest{Questions: []question.Info{
		{Question: "DB?", Options: []question.Option{{Label: "Postgres"}, {Label: "SQLite"}}},
		{Question: "Name?"},
	}}}
	for _, tc := range []struct {
		name    string
		res     mcp.ElicitResult
		want    []question.Answer
		wantWhy string
	}{
		{"every question answered is the answer", mcp.ElicitResult{Action: "accept", Content: map[string]any{"q0": "SQLite", "q1_other": "tandem"}},
			[]question.Answer{{"SQLite"}, {"tandem"}}, ""},
		{"a form sent back empty names the first question left without an answer", mcp.ElicitResult{Action: "accept", Content: map[string]any{}},
			nil, `the client's form came back without an answer to "DB?": rejected`},
		{"one question left empty is no answer to the set", mcp.ElicitResult{Action: "accept", Content: map[string]any{"q0": "SQLite", "q1_other": "  "}},
			nil, `the client's form came back without an answer to "Name?": rejected`},
		{"a decline is a dismissal, with no reason of the server's", mcp.ElicitResult{Action: "decline"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := questionReply(q, &tc.res)
			if !reflect.DeepEqual(got, tc.want) || why != tc.wantWhy {
				t.Fatalf("got %v %q, want %v %q", got, why, tc.want, tc.wantWhy)
			}
		})
	}
}
