package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// AnthropicBaseURL is the endpoint used when no baseURL is configured.
const AnthropicBaseURL = "https://api.anthropic.com"

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

// Anthropic streams from the Anthropic Messages API.
type Anthropic struct {
	id        string
	idle      time.Duration
	maxTokens func(string) int
	http      *http.Client
	messages  anthropic.MessageService
}

// NewAnthropic builds the provider. It never reads the process environment.
func NewAnthropic(o AnthropicOptions) *Anthropic {
	base := o.BaseURL
	if base == "" {
		base = AnthropicBaseURL
	}
	p := &Anthropic{id: o.ID, idle: idleLimit(o.IdleTimeout), maxTokens: o.MaxTokens, http: newHTTPClient()}
	opts := []option.RequestOption{
		option.WithHTTPClient(p.http),
		option.WithBaseURL(base),
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(0), // the prompt loop retries and tells the user it does
	}
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	// The service, not anthropic.NewClient: the client would read ANTHROPIC_* from the process
	// environment behind the configuration's back.
	p.messages = anthropic.NewMessageService(opts...)
	return p
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
	w := watchIdle(ctx, p.idle)
	defer w.stop()
	stream := p.messages.NewStreaming(w.ctx, params)
	defer stream.Close()

	var (
		usage      Usage
		stopReason string
		stopped    bool
		hadTools   bool
		tools      = map[int64]*pendingCall{}
		initial    = map[int64]string{} // tool input sent whole in content_block_start
	)
	for stream.Next() {
		w.kick()
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			usage = Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
		case "content_block_start":
			b := ev.ContentBlock
			switch b.Type {
			case "tool_use":
				tools[ev.Index] = &pendingCall{id: b.ID, name: b.Name}
				if in, ok := b.Input.(map[string]any); ok && len(in) > 0 {
					raw, _ := json.Marshal(in)
					initial[ev.Index] = string(raw)
				}
			case "text":
				if b.Text != "" {
					if err := emit(Event{Kind: TextDelta, Text: b.Text}); err != nil {
						return err
					}
				}
			case "thinking":
				if b.Thinking != "" {
					if err := emit(Event{Kind: ReasoningDelta, Text: b.Thinking}); err != nil {
						return err
					}
				}
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
			case "input_json_delta":
				if c := tools[ev.Index]; c != nil {
					c.args.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "content_block_stop":
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
			stopReason = string(ev.Delta.StopReason)
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
	if err := stream.Err(); err != nil {
		return failure(ctx, w, p.id, err, anthropicFailure)
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if !stopped && stopReason == "" {
		return &Error{Kind: ErrNetwork, Provider: p.id, Message: "the response ended before the model finished (no message_stop)"}
	}
	return emit(Event{Kind: Finished, Reason: anthropicReason(stopReason, hadTools), Usage: usage})
}

func (p *Anthropic) params(req Request) (anthropic.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 && p.maxTokens != nil {
		maxTokens = p.maxTokens(req.Model)
	}
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	params := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: int64(maxTokens)}
	for _, s := range req.System {
		if strings.TrimSpace(s) != "" {
			params.System = append(params.System, anthropic.TextBlockParam{Text: s})
		}
	}
	if n := len(params.System); n > 0 {
		// The system prompt rarely changes within a session: let Anthropic cache it.
		params.System[n-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	for _, m := range req.Messages {
		var role anthropic.MessageParamRole
		var blocks []anthropic.ContentBlockParamUnion
		switch m.Role {
		case RoleUser:
			role = anthropic.MessageParamRoleUser
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
		case RoleAssistant:
			role = anthropic.MessageParamRoleAssistant
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, inputOrEmpty(tc.Input), tc.Name))
			}
		case RoleTool:
			// Tool results travel in the user's turn, as tool_result blocks.
			role = anthropic.MessageParamRoleUser
			text := m.Text
			if text == "" {
				text = "(no output)"
			}
			blocks = append(blocks, anthropic.NewToolResultBlock(m.ToolCallID, text, m.IsError))
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
		params.Messages = append(params.Messages, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return params, &Error{Kind: ErrBadRequest, Provider: p.id, Message: err.Error()}
		}
		input := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type", "properties":
			case "required":
				if list, ok := v.([]any); ok {
					for _, r := range list {
						if s, ok := r.(string); ok {
							input.Required = append(input.Required, s)
						}
					}
				}
			default:
				input.ExtraFields[k] = v
			}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: input}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params, nil
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

func anthropicFailure(err error) (apiFailure, bool) {
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) {
		return apiFailure{}, false
	}
	f := apiFailure{status: aerr.StatusCode}
	if aerr.Response != nil {
		f.header = aerr.Response.Header
		// An error event inside a stream arrives on a 200 response whose body is the live stream;
		// only a refused request has a body that was read whole.
		if aerr.StatusCode != http.StatusOK && aerr.Response.Body != nil {
			b, _ := io.ReadAll(io.LimitReader(aerr.Response.Body, 64<<10))
			f.body = string(b)
		}
	}
	if f.body == "" {
		f.body = aerr.RawJSON()
	}
	f.errType, f.message = parseFailureBody(f.body)
	if f.errType == "" {
		f.errType = string(aerr.Type())
	}
	return f, true
}
