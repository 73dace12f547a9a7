package mcpserver

import (
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"tandem/permission"
	"tandem/question"
)

func TestElicitationAnswersBecomePermissionReplies(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  mcp.ElicitResult
		want permission.Answer
	}{
		{"allow once", mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, permission.Answer{Reply: permission.Once}},
		{"allow always keeps the message", mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "always", "message": "ok"}}, permission.Answer{Reply: permission.Always, Message: "ok"}},
		{"reject carries the message to the model", mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "reject", "message": "no"}}, permission.Answer{Reply: permission.Reject, Message: "no"}},
		{"an unknown decision rejects", mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "maybe"}}, permission.Answer{Reply: permission.Reject}},
		{"decline rejects", mcp.ElicitResult{Action: "decline"}, permission.Answer{Reply: permission.Reject, Message: "the user declined the approval"}},
		{"cancel rejects", mcp.ElicitResult{Action: "cancel"}, permission.Answer{Reply: permission.Reject, Message: "the user cancelled the approval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := permissionAnswer(&tc.res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestQuestionFormsReadBackOneAnswerPerQuestion(t *testing.T) {
	no := false
	q := question.Request{Questions: []question.Info{
		{Question: "DB?", Options: []question.Option{{Label: "Postgres"}, {Label: "SQLite"}}},
		{Question: "Features?", Multiple: true, Custom: &no, Options: []question.Option{{Label: "auth"}, {Label: "search"}}},
		{Question: "Name?"},
	}}
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
