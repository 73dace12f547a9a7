// Package provider puts LLM APIs behind one streaming interface: OpenAI-compatible Chat Completions
// (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter), Anthropic Messages, and an offline demo model. The
// prompt loop sees only Request, Event and Error, so it never learns which wire protocol ran.
package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
)

// Role is who wrote a message.
type Role string

// The roles a conversation holds. System prompts travel in Request.System instead.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one call the model asked for. Input is the arguments object.
type ToolCall struct {
	ID, Name string
	Input    json.RawMessage
}

// Message is one turn of the conversation in provider-neutral form.
type Message struct {
	Role        Role
	Text        string
	Attachments []Attachment // user: images and documents, sent where the model takes them
	Reasoning   []Reasoning  // assistant: what the model thought before it answered, in order
	ToolCalls   []ToolCall   // assistant
	ToolCallID  string       // tool result: the call it answers
	ToolName    string       // tool result
	IsError     bool         // tool result is an error message
}

// Attachment is a file a person attached to a prompt, as the model receives it.
type Attachment struct {
	Mime     string // image/png, image/jpeg, image/gif, image/webp or application/pdf
	Filename string
	// URL is where the prompt had it (data: or file://); the session reads Data from it.
	// Providers send only Data.
	URL  string `json:",omitempty"`
	Data []byte
}

// The media types tandem sends as content: ImageTypes to models that take images, PDF as a
// document to Anthropic's.
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// PDF is the media type of a PDF document.
const PDF = "application/pdf"

// IsImage reports whether a media type is an image tandem sends as one.
func IsImage(mime string) bool { return slices.Contains(ImageTypes, mime) }

// DataURL is the attachment as a data: URL, the form OpenAI's APIs take an image in.
func (a Attachment) DataURL() string {
	return "data:" + a.Mime + ";base64," + base64.StdEncoding.EncodeToString(a.Data)
}

// imagesOf returns a message's image attachments that hold data.
func imagesOf(m Message) []Attachment {
	var out []Attachment
	for _, a := range m.Attachments {
		if IsImage(a.Mime) && len(a.Data) > 0 {
			out = append(out, a)
		}
	}
	return out
}

// Reasoning is one block of a model's reasoning, with what its provider needs to take it back in
// a later call. Text is what the person sees; the other fields are opaque.
type Reasoning struct {
	Text string
	// Anthropic: the signature of a thinking block, or the data of a redacted_thinking block
	// (whose text is hidden). Extended thinking with tools needs them sent back unchanged.
	Signature string
	Redacted  string
	// OpenAI Responses: the reasoning item's ID and its encrypted content.
	ItemID    string
	Encrypted string
}

// ReasoningOptions ask a model to think before it answers.
type ReasoningOptions struct {
	Effort       string // OpenAI: minimal | low | medium | high
	Summary      string // OpenAI Responses: auto | concise | detailed
	BudgetTokens int    // Anthropic extended thinking: at least 1024
}

// ToolSpec offers a tool to the model. Parameters is a JSON Schema object.
type ToolSpec struct {
	Name, Description string
	Parameters        json.RawMessage
}

// Request is one model call.
type Request struct {
	Model     string // model ID within the provider
	System    []string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int // 0 = provider default
	// Variant names one of the model's configured variants (a reasoning budget, say); the
	// registry turns it into the options below.
	Variant   string
	Reasoning *ReasoningOptions // nil: the model's default
	// ToolChoice is "auto" (the API's default when empty), "required" or "none".
	ToolChoice string
	// ParallelToolCalls false asks for at most one tool call per answer; nil leaves the API's default.
	ParallelToolCalls *bool
	// Cache keeps the messages' encodings for the next call of the same conversation (nil: every
	// message is encoded for each call). It never changes what is sent; see EncodeCache.
	Cache *EncodeCache
}

// EventKind says which fields of an Event are set.
type EventKind int

// The events a stream emits. Finished is always last.
const (
	TextDelta EventKind = iota + 1
	ReasoningDelta
	// ReasoningDone ends a block of reasoning; Event.Reasoning holds what the provider needs back
	// (no text: that came as ReasoningDelta). The next ReasoningDelta starts another block.
	ReasoningDone
	ToolCallReady
	Finished
)

func (k EventKind) String() string {
	switch k {
	case TextDelta:
		return "text-delta"
	case ReasoningDelta:
		return "reasoning-delta"
	case ReasoningDone:
		return "reasoning-done"
	case ToolCallReady:
		return "tool-call"
	case Finished:
		return "finish"
	}
	return "unknown"
}

// Usage counts tokens. Input excludes cache reads and writes, and Output excludes Reasoning, so
// that each count is priced once (as OpenCode's tokens object counts them).
type Usage struct {
	Input, Output, Reasoning, CacheRead, CacheWrite int64
}

// Event is one step of a streamed response.
type Event struct {
	Kind      EventKind
	Text      string    // TextDelta, ReasoningDelta
	Reasoning Reasoning // ReasoningDone
	ToolCall  ToolCall  // ToolCallReady: a complete call (arguments fully accumulated)
	Reason    string    // Finished: "stop" | "tool-calls" | "length" | "content-filter" | "other"
	Usage     Usage     // Finished
}

// Finish reasons.
const (
	ReasonStop          = "stop"
	ReasonToolCalls     = "tool-calls"
	ReasonLength        = "length"
	ReasonContentFilter = "content-filter"
	ReasonOther         = "other"
)

// Provider is one configured LLM endpoint.
type Provider interface {
	ID() string
	// Stream runs one model call; emit is called in order and the last event is Finished.
	// Returning an error from emit stops the stream and Stream returns that error.
	// When ctx ends, Stream returns ctx's error promptly. Provider failures are *Error.
	Stream(ctx context.Context, req Request, emit func(Event) error) error
}
