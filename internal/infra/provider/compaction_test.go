package provider_test

import (
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/provider"
)

func TestUsableInput(t *testing.T) {
	cases := []struct {
		name, config        string
		providerID, modelID string
		want                int64
	}{
		{"a built-in model keeps min(20000, its output limit) free", `{}`, "openai", "gpt-4o", 128000 - 16384},
		{"a large output limit keeps 20000 free", `{}`, "anthropic", "claude-sonnet-4-5", 200000 - 20000},
		{"compaction.reserved replaces the default", `{"compaction":{"reserved":1000}}`, "openai", "gpt-4o", 127000},
		{"an input limit is used instead of the context window",
			`{"provider":{"local":{"options":{"baseURL":"http://127.0.0.1:1/v1"},"models":{"m":{"limit":{"context":9000,"input":6000,"output":500}}}}}}`,
			"local", "m", 5500},
		{"a configured limit overrides a built-in one",
			`{"provider":{"openai":{"models":{"gpt-4o":{"limit":{"context":10000,"output":2000}}}}}}`, "openai", "gpt-4o", 8000},
		{"the demo model has its own window", `{}`, provider.DemoID, provider.DemoID, 128000 - 4096},
		{"a reservation larger than the window leaves one token", `{"compaction":{"reserved":200000}}`, "openai", "gpt-4o", 1},
		{"compaction.auto false never compacts", `{"compaction":{"auto":false}}`, "openai", "gpt-4o", 0},
		{"a model with no known limit never compacts", `{}`, "openai", "gpt-unknown", 0},
		{"an unknown provider never compacts", `{}`, "nope", "x", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := registryFrom(t, c.config, nil)
			if got := r.Usable(c.providerID, c.modelID); got != c.want {
				t.Fatalf("Usable(%s, %s) = %d, want %d", c.providerID, c.modelID, got, c.want)
			}
		})
	}
}

func TestDemoSummarises(t *testing.T) {
	ask := provider.Message{Role: provider.RoleUser, Text: provider.CompactionPrompt}
	cases := []struct {
		name string
		msgs []provider.Message
		want string
	}{
		{"it lists the prompts it was sent, one line each", []provider.Message{
			{Role: provider.RoleUser, Text: "plan the schema\nwith details"},
			{Role: provider.RoleAssistant, Text: "You said: plan the schema"},
			{Role: provider.RoleUser, Text: "write the migration"},
			ask,
		}, "Summary of the conversation so far:\n- The user asked: plan the schema\n- The user asked: write the migration"},
		{"it carries an earlier summary forward and skips the compaction's question", []provider.Message{
			{Role: provider.RoleUser, Text: provider.SummaryQuestion},
			{Role: provider.RoleAssistant, Text: "Summary of the conversation so far:\n- The user asked: one"},
			{Role: provider.RoleUser, Text: "two"},
			ask,
		}, "Summary of the conversation so far:\n- The user asked: one\n- The user asked: two"},
		{"with nothing before it, it says so", []provider.Message{ask},
			"Summary of the conversation so far:\n- Nothing was asked yet."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, calls, finish := demoRun(t, provider.Request{Model: provider.DemoID, Messages: c.msgs})
			if text != c.want || len(calls) != 0 || finish.Reason != provider.ReasonStop {
				t.Fatalf("summary %q (calls %d, finish %q), want %q", text, len(calls), finish.Reason, c.want)
			}
		})
	}
}
