//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
)

// scriptedModel is an OpenAI-compatible Chat Completions server on loopback that both servers under
// test use as their model, so a turn costs the same model time for each. It answers from the
// conversation it is sent, the way the demo model does, so it needs no script per turn:
//
//   - the last message is a tool result: a short text reply ends the turn;
//   - the last user text holds "run: CMD": a bash tool call running CMD;
//   - anything else: a text reply of about sixty words in several deltas.
type scriptedModel struct {
	srv   *http.Server
	ln    net.Listener
	calls atomic.Int64
}

// startModel serves the model on ln until close.
func startModel(ln net.Listener) *scriptedModel {
	m := &scriptedModel{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.complete)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"scripted","object":"model","owned_by":"bench"}]}`))
	})
	m.srv = &http.Server{Handler: mux}
	go func() { _ = m.srv.Serve(ln) }()
	return m
}

// baseURL is what OPENAI_BASE_URL (tandem) or the provider's baseURL (OpenCode) is set to.
func (m *scriptedModel) baseURL() string { return "http://" + m.ln.Addr().String() + "/v1" }

func (m *scriptedModel) close() { _ = m.srv.Close() }

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// lastMessage decodes the last message of a Chat Completions request without decoding the rest:
// the whole history arrives with every call, and the model's own time should not grow with it.
// Both clients encode a message's role first, and a role key cannot appear unescaped inside a
// string, so the last `"role":` begins the last message.
func lastMessage(body []byte) (chatMessage, error) {
	var m chatMessage
	at := bytes.LastIndex(body, []byte(`"role":`))
	if at < 0 {
		return m, errors.New("no message")
	}
	start := bytes.LastIndexByte(body[:at], '{')
	if start < 0 {
		return m, errors.New("no message object")
	}
	err := json.NewDecoder(bytes.NewReader(body[start:])).Decode(&m)
	return m, err
}

const replyText = "Here is a short answer of about sixty words, so that every stored reply is about as " +
	"large as a real one: the session keeps it, lists it and sends it to every client that pages " +
	"through the history. Nothing in it depends on the prompt except this sentence's place in the " +
	"conversation, which is what the benchmark grows."

func (m *scriptedModel) complete(w http.ResponseWriter, r *http.Request) {
	n := m.calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	last, err := lastMessage(body)
	if err != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any, usage any) {
		chunk := map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1700000000, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		if usage != nil {
			chunk["choices"] = []any{}
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	lastText := text(last.Content)
	_, command, isRun := strings.Cut(lastText, "run: ")
	switch {
	case last.Role == "tool":
		send(map[string]any{"content": "Done."}, nil, nil)
		send(map[string]any{}, "stop", nil)
	case last.Role == "user" && isRun:
		command, _, _ = strings.Cut(command, "\n")
		args, _ := json.Marshal(map[string]string{"command": strings.TrimSpace(command), "description": "Runs the benchmark's command"})
		send(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": "bash", "arguments": string(args)},
		}}}, nil, nil)
		send(map[string]any{}, "tool_calls", nil)
	default:
		words := strings.SplitAfter(replyText, " ")
		for i := 0; i < len(words); i += 12 {
			send(map[string]any{"content": strings.Join(words[i:min(i+12, len(words))], "")}, nil, nil)
		}
		send(map[string]any{}, "stop", nil)
	}
	input := 100 + len(body)/4 // about four bytes a token
	send(nil, nil, map[string]any{"prompt_tokens": input, "completion_tokens": 60, "total_tokens": input + 60})
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// text is a message's text, whether its content is a string or an array of parts.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}
