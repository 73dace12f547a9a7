package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// conversation has every kind of message: a tool call, its error result, and a follow-up.
var conversation = provider.Request{
	Model:  "m1",
	System: []string{"You are tandem.", "Project rules."},
	Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "list files"},
		{Role: provider.RoleAssistant, Text: "Running ls.", ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}}},
		{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "bash", Text: "permission denied", IsError: true},
		{Role: provider.RoleUser, Text: "try again"},
	},
	Tools: []provider.ToolSpec{{Name: "bash", Description: "Run a command",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`)}},
	MaxTokens: 1000,
}

func sent(t *testing.T, s *providertest.Server) (map[string]any, providertest.Request) {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	var body map[string]any
	if err := reqs[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body, reqs[0]
}

func TestOpenAIRequestOnTheWire(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"ok"}})
	if _, err := collect(t, wires[0].provider(t, s, 0), conversation); err != nil {
		t.Fatal(err)
	}
	body, req := sent(t, s)
	want := map[string]any{
		"model":                 "m1",
		"stream":                true,
		"stream_options":        map[string]any{"include_usage": true},
		"max_completion_tokens": 1000.0,
		"messages": []any{
			map[string]any{"role": "system", "content": "You are tandem."},
			map[string]any{"role": "system", "content": "Project rules."},
			map[string]any{"role": "user", "content": "list files"},
			map[string]any{"role": "assistant", "content": "Running ls.", "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"ls"}`}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "Error: permission denied"},
			map[string]any{"role": "user", "content": "try again"},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "bash", "description": "Run a command",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}},
				"required": []any{"command"}, "additionalProperties": false},
		}}},
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if req.Path != "/v1/chat/completions" || req.Header.Get("Authorization") != "Bearer sk-test" || req.Header.Get("X-Extra") != "yes" {
		t.Errorf("path %q auth %q extra %q", req.Path, req.Header.Get("Authorization"), req.Header.Get("X-Extra"))
	}
}

func TestAnthropicRequestOnTheWire(t *testing.T) {
	s := providertest.NewAnthropic(t, providertest.Turn{Text: []string{"ok"}})
	if _, err := collect(t, wires[1].provider(t, s, 0), conversation); err != nil {
		t.Fatal(err)
	}
	body, req := sent(t, s)
	want := map[string]any{
		"model":      "m1",
		"stream":     true,
		"max_tokens": 1000.0,
		"system": []any{
			map[string]any{"type": "text", "text": "You are tandem."},
			map[string]any{"type": "text", "text": "Project rules.", "cache_control": map[string]any{"type": "ephemeral"}},
		},
		"messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "list files", "cache_control": map[string]any{"type": "ephemeral"}}}},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "Running ls."},
				map[string]any{"type": "tool_use", "id": "call_1", "name": "bash", "input": map[string]any{"command": "ls"}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "call_1", "is_error": true,
					"content": []any{map[string]any{"type": "text", "text": "permission denied"}}},
				map[string]any{"type": "text", "text": "try again", "cache_control": map[string]any{"type": "ephemeral"}},
			}},
		},
		"tools": []any{map[string]any{
			"name": "bash", "description": "Run a command", "cache_control": map[string]any{"type": "ephemeral"},
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}},
				"required": []any{"command"}, "additionalProperties": false},
		}},
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if req.Path != "/v1/messages" || req.Header.Get("X-Api-Key") != "ant-test" || req.Header.Get("Anthropic-Version") == "" || req.Header.Get("X-Extra") != "yes" {
		t.Errorf("path %q key %q version %q extra %q", req.Path, req.Header.Get("X-Api-Key"), req.Header.Get("Anthropic-Version"), req.Header.Get("X-Extra"))
	}
}

func TestAnthropicMaxTokensDefaultsToTheModelLimit(t *testing.T) {
	s := providertest.NewAnthropic(t, providertest.Turn{Text: []string{"ok"}})
	p := provider.NewAnthropic(provider.AnthropicOptions{ID: "anthropic", BaseURL: s.BaseURL, APIKey: "k",
		MaxTokens: func(model string) int { return map[string]int{"m1": 64000}[model] }})
	t.Cleanup(p.Close)
	if _, err := collect(t, p, simpleRequest); err != nil {
		t.Fatal(err)
	}
	body, _ := sent(t, s)
	if body["max_tokens"] != 64000.0 {
		t.Errorf("max_tokens = %v, want the model's output limit", body["max_tokens"])
	}
}
