package provider_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// billSteps is the length of the turn the caching bill is computed for.
const billSteps = 30

// longTurn runs a billSteps-step agent turn through the Anthropic provider against a scripted
// server that bills each request with cache; every step but the last reads a file of about a
// thousand tokens. It returns each step's usage as the server reported it and the provider decoded it.
func longTurn(t *testing.T, cache *providertest.AnthropicCache) []provider.Usage {
	t.Helper()
	var turns []providertest.Turn
	for i := range billSteps {
		turn := providertest.Turn{UsageOf: cache.Usage}
		if i < billSteps-1 {
			turn.Text = []string{fmt.Sprintf("Reading part %d.", i+1)}
			turn.ToolCalls = []providertest.ToolCall{{ID: fmt.Sprintf("toolu_%02d", i), Name: "read", Arguments: fmt.Sprintf(`{"filePath":"src/part%d.go"}`, i+1)}}
		} else {
			turn.Text = []string{"All thirty parts are read."}
		}
		turns = append(turns, turn)
	}
	s := providertest.NewAnthropic(t, turns...)
	p := provider.NewAnthropic(provider.AnthropicOptions{ID: "anthropic", BaseURL: s.BaseURL, APIKey: "k"})
	t.Cleanup(p.Close)

	req := provider.Request{Model: "claude-sonnet-4-5", MaxTokens: 8192,
		System:   []string{strings.Repeat("You are tandem, a coding agent. Follow the project's conventions. ", 120), "Working directory: /src/app"},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "Read every part of the program and tell me what it does."}}}
	for i := range 12 {
		req.Tools = append(req.Tools, provider.ToolSpec{Name: fmt.Sprintf("tool%d", i), Description: strings.Repeat("Does one thing well. ", 30),
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Where to do it"}},"required":["path"]}`)})
	}
	var usage []provider.Usage
	for range billSteps {
		events, err := collect(t, p, req)
		if err != nil {
			t.Fatal(err)
		}
		am := provider.Message{Role: provider.RoleAssistant}
		var results []provider.Message
		for _, e := range events {
			switch e.Kind {
			case provider.TextDelta:
				am.Text += e.Text
			case provider.ToolCallReady:
				am.ToolCalls = append(am.ToolCalls, e.ToolCall)
				results = append(results, provider.Message{Role: provider.RoleTool, ToolCallID: e.ToolCall.ID, ToolName: e.ToolCall.Name,
					Text: strings.Repeat("func part() { return compute(input) } // ", 100)})
			case provider.Finished:
				usage = append(usage, e.Usage)
			}
		}
		req.Messages = append(append(req.Messages, am), results...)
	}
	return usage
}

// bill is a turn's input side: tokens by how they are priced, and what they cost at Claude Sonnet
// 4.5's prices (input $3, cache write $3.75, cache read $0.30 per million tokens).
type bill struct{ input, write, read int64 }

func billOf(usage []provider.Usage) bill {
	var b bill
	for _, u := range usage {
		b.input += u.Input
		b.write += u.CacheWrite
		b.read += u.CacheRead
	}
	return b
}

func (b bill) dollars() float64 {
	return (float64(b.input)*3 + float64(b.write)*3.75 + float64(b.read)*0.3) / 1e6
}

func (b bill) String() string {
	return fmt.Sprintf("%d input + %d cache-write + %d cache-read tokens = $%.4f", b.input, b.write, b.read, b.dollars())
}

// TestCachingBillOfALongTurn computes what the input of a 30-step turn costs with no caching, with
// only the system prompt cached (tandem before the conversation's tail carried breakpoints), and
// with tandem's breakpoints on the tools, the system prompt and the conversation's tail. Run it with
// -v to read the bill:
//
//	go test ./internal/infra/provider -run TestCachingBillOfALongTurn -v
func TestCachingBillOfALongTurn(t *testing.T) {
	none := providertest.NewAnthropicCache()
	none.Strip = func(string) bool { return true }
	systemOnly := providertest.NewAnthropicCache()
	systemOnly.Strip = func(where string) bool { return where != "system" }

	uncached := billOf(longTurn(t, none))
	before := billOf(longTurn(t, systemOnly))
	after := billOf(longTurn(t, providertest.NewAnthropicCache()))

	t.Logf("%d-step turn, no caching:          %v", billSteps, uncached)
	t.Logf("%d-step turn, system prompt only:  %v", billSteps, before)
	t.Logf("%d-step turn, tools+system+tail:   %v", billSteps, after)
	t.Logf("the tail's breakpoints cut the input bill to %.0f%% of the system-only bill", 100*after.dollars()/before.dollars())

	total := uncached.input + uncached.write + uncached.read
	for name, b := range map[string]bill{"system only": before, "tail": after} {
		if got := b.input + b.write + b.read; got != total {
			t.Errorf("%s: the turn's prompt counts %d tokens, want %d as without caching", name, got, total)
		}
	}
	if after.read <= before.read || after.dollars() >= before.dollars()/3 {
		t.Errorf("caching the tail read %d tokens from the cache and cost $%.4f; the system prompt alone read %d and cost $%.4f",
			after.read, after.dollars(), before.read, before.dollars())
	}
}
