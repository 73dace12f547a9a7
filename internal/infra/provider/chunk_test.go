package provider

import (
	"encoding/json"
	"testing"
)

func TestOpenAIChunkFieldsThatServersSendDifferently(t *testing.T) {
	tests := []struct {
		name, chunk        string
		reasoning, content string
		arguments          string
	}{
		{"reasoning_content as DeepSeek and vLLM send it", `{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`, "think", "", ""},
		{"reasoning as Ollama sends it", `{"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}`, "hmm", "", ""},
		{"reasoning that is not text is ignored, not fatal", `{"choices":[{"index":0,"delta":{"reasoning":{"effort":"low"},"content":"hi"}}]}`, "", "hi", ""},
		{"null content is empty", `{"choices":[{"index":0,"delta":{"content":null}}]}`, "", "", ""},
		{"content that is not text is ignored, not fatal", `{"choices":[{"index":0,"delta":{"content":[{"type":"text"}],"reasoning_content":"r"}}]}`, "r", "", ""},
		{"tool call arguments as a string fragment", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`, "", "", `{"a":`},
		{"tool call arguments as a JSON object", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read","arguments":{"a":1}}}]}}]}`, "", "", `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c openaiChunk
			if err := json.Unmarshal([]byte(tt.chunk), &c); err != nil {
				t.Fatal(err)
			}
			d := c.Choices[0].Delta
			var args string
			for _, tc := range d.ToolCalls {
				args += tc.Function.arguments()
			}
			if d.reasoning() != tt.reasoning || string(d.Content) != tt.content || args != tt.arguments {
				t.Errorf("reasoning %q content %q arguments %q, want %q %q %q", d.reasoning(), d.Content, args, tt.reasoning, tt.content, tt.arguments)
			}
		})
	}
}
