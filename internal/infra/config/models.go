package config

import (
	"fmt"
	"slices"
)

// ModelModalities is OpenCode's modalities key: what a model takes and gives. tandem reads input:
// "image" lets it send images to the model, "pdf" PDFs (to Anthropic's Messages API).
type ModelModalities struct {
	Input  []string `json:"input,omitempty"`
	Output []string `json:"output,omitempty"`
}

// ModelOptions are the options sent with every call to a model, in OpenCode's names; a variant
// (ModelConfig.Variants) has the same shape and replaces what it sets. Keys tandem does not act on
// stay in Config.Document.
type ModelOptions struct {
	// API picks the wire of an OpenAI-compatible provider: "chat" (Chat Completions, the default)
	// or "responses" (OpenAI's Responses API, with reasoning summaries).
	API string `json:"api,omitempty"`
	// ReasoningEffort is OpenAI's reasoning_effort: minimal, low, medium or high.
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// ReasoningSummary asks the Responses API for a summary of the reasoning: auto, concise or detailed.
	ReasoningSummary string `json:"reasoningSummary,omitempty"`
	// Thinking is Anthropic's extended thinking: {"type": "enabled", "budgetTokens": 16000}.
	Thinking *Thinking `json:"thinking,omitempty"`
	// ParallelToolCalls false asks the model for one tool call at a time.
	ParallelToolCalls *bool `json:"parallelToolCalls,omitempty"`
	// Disabled removes a built-in variant (variants only).
	Disabled bool `json:"disabled,omitempty"`
}

// Thinking configures Anthropic's extended thinking.
type Thinking struct {
	Type         string `json:"type"` // enabled | disabled
	BudgetTokens int    `json:"budgetTokens,omitempty"`
}

var (
	reasoningEfforts  = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	reasoningSummarys = []string{"auto", "concise", "detailed"}
)

// validate checks a model's options and variants; ptr is the model's JSON pointer.
func (m ModelConfig) validate(ptr, providerID, name string) (string, error) {
	check := func(ptr, what string, o ModelOptions) (string, error) {
		where := fmt.Sprintf("provider %q model %q: %s", providerID, name, what)
		switch {
		case o.API != "" && o.API != "chat" && o.API != "responses":
			return ptr + "/api", fmt.Errorf("%s.api must be \"chat\" or \"responses\", got %q", where, o.API)
		case o.ReasoningEffort != "" && !slices.Contains(reasoningEfforts, o.ReasoningEffort):
			return ptr + "/reasoningEffort", fmt.Errorf("%s.reasoningEffort must be one of %v, got %q", where, reasoningEfforts, o.ReasoningEffort)
		case o.ReasoningSummary != "" && !slices.Contains(reasoningSummarys, o.ReasoningSummary):
			return ptr + "/reasoningSummary", fmt.Errorf("%s.reasoningSummary must be one of %v, got %q", where, reasoningSummarys, o.ReasoningSummary)
		}
		if t := o.Thinking; t != nil {
			switch {
			case t.Type != "enabled" && t.Type != "disabled":
				return ptr + "/thinking/type", fmt.Errorf("%s.thinking.type must be \"enabled\" or \"disabled\", got %q", where, t.Type)
			case t.Type == "enabled" && t.BudgetTokens < 1024:
				return ptr + "/thinking/budgetTokens", fmt.Errorf("%s.thinking.budgetTokens must be at least 1024 (Anthropic's minimum), got %d", where, t.BudgetTokens)
			}
		}
		return "", nil
	}
	if m.Options != nil {
		if pointer, err := check(ptr+"/options", "options", *m.Options); err != nil {
			return pointer, err
		}
	}
	for v, o := range m.Variants {
		if pointer, err := check(ptr+"/variants/"+escapePointer(v), "variants."+v, o); err != nil {
			return pointer, err
		}
	}
	return "", nil
}
