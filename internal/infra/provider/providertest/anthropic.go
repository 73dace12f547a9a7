package providertest

import (
	"encoding/json"
	"net/http"
)

// Signature is the signature of every thinking block the scripted Anthropic server streams.
const Signature = "c2lnbmF0dXJl"

type anthropicWire struct{}

func (anthropicWire) path() string { return "/v1/messages" }

func (anthropicWire) refuse(w http.ResponseWriter, turn Turn) {
	body := turn.Body
	if body == "" {
		typ, msg := "invalid_request_error", "bad request"
		switch {
		case turn.Status == http.StatusUnauthorized:
			typ, msg = "authentication_error", "invalid x-api-key"
		case turn.Status == http.StatusForbidden:
			typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
		case turn.Status == http.StatusTooManyRequests:
			typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."
		case turn.Status == 529:
			typ, msg = "overloaded_error", "Overloaded"
		case turn.Status >= 500:
			typ, msg = "api_error", "Internal server error"
		}
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		body = string(b)
	}
	writeErrorBody(w, turn.Status, body)
}

func (anthropicWire) stream(s *sseWriter, turn Turn, req map[string]any) {
	model, _ := req["model"].(string)
	u := turn.Usage
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": 1,
			"cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CacheRead},
	}})
	s.event("ping", map[string]any{"type": "ping"})
	index := 0
	block := func(start map[string]any, deltas []map[string]any) {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start})
		for _, d := range deltas {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if len(turn.Reasoning) > 0 {
		var deltas []map[string]any
		for _, r := range turn.Reasoning {
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": r})
		}
		deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": Signature})
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, deltas)
	}
	if len(turn.Text) > 0 {
		var deltas []map[string]any
		for _, t := range turn.Text {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": t})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas)
	}
	for _, tc := range turn.ToolCalls {
		var deltas []map[string]any
		for _, frag := range Fragments(tc.Arguments, fragmentSize) {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": frag})
		}
		block(map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}, deltas)
	}
	if turn.StreamError != "" {
		s.event("error", map[string]any{"type": "error", "error": map[string]any{"type": turn.StreamError, "message": "The scripted stream failed."}})
		return
	}
	if turn.Hang || turn.Truncate {
		return
	}
	stop := turn.Finish
	if stop == "" {
		stop = "end_turn"
		if len(turn.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	usage := map[string]any{"output_tokens": u.Output + u.Reasoning}
	if u.Reasoning > 0 {
		usage["output_tokens_details"] = map[string]any{"thinking_tokens": u.Reasoning}
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
