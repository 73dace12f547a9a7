package providertest

import (
	"encoding/json"
	"net/http"
)

type openaiWire struct{}

func (openaiWire) path() string { return "/v1/chat/completions" }

func (openaiWire) refuse(w http.ResponseWriter, turn Turn) {
	body := turn.Body
	if body == "" {
		typ, code, msg := "invalid_request_error", "", "bad request"
		switch {
		case turn.Status == http.StatusUnauthorized:
			code, msg = "invalid_api_key", "Incorrect API key provided: sk-test."
		case turn.Status == http.StatusTooManyRequests:
			typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests."
		case turn.Status >= 500:
			typ, msg = "server_error", "The server had an error while processing your request."
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nullable(code)}})
		body = string(b)
	}
	writeErrorBody(w, turn.Status, body)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (openaiWire) stream(s *sseWriter, turn Turn, req map[string]any) {
	model, _ := req["model"].(string)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, r := range turn.Reasoning {
		s.event("", chunk(map[string]any{"reasoning_content": r}, nil))
	}
	for _, t := range turn.Text {
		s.event("", chunk(map[string]any{"content": t}, nil))
	}
	for i, tc := range turn.ToolCalls {
		if turn.WholeToolCalls {
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": turn.WholeToolCallIndex, "id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}}}, nil))
			continue
		}
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, frag := range Fragments(tc.Arguments, fragmentSize) {
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": frag},
			}}}, nil))
		}
	}
	if turn.StreamError != "" {
		s.event("", map[string]any{"error": map[string]any{"message": "The scripted stream failed.", "type": turn.StreamError}})
		return
	}
	if turn.Hang || turn.Truncate {
		return
	}
	finish := turn.Finish
	if finish == "" {
		finish = "stop"
		if len(turn.ToolCalls) > 0 && !turn.WholeToolCalls {
			finish = "tool_calls"
		}
	}
	s.event("", chunk(map[string]any{}, finish))
	if opts, _ := req["stream_options"].(map[string]any); opts["include_usage"] == true {
		u := turn.Usage
		s.event("", map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000, "model": model, "choices": []any{},
			"usage": map[string]any{
				"prompt_tokens": u.Input + u.CacheRead, "completion_tokens": u.Output + u.Reasoning,
				"total_tokens":              u.Input + u.CacheRead + u.Output + u.Reasoning,
				"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheRead},
				"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
			},
		})
	}
	s.event("", "[DONE]")
}
