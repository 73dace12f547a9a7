package acpagent

import (
	"encoding/json"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/agent/tool"
)

func TestOptionsComeFromTheRequestsDecisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  api.PermissionRequest
		want []string
	}{
		{"a judged command offers every kind, the lasting ones with their patterns",
			api.PermissionRequest{Permission: "bash", Patterns: []string{"git push origin"}, Always: []string{"git push *"}},
			[]string{"once allow_once Allow once", "session allow_always Allow for this session: git push *",
				"always allow_always Always allow in this project: git push *", "reject reject_once Reject",
				"deny-always reject_always Always reject in this project: git push *"}},
		{"an unjudged command offers only once and reject",
			api.PermissionRequest{Permission: "bash", Patterns: []string{"eval x"}, Metadata: map[string]any{"unjudged": []string{"eval"}}},
			[]string{"once allow_once Allow once", "reject reject_once Reject"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, o := range options(permission.Decisions(permission.Request{PermissionRequest: tc.req})) {
				got = append(got, strings.Join([]string{string(o.OptionId), string(o.Kind), o.Name}, " "))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanFromTodos(t *testing.T) {
	got := planOf([]tool.Todo{
		{Content: "read the code", Status: "completed", Priority: "high"},
		{Content: "write the fix", Status: "in_progress", Priority: "medium"},
		{Content: "drop the old API", Status: "cancelled", Priority: "low"},
		{Content: "run the tests", Status: "pending", Priority: "low"},
	})
	want := []acp.PlanEntry{
		{Content: "read the code", Status: acp.PlanEntryStatusCompleted, Priority: acp.PlanEntryPriorityHigh},
		{Content: "write the fix", Status: acp.PlanEntryStatusInProgress, Priority: acp.PlanEntryPriorityMedium},
		{Content: "run the tests", Status: acp.PlanEntryStatusPending, Priority: acp.PlanEntryPriorityLow},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
}

func TestToolView(t *testing.T) {
	out := "ok\n"
	for _, tc := range []struct {
		name       string
		part       session.Part
		wantKind   acp.ToolKind
		wantStatus acp.ToolCallStatus
		wantTitle  string
		wantPath   string
		wantDiff   bool
	}{
		{"a running command is an execute call titled by its command",
			session.Part{Tool: "bash", State: &session.ToolState{Status: "running", Input: json.RawMessage(`{"command":"make test"}`)}},
			acp.ToolKindExecute, acp.ToolCallStatusInProgress, "make test", "", false},
		{"a read resolves its relative path in the session's directory",
			session.Part{Tool: "read", State: &session.ToolState{Status: "pending", Input: json.RawMessage(`{"filePath":"src/a.go"}`)}},
			acp.ToolKindRead, acp.ToolCallStatusPending, "read /p/src/a.go", "/p/src/a.go", false},
		{"a finished edit carries its diff",
			session.Part{Tool: "edit", State: &session.ToolState{Status: "completed", Title: "a.go", Output: &out, Input: json.RawMessage(`{"filePath":"/p/a.go"}`),
				Metadata: map[string]any{"filediff": map[string]any{"file": "/p/a.go", "before": "x", "after": "y"}}}},
			acp.ToolKindEdit, acp.ToolCallStatusCompleted, "a.go", "/p/a.go", true},
		{"a failed grep is a failed search",
			session.Part{Tool: "grep", State: &session.ToolState{Status: "error", Error: "bad pattern", Input: json.RawMessage(`{"pattern":"("}`)}},
			acp.ToolKindSearch, acp.ToolCallStatusFailed, "grep", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := toolView(tc.part, "/p")
			if v.kind != tc.wantKind || v.status != tc.wantStatus || v.title != tc.wantTitle {
				t.Fatalf("kind %s status %s title %q", v.kind, v.status, v.title)
			}
			path := ""
			if len(v.locations) > 0 {
				path = v.locations[0].Path
			}
			if path != tc.wantPath {
				t.Fatalf("location %q, want %q", path, tc.wantPath)
			}
			var diff *acp.ToolCallContentDiff
			for _, c := range v.content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
			if (diff != nil) != tc.wantDiff || (diff != nil && (diff.NewText != "y" || diff.OldText == nil || *diff.OldText != "x")) {
				t.Fatalf("diff %+v", diff)
			}
		})
	}
}
