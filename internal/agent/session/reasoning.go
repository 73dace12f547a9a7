package session

import "github.com/tandem-dev/tandem/internal/infra/provider"

// A reasoning part's metadata keeps what its provider needs to take the reasoning back, under the
// provider's name and with the keys OpenCode's AI SDK uses: {"anthropic": {"signature"} or
// {"redactedData"}} for Claude's extended thinking, {"openai": {"itemId",
// "reasoningEncryptedContent"}} for OpenAI's Responses API.

func reasoningMetadata(r provider.Reasoning) map[string]any {
	switch {
	case r.Redacted != "":
		return map[string]any{"anthropic": map[string]any{"redactedData": r.Redacted}}
	case r.Signature != "":
		return map[string]any{"anthropic": map[string]any{"signature": r.Signature}}
	case r.ItemID != "" || r.Encrypted != "":
		o := map[string]any{"itemId": r.ItemID}
		if r.Encrypted != "" {
			o["reasoningEncryptedContent"] = r.Encrypted
		}
		return map[string]any{"openai": o}
	}
	return nil
}

// reasoningOf reads a stored reasoning part back into the provider's form.
func reasoningOf(text string, meta map[string]any) provider.Reasoning {
	r := provider.Reasoning{Text: text}
	str := func(provider, key string) string {
		m, _ := meta[provider].(map[string]any)
		s, _ := m[key].(string)
		return s
	}
	r.Signature = str("anthropic", "signature")
	r.Redacted = str("anthropic", "redactedData")
	r.ItemID = str("openai", "itemId")
	r.Encrypted = str("openai", "reasoningEncryptedContent")
	return r
}
