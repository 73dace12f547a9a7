// Package provider puts LLM APIs behind one streaming interface: OpenAI-compatible Chat Completions
// (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter), Anthropic Messages, and an offline demo model. The
// prompt loop sees only Request, Event and Error, so it never learns which wire protocol ran.
package provider

import (
	"context"
	"encoding/json"
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
	Role       Role
	Text       string
	ToolCalls  []ToolCall // assistant
	ToolCallID string     // tool result: the call it answers
	ToolName   string     // tool result
	IsError    bool       // tool result is an error message
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
}

// EventKind says which fields of an Event are set.
type EventKind int

// The events a stream emits. Finished is always last.
const (
	TextDelta EventKind = iota + 1
	ReasoningDelta
	ToolCallReady
	Finished
)

func (k EventKind) String() string {
	switch k {
	case TextDelta:
		return "text-delta"
	case ReasoningDelta:
		return "reasoning-delta"
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
	Kind     EventKind
	Text     string   // TextDelta, ReasoningDelta
	ToolCall ToolCall // ToolCallReady: a complete call (arguments fully accumulated)
	Reason   string   // Finished: "stop" | "tool-calls" | "length" | "content-filter" | "other"
	Usage    Usage    // Finished
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
