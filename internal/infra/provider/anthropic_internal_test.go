package provider

import (
	"encoding/json"
	"testing"
)

func TestAnthropicToolInputIsAlwaysAnObject(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"an object is sent as it is", `{"command":"ls"}`, `{"command":"ls"}`},
		{"no arguments are an empty object", ``, `{}`},
		{"blank arguments are an empty object", "  \n", `{}`},
		{"arguments that were not JSON, kept as a string, are wrapped", `"{\"command\": ls"`, `{"input":"{\"command\": ls"}`},
		{"an array is wrapped", `[1,2]`, `{"input":"[1,2]"}`},
		{"broken JSON is wrapped", `{"a":`, `{"input":"{\"a\":"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := anthropicInput(json.RawMessage(tt.in))
			if string(got) != tt.want {
				t.Errorf("anthropicInput(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
