package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tandem-dev/tandem/internal/infra/sse"
)

// The OpenAI Responses API (POST /responses) is what OpenAI's reasoning models speak best: their
// reasoning arrives as items with a summary that streams, and an encrypted copy that goes back with
// the next call so the model keeps its train of thought across tool calls. tandem calls it
// statelessly (store: false), so nothing of a conversation stays at OpenAI beyond the call.

// responsesRequest is the body of a streamed Responses call.
type responsesRequest struct {
	Model             string              `json:"model"`
	Stream            bool                `json:"stream"`
	Store             bool                `json:"store"`
	Input             []any               `json:"input"`
	Tools             []responsesTool     `json:"tools,omitempty"`
	ToolChoice        string              `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool               `json:"parallel_tool_calls,omitempty"`
	Reasoning         *responsesReasoning `json:"reasoning,omitempty"`
	Include           []string            `json:"include,omitempty"`
	MaxOutputTokens   int                 `json:"max_output_tokens,omitempty"`
}

type responsesTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

type responsesReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// The input items tandem sends.
type (
	responsesMessage struct {
		Role    string `json:"role"`
		Content any    `json:"content"` // a string, or []responsesContent with images
	}
	responsesContent struct {
		Type     string `json:"type"` // input_text | input_image
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	responsesReasoningItem struct {
		Type             string             `json:"type"` // reasoning
		ID               string             `json:"id,omitempty"`
		Summary          []responsesSummary `json:"summary"`
		EncryptedContent string             `json:"encrypted_content,omitempty"`
	}
	responsesSummary struct {
		Type string `json:"type"` // summary_text
		Text string `json:"text"`
	}
	responsesCall struct {
		Type      string `json:"type"` // function_call
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	responsesOutput struct {
		Type   string `json:"type"` // function_call_output
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
)

func (p *OpenAI) responsesBody(req Request) ([]byte, error) {
	r := responsesRequest{Model: req.Model, Stream: true, Input: []any{}, MaxOutputTokens: req.MaxTokens}
	if len(req.Tools) > 0 {
		r.ToolChoice, r.ParallelToolCalls = req.ToolChoice, req.ParallelToolCalls // refused without tools
	}
	if rs := req.Reasoning; rs != nil && (rs.Effort != "" || rs.Summary != "") {
		r.Reasoning = &responsesReasoning{Effort: rs.Effort, Summary: rs.Summary}
		// Without a stored conversation, the reasoning of one call reaches the next only encrypted.
		r.Include = []string{"reasoning.encrypted_content"}
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return nil, &Error{Kind: ErrBadRequest, Provider: p.id, Message: err.Error()}
		}
		r.Tools = append(r.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema})
	}
	for _, s := range req.System {
		r.Input = append(r.Input, responsesMessage{Role: "system", Content: s})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			images := imagesOf(m)
			if len(images) == 0 {
				r.Input = append(r.Input, responsesMessage{Role: "user", Content: m.Text})
				continue
			}
			var content []responsesContent
			if m.Text != "" {
				content = append(content, responsesContent{Type: "input_text", Text: m.Text})
			}
			for _, a := range images {
				content = append(content, responsesContent{Type: "input_image", ImageURL: a.DataURL()})
			}
			r.Input = append(r.Input, responsesMessage{Role: "user", Content: content})
		case RoleAssistant:
			for _, rs := range m.Reasoning {
				if rs.Encrypted == "" && rs.ItemID == "" {
					continue // another provider's reasoning: OpenAI cannot take it back
				}
				item := responsesReasoningItem{Type: "reasoning", ID: rs.ItemID, Summary: []responsesSummary{}, EncryptedContent: rs.Encrypted}
				if rs.Text != "" {
					item.Summary = append(item.Summary, responsesSummary{Type: "summary_text", Text: rs.Text})
				}
				r.Input = append(r.Input, item)
			}
			if m.Text != "" {
				r.Input = append(r.Input, responsesMessage{Role: "assistant", Content: m.Text})
			}
			for _, tc := range m.ToolCalls {
				r.Input = append(r.Input, responsesCall{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: string(inputOrEmpty(tc.Input))})
			}
		case RoleTool:
			r.Input = append(r.Input, responsesOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: toolResultText(m)})
		default:
			return nil, &Error{Kind: ErrBadRequest, Provider: p.id, Message: fmt.Sprintf("unknown message role %q", m.Role)}
		}
	}
	return json.Marshal(r)
}

// responsesEvent is one event of a streamed Responses answer, with the fields tandem reads.
type responsesEvent struct {
	Type        string          `json:"type"`
	OutputIndex int64           `json:"output_index"`
	Delta       string          `json:"delta"`
	Item        responsesItem   `json:"item"`
	Response    responsesResult `json:"response"`
	// error events
	Code    looseString `json:"code"`
	Message string      `json:"message"`
}

type responsesItem struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
}

type responsesResult struct {
	Status            string          `json:"status"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

// streamResponses runs one Responses call.
func (p *OpenAI) streamResponses(ctx context.Context, req Request, emit func(Event) error) error {
	body, err := p.responsesBody(req)
	if err != nil {
		return err
	}
	w := watchIdle(ctx, p.idle)
	defer w.stop()
	resp, err := postStream(w.ctx, p.http, p.responsesURL, body, p.header)
	if err != nil {
		return failure(ctx, w, p.id, err, failureOf)
	}
	defer resp.Body.Close()

	var (
		usage    Usage
		finish   string
		hadCalls bool
		calls    = map[int64]*pendingCall{}
		summary  = map[int64]bool{} // reasoning items whose summary has begun
	)
	events := sse.NewReader(resp.Body)
	for finish == "" {
		frame, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failure(ctx, w, p.id, err, failureOf)
		}
		w.kick()
		var ev responsesEvent
		if err := json.Unmarshal(frame.Data, &ev); err != nil {
			return unreadable(p.id, err)
		}
		switch ev.Type {
		case "error":
			return failure(ctx, w, p.id, streamFailure(frame.Data), failureOf)
		case "response.failed":
			return failure(ctx, w, p.id, streamFailure(ev.Response.errorEnvelope()), failureOf)
		case "response.output_text.delta":
			if err := emit(Event{Kind: TextDelta, Text: ev.Delta}); err != nil {
				return err
			}
		case "response.reasoning_summary_part.added":
			if summary[ev.OutputIndex] {
				// Summary parts are paragraphs of one reasoning item.
				if err := emit(Event{Kind: ReasoningDelta, Text: "\n\n"}); err != nil {
					return err
				}
			}
			summary[ev.OutputIndex] = true
		case "response.reasoning_summary_text.delta":
			summary[ev.OutputIndex] = true
			if err := emit(Event{Kind: ReasoningDelta, Text: ev.Delta}); err != nil {
				return err
			}
		case "response.output_item.added":
			if ev.Item.Type == "function_call" {
				c := &pendingCall{id: ev.Item.CallID, name: ev.Item.Name}
				c.args.WriteString(ev.Item.Arguments)
				calls[ev.OutputIndex] = c
			}
		case "response.function_call_arguments.delta":
			if c := calls[ev.OutputIndex]; c != nil {
				c.args.WriteString(ev.Delta)
			}
		case "response.output_item.done":
			switch ev.Item.Type {
			case "reasoning":
				r := Reasoning{ItemID: ev.Item.ID, Encrypted: ev.Item.EncryptedContent}
				if err := emit(Event{Kind: ReasoningDone, Reasoning: r}); err != nil {
					return err
				}
			case "function_call":
				c := calls[ev.OutputIndex]
				delete(calls, ev.OutputIndex)
				if c == nil {
					c = &pendingCall{id: ev.Item.CallID, name: ev.Item.Name}
				}
				if ev.Item.Arguments != "" { // the whole arguments, as the deltas added up
					c.args.Reset()
					c.args.WriteString(ev.Item.Arguments)
				}
				hadCalls = true
				acc := toolAccumulator{calls: []*pendingCall{c}}
				if err := emit(Event{Kind: ToolCallReady, ToolCall: acc.finish()[0]}); err != nil {
					return err
				}
			}
		case "response.completed", "response.incomplete":
			if u := ev.Response.Usage; u != nil {
				cached, reasoning := u.InputTokensDetails.CachedTokens, u.OutputTokensDetails.ReasoningTokens
				usage = Usage{Input: max(u.InputTokens-cached, 0), CacheRead: cached,
					Output: max(u.OutputTokens-reasoning, 0), Reasoning: reasoning}
			}
			finish = responsesReason(ev.Response, hadCalls)
		}
		w.kick() // time spent in emit is the caller's, not the provider's silence
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if finish == "" {
		return &Error{Kind: ErrNetwork, Provider: p.id, Message: "the response ended before the model finished (no response.completed)"}
	}
	return emit(Event{Kind: Finished, Reason: finish, Usage: usage})
}

// errorEnvelope wraps a failed response's error object the way an HTTP error body carries it, so
// that one classification reads both.
func (r responsesResult) errorEnvelope() []byte {
	b, _ := json.Marshal(map[string]json.RawMessage{"error": r.Error})
	return b
}

func responsesReason(r responsesResult, hadCalls bool) string {
	if r.Status == "incomplete" {
		switch r.IncompleteDetails.Reason {
		case "max_output_tokens":
			return ReasonLength
		case "content_filter":
			return ReasonContentFilter
		}
		return ReasonOther
	}
	if hadCalls {
		return ReasonToolCalls
	}
	return ReasonStop
}
