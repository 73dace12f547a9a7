package provider

import (
	"strings"
)

// CompactionPrompt is the last user message of a compaction call: it asks the model to summarise
// the conversation before it, so that the summary can stand in for that conversation from then on.
// The demo model answers it with a summary of its own.
const CompactionPrompt = "Summarise the conversation above for a new session that will not see it. " +
	"Say what the user asked for, what was done and found, which files were read or changed, " +
	"what is still in progress and what should happen next. Keep every detail needed to continue the work; " +
	"leave out pleasantries. Answer with the summary only."

// CompactionSystem is the system prompt of a compaction call.
const CompactionSystem = "You summarise coding sessions. The summary you write replaces the conversation, " +
	"so it must be complete enough to continue the work from it alone."

// SummaryQuestion is the user message that stands for a compaction in every history sent after
// it, followed by the summary as the assistant's answer.
const SummaryQuestion = "What did we do so far?"

// demoSummaryHeader opens every summary the demo model writes.
const demoSummaryHeader = "Summary of the conversation so far:"

// EstimateTokens is about how many input tokens a request costs: about four bytes a token of its
// system prompt, messages and tool declarations. It sums lengths and reads no text.
func EstimateTokens(req Request) int64 {
	n := requestTokens(req)
	for _, t := range req.Tools {
		n += tokens(len(t.Name)+len(t.Description)+len(t.Parameters)) + 1
	}
	return int64(n)
}

// demoSummary lists, one line each, the prompts of the conversation before the compaction
// instruction, after the lines of an earlier summary it finds there: what the demo model
// "remembers" of a conversation is exactly what it was sent.
func demoSummary(msgs []Message) string {
	lines := []string{demoSummaryHeader}
	for i, m := range msgs {
		if i == len(msgs)-1 {
			break // the compaction instruction itself
		}
		switch m.Role {
		case RoleAssistant:
			if rest, ok := strings.CutPrefix(m.Text, demoSummaryHeader); ok {
				for _, l := range strings.Split(rest, "\n") {
					if strings.HasPrefix(l, "- ") {
						lines = append(lines, l)
					}
				}
			}
		case RoleUser:
			text := strings.TrimSpace(m.Text)
			if text == "" || text == SummaryQuestion {
				continue
			}
			line, _, _ := strings.Cut(text, "\n")
			if r := []rune(line); len(r) > 120 {
				line = string(r[:119]) + "…"
			}
			lines = append(lines, "- The user asked: "+line)
		}
	}
	if len(lines) == 1 {
		lines = append(lines, "- Nothing was asked yet.")
	}
	return strings.Join(lines, "\n")
}
