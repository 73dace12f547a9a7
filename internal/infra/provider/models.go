package provider

import "strings"

// ModelInfo is what tandem knows about one model: limits for context management, prices for the
// cost of a message, what it can take and do, and what each call asks of it.
type ModelInfo struct {
	ID          string
	ProviderID  string
	Name        string
	Family      string
	ReleaseDate string // YYYY-MM-DD, empty when unknown
	Context     int64  // context window in tokens, 0 when unknown
	Input       int64  // input limit in tokens when the provider sets one apart from Context, else 0
	Output      int64  // maximum output tokens, 0 when unknown
	Cost        Cost
	// Reasoning: tandem can ask the model to think (Options or Variants say how much).
	Reasoning bool
	ToolCall  bool
	// Image and PDF say which attachments tandem sends the model as content: images (PNG, JPEG,
	// GIF, WebP) as image parts, PDFs as documents (Anthropic's Messages API only).
	Image, PDF  bool
	Temperature bool
	// Options is what every call asks for; Variants are named alternatives a prompt or session
	// picks (OpenCode's variants: "high", "max", ...).
	Options  ModelOptions
	Variants map[string]ModelOptions
	// EditTools says which file-changing tools the model is offered: EditToolsPatch, EditToolsEdit
	// or EditToolsAll.
	EditTools string
}

// The tool sets a model may be offered to change files.
const (
	// EditToolsPatch offers apply_patch, the format OpenAI's GPT models are trained to write,
	// instead of edit, multiedit and write.
	EditToolsPatch = "patch"
	// EditToolsEdit offers edit, multiedit and write, not apply_patch.
	EditToolsEdit = "edit"
	// EditToolsAll offers every one (the demo model, which has a directive for each).
	EditToolsAll = "all"
)

// DefaultEditTools is OpenCode's rule: GPT models (whose IDs contain "gpt-") get apply_patch,
// except the open-weight gpt-oss models and the gpt-4 family, which were not trained on it.
func DefaultEditTools(modelID string) string {
	id := strings.ToLower(modelID)
	if strings.Contains(id, "gpt-") && !strings.Contains(id, "oss") && !strings.Contains(id, "gpt-4") {
		return EditToolsPatch
	}
	return EditToolsEdit
}

// Attachment reports whether the model takes any attachment as content.
func (m ModelInfo) Attachment() bool { return m.Image || m.PDF }

// ModelOptions are the settings of a call to a model.
type ModelOptions struct {
	// Responses calls the model through OpenAI's Responses API instead of Chat Completions.
	Responses bool
	// Reasoning asks the model to think; nil asks nothing.
	Reasoning *ReasoningOptions
	// ParallelToolCalls false asks for one tool call at a time; nil leaves the API's default.
	ParallelToolCalls *bool
}

// The variants OpenCode offers for reasoning models, built in for the models below.
var (
	anthropicVariants = map[string]ModelOptions{
		"high": {Reasoning: &ReasoningOptions{BudgetTokens: 16000}},
		"max":  {Reasoning: &ReasoningOptions{BudgetTokens: 31999}},
	}
	openaiVariants = map[string]ModelOptions{
		"low":    {Reasoning: &ReasoningOptions{Effort: "low"}},
		"medium": {Reasoning: &ReasoningOptions{Effort: "medium"}},
		"high":   {Reasoning: &ReasoningOptions{Effort: "high"}},
	}
)

// Cost is in US dollars per million tokens, the unit providers publish.
type Cost struct {
	Input, Output, CacheRead, CacheWrite float64
}

// CostOf prices a call's usage in US dollars. Reasoning is billed as output.
func (m ModelInfo) CostOf(u Usage) float64 {
	c := m.Cost
	return (float64(u.Input)*c.Input +
		float64(u.Output+u.Reasoning)*c.Output +
		float64(u.CacheRead)*c.CacheRead +
		float64(u.CacheWrite)*c.CacheWrite) / 1e6
}

// knownModels are the built-in entries of the two first-party providers, from their published
// model pages (limits in tokens, prices in USD per million tokens). Config adds to and overrides
// these. The first model of each provider is its default.
var knownModels = map[string][]ModelInfo{
	"openai": {
		{ID: "gpt-4.1", Name: "GPT-4.1", Family: "gpt-4.1", ReleaseDate: "2025-04-14", Context: 1047576, Output: 32768,
			Cost: Cost{Input: 2, Output: 8, CacheRead: 0.5}, ToolCall: true, Image: true, Temperature: true},
		{ID: "gpt-4.1-mini", Name: "GPT-4.1 mini", Family: "gpt-4.1", ReleaseDate: "2025-04-14", Context: 1047576, Output: 32768,
			Cost: Cost{Input: 0.4, Output: 1.6, CacheRead: 0.1}, ToolCall: true, Image: true, Temperature: true},
		{ID: "gpt-4o", Name: "GPT-4o", Family: "gpt-4o", ReleaseDate: "2024-05-13", Context: 128000, Output: 16384,
			Cost: Cost{Input: 2.5, Output: 10, CacheRead: 1.25}, ToolCall: true, Image: true, Temperature: true},
		{ID: "gpt-4o-mini", Name: "GPT-4o mini", Family: "gpt-4o", ReleaseDate: "2024-07-18", Context: 128000, Output: 16384,
			Cost: Cost{Input: 0.15, Output: 0.6, CacheRead: 0.075}, ToolCall: true, Image: true, Temperature: true},
		{ID: "o4-mini", Name: "o4-mini", Family: "o4", ReleaseDate: "2025-04-16", Context: 200000, Output: 100000,
			Cost: Cost{Input: 1.1, Output: 4.4, CacheRead: 0.275}, Reasoning: true, ToolCall: true, Image: true, Variants: openaiVariants},
	},
	"anthropic": {
		{ID: "claude-sonnet-4-5", Name: "Claude Sonnet 4.5", Family: "claude-sonnet", ReleaseDate: "2025-09-29", Context: 200000, Output: 64000,
			Cost: Cost{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}, Reasoning: true, ToolCall: true, Image: true, PDF: true, Temperature: true, Variants: anthropicVariants},
		{ID: "claude-haiku-4-5", Name: "Claude Haiku 4.5", Family: "claude-haiku", ReleaseDate: "2025-10-15", Context: 200000, Output: 64000,
			Cost: Cost{Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25}, Reasoning: true, ToolCall: true, Image: true, PDF: true, Temperature: true, Variants: anthropicVariants},
		{ID: "claude-opus-4-1", Name: "Claude Opus 4.1", Family: "claude-opus", ReleaseDate: "2025-08-05", Context: 200000, Output: 32000,
			Cost: Cost{Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75}, Reasoning: true, ToolCall: true, Image: true, PDF: true, Temperature: true, Variants: anthropicVariants},
	},
}

// demoModel describes the offline demo model: free, and small enough that context management
// can be exercised with it.
var demoModel = ModelInfo{ID: DemoID, ProviderID: DemoID, Name: "Demo (offline, scripted)", Family: "demo",
	Context: 128000, Output: 4096, ToolCall: true, EditTools: EditToolsAll}
