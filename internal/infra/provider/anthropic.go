package provider

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/sse"
)

// AnthropicBaseURL is the endpoint used when no baseURL is configured.
const AnthropicBaseURL = "https://api.anthropic.com"

// anthropicVersion is the Messages API version tandem speaks.
const anthropicVersion = "2023-06-01"

// DefaultAnthropicMaxTokens is sent when neither the request nor the model table gives a limit;
// the Messages API requires one.
const DefaultAnthropicMaxTokens = 8192

// AnthropicOptions configures the Anthropic Messages API.
type AnthropicOptions struct {
	ID      string // the provider ID, usually "anthropic"
	BaseURL string // empty means AnthropicBaseURL
	APIKey  string
	Headers map[string]string
	// IdleTimeout bounds the silence before the first event and between events: 0 means
	// DefaultIdleTimeout, negative disables it.
	IdleTimeout time.Duration
	// MaxTokens gives the output limit for a model when the request sets none; nil or 0 means
	// DefaultAnthropicMaxTokens.
	MaxTokens func(model string) int
}

// Anthropic streams from the Anthropic Messages API. Like OpenAI, it speaks the wire format itself
// (a JSON body and an SSE reader): the official SDK cost 2.3 MB of idle RSS and 8 MB of binary.
type Anthropic struct {
	id        string
	url       string // the messages endpoint
	header    http.Header
	idle      time.Duration
	maxTokens func(string) int
	http      *http.Client
}

// NewAnthropic builds the provider. It never reads the process environment.
func NewAnthropic(o AnthropicOptions) *Anthropic {
	base := o.BaseURL
	if base == "" {
		base = AnthropicBaseURL
	}
	header := http.Header{}
	header.Set("X-Api-Key", o.APIKey)
	header.Set("Anthropic-Version", anthropicVersion)
	for k, v := range o.Headers {
		header.Set(k, v)
	}
	return &Anthropic{
		id: o.ID, url: strings.TrimRight(base, "/") + "/v1/messages", header: header,
		idle: idleLimit(o.IdleTimeout), maxTokens: o.MaxTokens, http: newHTTPClient(),
	}
}

// ID returns the provider ID.
func (p *Anthropic) ID() string { return p.id }

// Close releases idle connections.
func (p *Anthropic) Close() { p.http.CloseIdleConnections() }

// Stream runs one Messages call.
func (p *Anthropic) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	params, err := p.params(req)
	if err != nil {
		return err
	}
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	w := watchIdle(ctx, p.idle)
	defer w.stop()
	resp, err := postStream(w.ctx, p.http, p.url, body, p.header)
	if err != nil {
		return failure(ctx, w, p.id, err, failureOf)
	}
	defer resp.Body.Close()

	var (
		usage      Usage
		stopReason string
		stopped    bool
		hadTools   bool
		tools      = map[int64]*pendingCall{}
		initial    = map[int64]string{} // tool input sent whole in content_block_start
		thinking   = map[int64]*Reasoning{}
	)
	events := sse.NewReader(resp.Body)
	for {
		frame, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failure(ctx, w, p.id, err, failureOf)
		}
		w.kick()
		var ev anthropicEvent
		if err := json.Unmarshal(frame.Data, &ev); err != nil {
			return unreadable(p.id, err)
		}
		if frame.Type == "error" || ev.Type == "error" {
			return failure(ctx, w, p.id, streamFailure(frame.Data), failureOf)
		}
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			usage = Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
		case "content_block_start":
			b := ev.ContentBlock
			switch b.Type {
			case "tool_use":
				tools[ev.Index] = &pendingCall{id: b.ID, name: b.Name}
				if in := bytes.TrimSpace(b.Input); len(in) > 0 && !bytes.Equal(in, []byte("{}")) && !bytes.Equal(in, []byte("null")) {
					initial[ev.Index] = string(in)
				}
			case "text":
				if b.Text != "" {
					if err := emit(Event{Kind: TextDelta, Text: b.Text}); err != nil {
						return err
					}
				}
			case "thinking":
				thinking[ev.Index] = &Reasoning{Signature: b.Signature}
				if b.Thinking != "" {
					if err := emit(Event{Kind: ReasoningDelta, Text: b.Thinking}); err != nil {
						return err
					}
				}
			case "redacted_thinking":
				thinking[ev.Index] = &Reasoning{Redacted: b.Data}
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if err := emit(Event{Kind: TextDelta, Text: ev.Delta.Text}); err != nil {
					return err
				}
			case "thinking_delta":
				if err := emit(Event{Kind: ReasoningDelta, Text: ev.Delta.Thinking}); err != nil {
					return err
				}
			case "signature_delta":
				if r := thinking[ev.Index]; r != nil {
					r.Signature += ev.Delta.Signature
				}
			case "input_json_delta":
				if c := tools[ev.Index]; c != nil {
					c.args.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "content_block_stop":
			if r := thinking[ev.Index]; r != nil {
				delete(thinking, ev.Index)
				if err := emit(Event{Kind: ReasoningDone, Reasoning: *r}); err != nil {
					return err
				}
				continue
			}
			c := tools[ev.Index]
			if c == nil {
				continue
			}
			delete(tools, ev.Index)
			if c.args.Len() == 0 {
				c.args.WriteString(initial[ev.Index])
			}
			hadTools = true
			acc := toolAccumulator{calls: []*pendingCall{c}}
			if err := emit(Event{Kind: ToolCallReady, ToolCall: acc.finish()[0]}); err != nil {
				return err
			}
		case "message_stop":
			stopped = true
		case "message_delta":
			stopReason = ev.Delta.StopReason
			u := ev.Usage
			usage.Output = u.OutputTokens // cumulative
			if u.InputTokens > 0 {
				usage.Input = u.InputTokens
			}
			if u.CacheReadInputTokens > 0 {
				usage.CacheRead = u.CacheReadInputTokens
			}
			if u.CacheCreationInputTokens > 0 {
				usage.CacheWrite = u.CacheCreationInputTokens
			}
			if t := u.OutputTokensDetails.ThinkingTokens; t > 0 && t <= usage.Output {
				usage.Reasoning = t
				usage.Output -= t
			}
		}
		w.kick() // time spent in emit is the caller's, not the provider's silence
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if !stopped && stopReason == "" {
		return &Error{Kind: ErrNetwork, Provider: p.id, Message: "the response ended before the model finished (no message_stop)"}
	}
	return emit(Event{Kind: Finished, Reason: anthropicReason(stopReason, hadTools), Usage: usage})
}

// anthropicEvent is one event of a streamed Messages answer, with the fields tandem reads.
type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"` // redacted_thinking
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	OutputTokensDetails      struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// anthropicRequest is the body of a streamed Messages call.
type anthropicRequest struct {
	Model      string               `json:"model"`
	MaxTokens  int                  `json:"max_tokens"`
	Stream     bool                 `json:"stream"`
	System     []anthropicBlock     `json:"system,omitempty"`
	Messages   []anthropicMessage   `json:"messages"`
	Tools      []anthropicTool      `json:"tools,omitempty"`
	ToolChoice *anthropicToolChoice `json:"tool_choice,omitempty"`
	Thinking   *anthropicThinking   `json:"thinking,omitempty"`
}

type anthropicToolChoice struct {
	Type                   string `json:"type"` // auto | any | none
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anthropicThinking struct {
	Type         string `json:"type"` // enabled
	BudgetTokens int    `json:"budget_tokens"`
}

// cacheControl marks a cache breakpoint: the prompt up to and including the block is cached.
type cacheControl struct {
	Type string `json:"type"` // ephemeral
}

var ephemeral = &cacheControl{Type: "ephemeral"}

// minThinkingBudget is the smallest budget_tokens the Messages API takes.
const minThinkingBudget = 1024

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

// anthropicBlock is a content block of the kinds tandem sends: text, image, document, thinking,
// redacted_thinking, tool_use and tool_result.
type anthropicBlock struct {
	Type         string           `json:"type"`
	Text         string           `json:"text,omitempty"`
	Source       *anthropicSource `json:"source,omitempty"` // image, document
	Title        string           `json:"title,omitempty"`  // document
	Thinking     *string          `json:"thinking,omitempty"`
	Signature    string           `json:"signature,omitempty"`
	Data         string           `json:"data,omitempty"` // redacted_thinking
	ID           string           `json:"id,omitempty"`
	Name         string           `json:"name,omitempty"`
	Input        json.RawMessage  `json:"input,omitempty"`
	ToolUseID    string           `json:"tool_use_id,omitempty"`
	IsError      bool             `json:"is_error,omitempty"`
	Content      []anthropicBlock `json:"content,omitempty"`
	CacheControl *cacheControl    `json:"cache_control,omitempty"`
}

type anthropicSource struct {
	Type      string `json:"type"` // base64
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type anthropicTool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"input_schema"`
	CacheControl *cacheControl  `json:"cache_control,omitempty"`
}

func (p *Anthropic) params(req Request) (anthropicRequest, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 && p.maxTokens != nil {
		maxTokens = p.maxTokens(req.Model)
	}
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	params := anthropicRequest{Model: req.Model, MaxTokens: maxTokens, Stream: true, Messages: []anthropicMessage{}}
	for _, s := range req.System {
		if strings.TrimSpace(s) != "" {
			params.System = append(params.System, anthropicBlock{Type: "text", Text: s})
		}
	}
	for _, m := range req.Messages {
		var role string
		var blocks []anthropicBlock
		switch m.Role {
		case RoleUser:
			role = "user"
			// Images and documents come before the text that asks about them, as Anthropic advises.
			for _, a := range m.Attachments {
				if len(a.Data) == 0 {
					continue // never read (see Attachment.URL)
				}
				src := &anthropicSource{Type: "base64", MediaType: a.Mime, Data: base64.StdEncoding.EncodeToString(a.Data)}
				switch {
				case IsImage(a.Mime):
					blocks = append(blocks, anthropicBlock{Type: "image", Source: src})
				case a.Mime == PDF:
					blocks = append(blocks, anthropicBlock{Type: "document", Source: src, Title: a.Filename})
				}
			}
			if m.Text != "" {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: m.Text})
			}
		case RoleAssistant:
			role = "assistant"
			// Thinking goes back first and unchanged, with its signature: with extended thinking on,
			// the API refuses a tool_use turn whose thinking is missing. Thinking without a
			// signature (another provider's reasoning) cannot be sent at all.
			for _, r := range m.Reasoning {
				switch {
				case r.Redacted != "":
					blocks = append(blocks, anthropicBlock{Type: "redacted_thinking", Data: r.Redacted})
				case r.Signature != "":
					text := r.Text
					blocks = append(blocks, anthropicBlock{Type: "thinking", Thinking: &text, Signature: r.Signature})
				}
			}
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: anthropicInput(tc.Input)})
			}
		case RoleTool:
			// Tool results travel in the user's turn, as tool_result blocks.
			role = "user"
			text := m.Text
			if text == "" {
				text = "(no output)"
			}
			blocks = append(blocks, anthropicBlock{Type: "tool_result", ToolUseID: m.ToolCallID, IsError: m.IsError,
				Content: []anthropicBlock{{Type: "text", Text: text}}})
		default:
			return params, &Error{Kind: ErrBadRequest, Provider: p.id, Message: fmt.Sprintf("unknown message role %q", m.Role)}
		}
		if len(blocks) == 0 {
			continue // Anthropic refuses empty turns
		}
		// Consecutive turns of one role merge: the API wants user and assistant to alternate.
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			continue
		}
		params.Messages = append(params.Messages, anthropicMessage{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return params, &Error{Kind: ErrBadRequest, Provider: p.id, Message: err.Error()}
		}
		schema["type"] = "object"
		params.Tools = append(params.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	// The API refuses a tool_choice without tools (a title or a summary call).
	if len(params.Tools) > 0 && (req.ToolChoice != "" || (req.ParallelToolCalls != nil && !*req.ParallelToolCalls)) {
		choice := map[string]string{"": "auto", "auto": "auto", "required": "any", "none": "none"}[req.ToolChoice]
		if choice == "" {
			return params, &Error{Kind: ErrBadRequest, Provider: p.id, Message: fmt.Sprintf("unknown tool choice %q (auto, required, none)", req.ToolChoice)}
		}
		params.ToolChoice = &anthropicToolChoice{Type: choice, DisableParallelToolUse: req.ParallelToolCalls != nil && !*req.ParallelToolCalls}
	}
	if r := req.Reasoning; r != nil && r.BudgetTokens > 0 {
		// The budget is part of max_tokens and must stay below it.
		budget := min(r.BudgetTokens, params.MaxTokens-1)
		if budget >= minThinkingBudget {
			params.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: budget}
		}
	}
	placeBreakpoints(&params)
	return params, nil
}

// placeBreakpoints marks where Anthropic caches the prompt. The API reads the prompt as tools,
// system, messages, and allows four breakpoints: the last tool (the tools rarely change), the last
// system block (nor does the system prompt), and the last block of each of the last two user
// turns. Each step of an agent turn adds an answer and its tool results at the end, so the newest
// user turn's breakpoint writes the whole conversation to the cache and the next step reads it back
// at a tenth of the input price; the previous user turn's breakpoint is where the last step's
// write is found even when many tool results came since (the API looks only 20 blocks back from
// a breakpoint).
func placeBreakpoints(params *anthropicRequest) {
	if n := len(params.Tools); n > 0 {
		params.Tools[n-1].CacheControl = ephemeral
	}
	if n := len(params.System); n > 0 {
		params.System[n-1].CacheControl = ephemeral
	}
	marked := 0
	for i := len(params.Messages) - 1; i >= 0 && marked < 2; i-- {
		m := params.Messages[i]
		if m.Role != "user" {
			continue
		}
		// Thinking blocks cannot be breakpoints; a user turn has none, but its last block is
		// the one to mark in any case.
		for j := len(m.Content) - 1; j >= 0; j-- {
			if t := m.Content[j].Type; t != "thinking" && t != "redacted_thinking" {
				m.Content[j].CacheControl = ephemeral
				marked++
				break
			}
		}
	}
}

// anthropicInput is a tool call's input as the Messages API accepts it: an object. Arguments a
// model sent that were not an object are replayed as {"input": "<what it sent>"}, so the model sees
// its own mistake rather than the API refusing the whole history.
func anthropicInput(raw json.RawMessage) json.RawMessage {
	in := bytes.TrimSpace(raw)
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	if in[0] == '{' && json.Valid(in) {
		return in
	}
	text := string(in)
	var s string
	if json.Unmarshal(in, &s) == nil {
		text = s
	}
	out, _ := json.Marshal(map[string]string{"input": text})
	return out
}

func anthropicReason(stop string, hadToolCalls bool) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return ReasonStop
	case "tool_use":
		return ReasonToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return ReasonLength
	case "refusal":
		return ReasonContentFilter
	case "":
		if hadToolCalls {
			return ReasonToolCalls
		}
		return ReasonStop
	}
	return ReasonOther
}
