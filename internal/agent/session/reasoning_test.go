package session

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/infra/provider"
)

func TestReasoningMetadataComesBackAsItWasStreamed(t *testing.T) {
	cases := []struct {
		name string
		done provider.Reasoning // what ReasoningDone carried
		want string             // the part's metadata as stored
	}{
		{"a signed Anthropic thinking block", provider.Reasoning{Signature: "EqQBCgIYAh"}, `{"anthropic":{"signature":"EqQBCgIYAh"}}`},
		{"a redacted Anthropic thinking block", provider.Reasoning{Redacted: "EmwKAhgB"}, `{"anthropic":{"redactedData":"EmwKAhgB"}}`},
		{"an OpenAI reasoning item", provider.Reasoning{ItemID: "rs_1", Encrypted: "gAAAA"}, `{"openai":{"itemId":"rs_1","reasoningEncryptedContent":"gAAAA"}}`},
		{"reasoning without anything to send back", provider.Reasoning{}, `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			meta := reasoningMetadata(c.done)
			b, _ := json.Marshal(meta)
			if string(b) != c.want {
				t.Fatalf("metadata %s, want %s", b, c.want)
			}
			// Stored parts come back through JSON.
			var stored map[string]any
			if err := json.Unmarshal(b, &stored); err != nil {
				t.Fatal(err)
			}
			want := c.done
			want.Text = "thought"
			if diff := cmp.Diff(want, reasoningOf("thought", stored)); diff != "" {
				t.Fatalf("read back (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUserMessageSendsImagesAndPDFsAsAttachments(t *testing.T) {
	text := "look at these"
	parts := []Part{
		{Type: "text", Text: &text},
		{Type: "file", Mime: "image/png", Filename: "a.png", URL: "data:image/png;base64,AAAA"},
		{Type: "file", Mime: "application/pdf", Filename: "b.pdf", URL: "file:///p/b.pdf"},
		{Type: "file", Mime: "text/plain", Filename: "c.txt", URL: "file:///p/c.txt"},
	}
	want := provider.Message{Role: provider.RoleUser, Text: "look at these\n[attached file: c.txt (text/plain) file:///p/c.txt]",
		Attachments: []provider.Attachment{
			{Mime: "image/png", Filename: "a.png", URL: "data:image/png;base64,AAAA"},
			{Mime: "application/pdf", Filename: "b.pdf", URL: "file:///p/b.pdf"},
		}}
	if diff := cmp.Diff(want, userMessage(parts)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
