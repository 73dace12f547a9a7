package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/infra/provider"
)

var allTools = func() []provider.ToolSpec {
	var out []provider.ToolSpec
	for _, n := range []string{"bash", "read", "write", "edit", "question", "everything_echo", "webfetch", "apply_patch", "task"} {
		out = append(out, provider.ToolSpec{Name: n, Parameters: json.RawMessage(`{"type":"object"}`)})
	}
	return out
}()

func demoRun(t *testing.T, req provider.Request) (text string, calls []provider.ToolCall, finish provider.Event) {
	t.Helper()
	var events []provider.Event
	err := provider.NewDemo().Stream(context.Background(), req, func(e provider.Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	for _, e := range events[:len(events)-1] {
		switch e.Kind {
		case provider.TextDelta:
			text += e.Text
		case provider.ToolCallReady:
			calls = append(calls, e.ToolCall)
		default:
			t.Errorf("unexpected event %v", e.Kind)
		}
	}
	finish = events[len(events)-1]
	if finish.Kind != provider.Finished {
		t.Fatalf("last event is %v, want Finished", finish.Kind)
	}
	return text, calls, finish
}

func TestDemoDirectives(t *testing.T) {
	tests := []struct {
		name     string
		message  string
		tools    []provider.ToolSpec
		wantTool string
		wantIn   string // JSON
		wantText string
	}{
		{name: "run calls bash with a description", message: "run: ls -la", wantTool: "bash",
			wantIn: `{"command":"ls -la","description":"Run ls -la"}`},
		{name: "read calls read", message: "read: README.md", wantTool: "read", wantIn: `{"filePath":"README.md"}`},
		{name: "write calls write with the body after the first line", message: "write: notes.txt\nline one\nline two",
			wantTool: "write", wantIn: `{"content":"line one\nline two","filePath":"notes.txt"}`},
		{name: "edit splits old and new text at ---", message: "edit: main.go\nfoo()\n---\nbar()", wantTool: "edit",
			wantIn: `{"filePath":"main.go","newString":"bar()","oldString":"foo()"}`},
		{name: "ask builds one question with its options", message: "ask: Which database should we use today? | Postgres | SQLite",
			wantTool: "question",
			wantIn:   `{"questions":[{"header":"Which database should we use","multiple":false,"options":[{"description":"","label":"Postgres"},{"description":"","label":"SQLite"}],"question":"Which database should we use today?"}]}`},
		{name: "mcp calls SERVER_TOOL with the JSON input", message: `mcp: everything echo {"message":"hi"}`,
			wantTool: "everything_echo", wantIn: `{"message":"hi"}`},
		{name: "mcp without JSON sends an empty object", message: "mcp: everything echo", wantTool: "everything_echo", wantIn: `{}`},
		{name: "mcp with broken JSON explains instead of calling", message: "mcp: everything echo {oops",
			wantText: "The input for everything_echo must be a JSON object"},
		{name: "fetch calls webfetch for Markdown", message: "fetch: https://example.com/docs", wantTool: "webfetch",
			wantIn: `{"format":"markdown","url":"https://example.com/docs"}`},
		{name: "patch calls apply_patch with the lines after it", message: "patch:\n*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch",
			wantTool: "apply_patch", wantIn: `{"patchText":"*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch"}`},
		{name: "patch without a patch explains the format", message: "patch:", wantText: "To patch, write `patch:`"},
		{name: "task starts a subagent with the prompt after the bar", message: "task: explore | find the config loader", wantTool: "task",
			wantIn: `{"description":"find the config loader","prompt":"find the config loader","subagent_type":"explore"}`},
		{name: "task without a prompt explains the format", message: "task: explore", wantText: "To start a subagent, write"},
		{name: "edit without a separator explains the format", message: "edit: main.go\nfoo()", wantText: "To edit, write `edit: PATH`"},
		{name: "a tool that is not offered is named, not called", message: "run: ls", tools: []provider.ToolSpec{{Name: "read"}},
			wantText: "I would call the `bash` tool, but it is not available in this session."},
		{name: "directives are case-sensitive", message: "Run: ls", wantText: "You said: Run: ls"},
		{name: "a directive must start the message", message: "please run: ls", wantText: "You said: please run: ls"},
		{name: "anything else is echoed", message: "hello there, demo", wantText: "You said: hello there, demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools := tt.tools
			if tools == nil {
				tools = allTools
			}
			text, calls, finish := demoRun(t, provider.Request{Model: "demo", Tools: tools,
				Messages: []provider.Message{{Role: provider.RoleUser, Text: tt.message}}})
			if tt.wantTool == "" {
				if len(calls) != 0 || !strings.HasPrefix(text, tt.wantText) || finish.Reason != "stop" {
					t.Errorf("got text %q calls %v finish %q, want text starting %q and stop", text, calls, finish.Reason, tt.wantText)
				}
				return
			}
			if len(calls) != 1 || text != "" || finish.Reason != "tool-calls" {
				t.Fatalf("got text %q calls %v finish %q, want one call", text, calls, finish.Reason)
			}
			if c := calls[0]; c.ID != "call_demo_1" || c.Name != tt.wantTool || string(c.Input) != tt.wantIn {
				t.Errorf("call = %s %s %s, want call_demo_1 %s %s", c.ID, c.Name, c.Input, tt.wantTool, tt.wantIn)
			}
		})
	}
}

func TestDemoReportsToolResults(t *testing.T) {
	call := provider.ToolCall{ID: "call_demo_1", Name: "bash", Input: json.RawMessage(`{"command":"echo hi"}`)}
	history := []provider.Message{
		{Role: provider.RoleUser, Text: "run: echo hi"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{call}},
	}
	tests := []struct {
		name   string
		result provider.Message
		want   string
	}{
		{"a bash result names the command", provider.Message{Role: provider.RoleTool, ToolCallID: "call_demo_1", ToolName: "bash", Text: "hi\n"}, "`echo hi` output:\nhi"},
		{"a failed tool says so", provider.Message{Role: provider.RoleTool, ToolCallID: "call_demo_1", ToolName: "bash", Text: "permission denied", IsError: true}, "The tool failed: permission denied"},
		{"another tool is named", provider.Message{Role: provider.RoleTool, ToolCallID: "call_demo_1", ToolName: "read", Text: "1: package main"}, "`read` returned:\n1: package main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, calls, finish := demoRun(t, provider.Request{Tools: allTools, Messages: append(append([]provider.Message(nil), history...), tt.result)})
			if text != tt.want || len(calls) != 0 || finish.Reason != "stop" {
				t.Errorf("got %q (%d calls, %s), want %q", text, len(calls), finish.Reason, tt.want)
			}
		})
	}
}

func TestDemoShortensALongOutputToItsFirstAndLastLines(t *testing.T) {
	call := provider.ToolCall{ID: "call_demo_1", Name: "bash", Input: json.RawMessage(`{"command":"seq 1 5000"}`)}
	text, _, _ := demoRun(t, provider.Request{Tools: allTools, Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "run: seq 1 5000"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{call}},
		{Role: provider.RoleTool, ToolCallID: "call_demo_1", ToolName: "bash", Text: numbered(1, 5000)},
	}})
	head, tail, cut := strings.Cut(strings.TrimPrefix(text, "`seq 1 5000` output:\n"), "\n…\n")
	if !cut || len(text) > 4200 {
		t.Fatalf("a %d-byte output was reported in %d bytes, cut=%v", len(numbered(1, 5000)), len(text), cut)
	}
	if !strings.HasPrefix(numbered(1, 5000), head+"\n") || !strings.HasSuffix(numbered(1, 5000), "\n"+tail+"\n") {
		t.Errorf("the report is not whole first and last lines: head ends %q, tail starts %q", head[len(head)-10:], tail[:10])
	}
}

// numbered is the output of `seq from to`.
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestDemoIsDeterministic(t *testing.T) {
	req := provider.Request{Tools: allTools, System: []string{"be brief"}, Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "read: a.go"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_demo_1", Name: "read", Input: json.RawMessage(`{"filePath":"a.go"}`)}}},
		{Role: provider.RoleTool, ToolCallID: "call_demo_1", ToolName: "read", Text: "x"},
		{Role: provider.RoleAssistant, Text: "`read` returned:\nx"},
		{Role: provider.RoleUser, Text: "run: go test ./..."},
	}}
	_, first, f1 := demoRun(t, req)
	_, second, f2 := demoRun(t, req)
	if diff := cmp.Diff(first, second, cmp.Transformer("json", func(r json.RawMessage) string { return string(r) })); diff != "" {
		t.Errorf("two runs differ:\n%s", diff)
	}
	if first[0].ID != "call_demo_2" {
		t.Errorf("ID %q, want call_demo_2 (the second call of this conversation)", first[0].ID)
	}
	if f1.Usage != f2.Usage || f1.Usage.Input == 0 || f1.Usage.Output == 0 {
		t.Errorf("usage %+v and %+v, want equal and non-zero", f1.Usage, f2.Usage)
	}
}

func TestDemoStreamsInSeveralChunks(t *testing.T) {
	var chunks []string
	err := provider.NewDemo().Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "one two three"}}},
		func(e provider.Event) error {
			if e.Kind == provider.TextDelta {
				chunks = append(chunks, e.Text)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"You ", "said: ", "one ", "two ", "three"}, chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestDemoSlowHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	err := provider.NewDemo().Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "slow: a b c d e f g h"}}},
		func(e provider.Event) error {
			got = append(got, e.Text)
			if len(got) == 2 {
				cancel()
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"a ", "b "}, got); diff != "" {
		t.Errorf("chunks before the abort (-want +got):\n%s", diff)
	}
}

func TestDemoSlowStreamsEveryWord(t *testing.T) {
	text, _, finish := demoRun(t, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "slow: one two"}}})
	if text != "one two" || finish.Reason != "stop" {
		t.Errorf("got %q %q", text, finish.Reason)
	}
}
