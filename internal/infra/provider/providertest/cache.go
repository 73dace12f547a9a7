package providertest

import (
	"crypto/sha256"
	"encoding/json"
)

// AnthropicCache bills Messages requests the way Anthropic's prompt caching documents it, so that
// a test can see what tandem's cache breakpoints save. The prompt is read in the API's order —
// tools, system, then each message's content blocks — and a block with cache_control is a
// breakpoint: the prefix up to it is written to the cache, unless it is shorter than MinTokens.
// A later request reads the longest prefix that was written, found at a breakpoint or at most
// Lookback blocks before one; what lies between that and the last breakpoint is written anew, and
// only what follows the last breakpoint is plain input. Tokens are counted as a quarter of each
// block's JSON bytes: the real tokenizer is not public, and the bill compares placements of
// breakpoints, not absolute counts. Every write stays readable (a turn lasts less than the cache's
// five minutes).
type AnthropicCache struct {
	MinTokens int64 // the smallest cacheable prefix (1024 for Claude Sonnet)
	Lookback  int   // how many blocks before a breakpoint a hit is looked for (20)
	// Strip, when set, decides which breakpoints the bill ignores, as if they were not sent: a
	// request billed as an older placement would have been.
	Strip func(where string) bool // where: "tools", "system" or "messages"

	written map[[32]byte]bool
}

// NewAnthropicCache is a cache with the documented limits of Claude Sonnet.
func NewAnthropicCache() *AnthropicCache {
	return &AnthropicCache{MinTokens: 1024, Lookback: 20}
}

type cacheBlock struct {
	tokens int64
	mark   bool
	key    []byte
}

// Usage bills one request body.
func (c *AnthropicCache) Usage(body []byte) Usage {
	if c.written == nil {
		c.written = map[[32]byte]bool{}
	}
	var req struct {
		Tools    []map[string]any `json:"tools"`
		System   []map[string]any `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return Usage{}
	}
	var blocks []cacheBlock
	add := func(where, role string, b map[string]any) {
		_, mark := b["cache_control"]
		if c.Strip != nil && c.Strip(where) {
			mark = false
		}
		delete(b, "cache_control")
		raw, _ := json.Marshal(b)
		blocks = append(blocks, cacheBlock{tokens: (int64(len(raw)) + 3) / 4, mark: mark, key: append([]byte(role+":"), raw...)})
	}
	for _, t := range req.Tools {
		add("tools", "tool", t)
	}
	for _, s := range req.System {
		add("system", "system", s)
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			add("messages", m.Role, b)
		}
	}
	// prefix[i] identifies blocks[0..i]; total[i] counts their tokens.
	prefix := make([][32]byte, len(blocks))
	total := make([]int64, len(blocks))
	h := sha256.New()
	var sum int64
	for i, b := range blocks {
		h.Write(b.key)
		h.Write([]byte{0})
		copy(prefix[i][:], h.Sum(nil))
		sum += b.tokens
		total[i] = sum
	}
	read, last := int64(0), -1
	for i, b := range blocks {
		if !b.mark {
			continue
		}
		last = i
		for j := i; j >= 0 && j >= i-c.Lookback; j-- {
			if c.written[prefix[j]] {
				read = max(read, total[j])
				break
			}
		}
	}
	var write int64
	if last >= 0 {
		for i, b := range blocks {
			if b.mark && total[i] >= c.MinTokens && total[i] > read {
				c.written[prefix[i]] = true
			}
		}
		if total[last] >= c.MinTokens && total[last] > read {
			write = total[last] - read
		}
	}
	return Usage{Input: sum - read - write, CacheRead: read, CacheWrite: write}
}
