package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tandem-dev/tandem/internal/infra/sse"
)

// OpenAIBaseURL is the endpoint used when no baseURL is configured.
const OpenAIBaseURL = "https://api.openai.com/v1"

// OpenAIOptions configures an OpenAI-compatible Chat Completions endpoint.
type OpenAIOptions struct {
	ID      string // the provider ID: "openai", "ollama", ...
	BaseURL string // empty means OpenAIBaseURL
	APIKey  string // empty sends no Authorization header (Ollama, llama.cpp)
	Headers map[string]string
	// IdleTimeout bounds the silence before the first chunk and between chunks: 0 means
	// DefaultIdleTimeout, negative disables it.
	IdleTimeout time.Duration
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens; servers other than
	// OpenAI's own mostly understand only the older name.
	LegacyMaxTokens bool
	// Responses says which models are called through the Responses API (POST /responses)
	// instead of Chat Completions; nil: none.
	Responses func(model string) bool
}

// OpenAI streams Chat Completions from any OpenAI-compatible server. It speaks the wire format
// itself: the body is encoded by hand (see body) and the stream is a plain SSE reader, which is all
// a streamed call needs; the official SDK's 200-odd packages cost 6 MB of idle RSS and 29 MB of
// binary for that.
type OpenAI struct {
	id           string
	url          string // the chat/completions endpoint
	responsesURL string // the responses endpoint
	responses    func(string) bool
	header       http.Header
	idle         time.Duration
	legacy       bool
	http         *http.Client
}

// NewOpenAI builds the provider. It never reads the process environment: the configuration
// already merged it.
func NewOpenAI(o OpenAIOptions) *OpenAI {
	base := o.BaseURL
	if base == "" {
		base = OpenAIBaseURL
	}
	header := http.Header{}
	if o.APIKey != "" {
		header.Set("Authorization", "Bearer "+o.APIKey)
	}
	for k, v := range o.Headers {
		header.Set(k, v)
	}
	base = strings.TrimRight(base, "/")
	return &OpenAI{
		id: o.ID, url: base + "/chat/completions", responsesURL: base + "/responses", responses: o.Responses, header: header,
		idle: idleLimit(o.IdleTimeout), legacy: o.LegacyMaxTokens, http: newHTTPClient(),
	}
}

func idleLimit(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultIdleTimeout
	}
	return d
}

// ID returns the provider ID.
func (p *OpenAI) ID() string { return p.id }

// Close releases idle connections.
func (p *OpenAI) Close() { p.http.CloseIdleConnections() }

// Stream runs one Chat Completions call, or a Responses call for the models configured so.
func (p *OpenAI) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	if p.responses != nil && p.responses(req.Model) {
		return p.streamResponses(ctx, req, emit)
	}
	body, err := p.body(req)
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
		calls  toolAccumulator
		finish string
		usage  Usage
	)
	events := sse.NewReader(resp.Body)
	for {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failure(ctx, w, p.id, err, failureOf)
		}
		w.kick()
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		var chunk openaiChunk
		if err := json.Unmarshal(ev.Data, &chunk); err != nil {
			return unreadable(p.id, err)
		}
		if len(chunk.Error) > 0 && !bytes.Equal(chunk.Error, []byte("null")) {
			return failure(ctx, w, p.id, streamFailure(ev.Data), failureOf)
		}
		if u := chunk.Usage; u != nil && (u.PromptTokens > 0 || u.CompletionTokens > 0) {
			usage = u.usage()
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue // we never ask for n > 1
			}
			if r := choice.Delta.reasoning(); r != "" {
				if err := emit(Event{Kind: ReasoningDelta, Text: r}); err != nil {
					return err
				}
			}
			if choice.Delta.Content != "" {
				if err := emit(Event{Kind: TextDelta, Text: string(choice.Delta.Content)}); err != nil {
					return err
				}
			}
			for _, tc := range choice.Delta.ToolCalls {
				calls.add(tc.Index, string(tc.ID), string(tc.Function.Name), tc.Function.arguments())
			}
			if choice.FinishReason != "" {
				finish = string(choice.FinishReason)
			}
		}
		w.kick() // time spent in emit is the caller's, not the provider's silence
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if finish == "" {
		// Every server we know ends with a finish_reason; a stream without one was cut short.
		return &Error{Kind: ErrNetwork, Provider: p.id, Message: "the response ended before the model finished (no finish_reason)"}
	}
	ready := calls.finish()
	for _, tc := range ready {
		if err := emit(Event{Kind: ToolCallReady, ToolCall: tc}); err != nil {
			return err
		}
	}
	return emit(Event{Kind: Finished, Reason: openaiReason(finish, len(ready) > 0), Usage: usage})
}

// openaiRequest is the body of a streaming Chat Completions call but its messages, which body
// appends as it encodes them.
type openaiRequest struct {
	Stream        bool   `json:"stream"`
	Model         string `json:"model"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int              `json:"max_tokens,omitempty"`
	MaxCompletionTokens int              `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string           `json:"reasoning_effort,omitempty"`
	Tools               []openaiWireTool `json:"tools,omitempty"`
	ToolChoice          string           `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool            `json:"parallel_tool_calls,omitempty"`
}

type openaiWireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

// body encodes the request. The history is sent whole with every call, so its encoding is what a
// long session's turn grows with: the official SDK's reflective encoding of its param and union
// types cost more than everything else such a turn did, and encoding/json's check of each
// pre-encoded message again more than writing the messages straight into the body.
func (p *OpenAI) body(req Request) ([]byte, error) {
	r := openaiRequest{Stream: true, Model: req.Model}
	r.StreamOptions.IncludeUsage = true
	if rs := req.Reasoning; rs != nil {
		r.ReasoningEffort = rs.Effort
	}
	if len(req.Tools) > 0 {
		r.ToolChoice, r.ParallelToolCalls = req.ToolChoice, req.ParallelToolCalls // refused without tools
	}
	if req.MaxTokens > 0 {
		if p.legacy {
			r.MaxTokens = req.MaxTokens
		} else {
			r.MaxCompletionTokens = req.MaxTokens
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return nil, &Error{Kind: ErrBadRequest, Provider: p.id, Message: err.Error()}
		}
		tool := openaiWireTool{Type: "function"}
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, schema
		r.Tools = append(r.Tools, tool)
	}
	head, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	size := len(head) + 16
	for _, s := range req.System {
		size += len(s) + 32
	}
	for _, m := range req.Messages {
		size += len(m.Text) + 64
		for _, a := range m.Attachments {
			size += len(a.Data)*4/3 + 64
		}
		for _, tc := range m.ToolCalls {
			size += len(tc.ID) + len(tc.Name) + len(tc.Input) + 64
		}
	}
	b := make([]byte, 0, size)
	b = append(b, head[:len(head)-1]...) // without its closing brace
	b = append(b, `,"messages":[`...)
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	for _, s := range req.System {
		sep()
		b = append(b, `{"role":"system","content":`...)
		b = appendJSONString(b, s)
		b = append(b, '}')
	}
	b, err = req.Cache.encodeMessages(b, "openai-chat", req.Messages, first, p.appendMessage)
	if err != nil {
		return nil, err
	}
	return append(b, "]}"...), nil
}

// appendMessage appends one history message as a Chat Completions message, or nothing for an
// empty assistant turn (an aborted one), which most servers refuse.
func (p *OpenAI) appendMessage(b []byte, m Message) ([]byte, error) {
	switch m.Role {
	case RoleUser:
		b = append(b, `{"role":"user","content":`...)
		images := imagesOf(m)
		if len(images) == 0 {
			b = appendJSONString(b, m.Text)
			return append(b, '}'), nil
		}
		// With images the content is a list of parts: the text, then each image as a data: URL.
		b = append(b, '[')
		if m.Text != "" {
			b = append(b, `{"type":"text","text":`...)
			b = appendJSONString(b, m.Text)
			b = append(b, "},"...)
		}
		for i, a := range images {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"image_url","image_url":{"url":`...)
			b = appendJSONString(b, a.DataURL())
			b = append(b, "}}"...)
		}
		return append(b, "]}"...), nil
	case RoleAssistant:
		if m.Text == "" && len(m.ToolCalls) == 0 {
			return b, nil
		}
		b = append(b, `{"role":"assistant"`...)
		if m.Text != "" {
			b = append(b, `,"content":`...)
			b = appendJSONString(b, m.Text)
		}
		if len(m.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for i, tc := range m.ToolCalls {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = appendJSONString(b, tc.ID)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = appendJSONString(b, tc.Name)
				b = append(b, `,"arguments":`...)
				b = appendJSONString(b, string(inputOrEmpty(tc.Input)))
				b = append(b, "}}"...)
			}
			b = append(b, ']')
		}
		return append(b, '}'), nil
	case RoleTool:
		b = append(b, `{"role":"tool","tool_call_id":`...)
		b = appendJSONString(b, m.ToolCallID)
		b = append(b, `,"content":`...)
		b = appendJSONString(b, toolResultText(m))
		return append(b, '}'), nil
	default:
		return nil, &Error{Kind: ErrBadRequest, Provider: p.id, Message: fmt.Sprintf("unknown message role %q", m.Role)}
	}
}

// appendJSONString appends s as a JSON string, as encoding/json writes it (invalid UTF-8 becomes
// U+FFFD; <, > and & are left as they are).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but end lines in JavaScript; encoding/json escapes them.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// toolResultText marks failed results for APIs that have no error flag.
func toolResultText(m Message) string {
	if m.IsError && !strings.HasPrefix(strings.ToLower(m.Text), "error") {
		return "Error: " + m.Text
	}
	if m.Text == "" {
		return "(no output)"
	}
	return m.Text
}

func inputOrEmpty(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return in
}

func schemaObject(t ToolSpec) (map[string]any, error) {
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	if len(t.Parameters) == 0 {
		return schema, nil
	}
	if err := json.Unmarshal(t.Parameters, &schema); err != nil {
		return nil, fmt.Errorf("tool %q: parameters are not a JSON Schema object: %v", t.Name, err)
	}
	return schema, nil
}

// openaiChunk is one chunk of a streamed Chat Completions answer, with the fields tandem reads.
// Servers differ in what they put there, so the fields whose type varies are read leniently.
type openaiChunk struct {
	Choices []struct {
		Index        int64       `json:"index"`
		Delta        openaiDelta `json:"delta"`
		FinishReason looseString `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiUsage    `json:"usage"`
	Error json.RawMessage `json:"error"` // an error event inside the stream
}

type openaiDelta struct {
	Content looseString `json:"content"`
	// DeepSeek, vLLM and llama.cpp stream reasoning as reasoning_content, Ollama and OpenRouter as
	// reasoning; OpenAI's own API never streams it.
	ReasoningContent looseString `json:"reasoning_content"`
	Reasoning        looseString `json:"reasoning"`
	ToolCalls        []struct {
		Index    int64          `json:"index"`
		ID       looseString    `json:"id"`
		Function openaiFunction `json:"function"`
	} `json:"tool_calls"`
}

type openaiFunction struct {
	Name      looseString     `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (d openaiDelta) reasoning() string {
	if d.ReasoningContent != "" {
		return string(d.ReasoningContent)
	}
	return string(d.Reasoning)
}

// arguments is a tool call's argument fragment: a string on the wire, but some servers send the
// whole arguments as a JSON object.
func (f openaiFunction) arguments() string {
	var s string
	if json.Unmarshal(f.Arguments, &s) == nil {
		return s
	}
	if raw := bytes.TrimSpace(f.Arguments); len(raw) > 0 && raw[0] == '{' {
		return string(raw)
	}
	return ""
}

// looseString reads a JSON string and takes anything else (null, an object where another server
// sends text) as empty, so one server's extension cannot fail a whole chunk.
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = looseString(v)
	}
	return nil
}

type openaiUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *openaiUsage) usage() Usage {
	cached := u.PromptTokensDetails.CachedTokens
	reasoning := u.CompletionTokensDetails.ReasoningTokens
	return Usage{
		Input:     max(u.PromptTokens-cached, 0),
		Output:    max(u.CompletionTokens-reasoning, 0),
		Reasoning: reasoning,
		CacheRead: cached,
	}
}

func openaiReason(finish string, hadToolCalls bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return ReasonToolCalls
	case "length":
		return ReasonLength
	case "content_filter":
		return ReasonContentFilter
	case "stop", "":
		if hadToolCalls {
			return ReasonToolCalls // Ollama says "stop" after tool calls
		}
		return ReasonStop
	}
	return ReasonOther
}

// toolAccumulator joins streamed tool-call fragments. OpenAI sends an id and name once and then
// argument fragments by index; Ollama sends each whole call in one chunk, sometimes every call at
// index 0; some servers use index -1. A new id, or a new name after complete arguments, therefore
// starts a new call even at a known index.
type toolAccumulator struct {
	calls   []*pendingCall
	byIndex map[int64]*pendingCall
}

type pendingCall struct {
	id, name string
	args     strings.Builder
}

func (a *toolAccumulator) add(index int64, id, name, args string) {
	if a.byIndex == nil {
		a.byIndex = map[int64]*pendingCall{}
	}
	cur := a.byIndex[index]
	switch {
	case cur == nil,
		id != "" && cur.id != "" && id != cur.id,
		name != "" && cur.name != "" && cur.args.Len() > 0 && json.Valid([]byte(cur.args.String())):
		cur = &pendingCall{}
		a.calls = append(a.calls, cur)
		a.byIndex[index] = cur
	}
	if cur.id == "" {
		cur.id = id
	}
	if cur.name == "" {
		cur.name = name
	}
	cur.args.WriteString(args)
}

// finish returns the complete calls in the order they began. Arguments that are not JSON are
// passed on as a JSON string, so the tool's own validation explains the problem to the model.
func (a *toolAccumulator) finish() []ToolCall {
	out := make([]ToolCall, 0, len(a.calls))
	for i, c := range a.calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		args := strings.TrimSpace(c.args.String())
		var input json.RawMessage
		switch {
		case args == "":
			input = json.RawMessage("{}")
		case json.Valid([]byte(args)):
			input = json.RawMessage(args)
		default:
			input, _ = json.Marshal(args)
		}
		out = append(out, ToolCall{ID: id, Name: c.name, Input: input})
	}
	return out
}
