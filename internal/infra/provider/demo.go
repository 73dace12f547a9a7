package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// DemoID is the provider and model ID of the offline demo model.
const DemoID = "demo"

// demoSlowPause is the pause between words of a `slow:` answer: long enough to press Abort.
const demoSlowPause = 300 * time.Millisecond

// Demo is an offline, deterministic model. It turns plain directives in the user's message into
// real tool calls, so every flow (approvals, questions, MCP tools, streaming, abort) can be seen
// without an API key. The same request always gets the same answer.
type Demo struct{}

// NewDemo returns the demo provider.
func NewDemo() *Demo { return &Demo{} }

// ID returns "demo".
func (*Demo) ID() string { return DemoID }

// Stream answers one request.
func (d *Demo) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	if err := ctx.Err(); err != nil {
		return ctxError(ctx)
	}
	reply := demoReply(req)
	usage := Usage{Input: int64(requestTokens(req))}
	if reply.call != nil {
		usage.Output = int64(len(strings.Fields(string(reply.call.Input))) + 1)
		if err := emit(Event{Kind: ToolCallReady, ToolCall: *reply.call}); err != nil {
			return err
		}
		return emit(Event{Kind: Finished, Reason: ReasonToolCalls, Usage: usage})
	}
	chunks := splitWords(reply.text)
	usage.Output = int64(len(chunks))
	for i, chunk := range chunks {
		if reply.slow && i > 0 {
			t := time.NewTimer(demoSlowPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctxError(ctx)
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			return ctxError(ctx)
		}
		if err := emit(Event{Kind: TextDelta, Text: chunk}); err != nil {
			return err
		}
	}
	return emit(Event{Kind: Finished, Reason: ReasonStop, Usage: usage})
}

type demoAnswer struct {
	text string
	slow bool
	call *ToolCall
}

func demoReply(req Request) demoAnswer {
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == RoleTool {
		return demoAnswer{text: reportToolResults(req.Messages)}
	}
	text, ok := lastUserText(req.Messages)
	if IsTitleRequest(req) {
		return demoAnswer{text: demoTitle(text)}
	}
	if ok && text == CompactionPrompt {
		return demoAnswer{text: demoSummary(req.Messages)}
	}
	if !ok {
		return demoAnswer{text: "Hello! I am tandem's offline demo model. Try `run: ls`, `read: README.md`, `ask: Which database? | Postgres | SQLite`, `fetch: https://example.com` or `task: explore | find the config loader`."}
	}
	name, input, slow, handled, problem := parseDirective(text)
	switch {
	case problem != "":
		return demoAnswer{text: problem}
	case slow != "":
		return demoAnswer{text: slow, slow: true}
	case !handled:
		return demoAnswer{text: "You said: " + text}
	}
	if !hasTool(req.Tools, name) {
		return demoAnswer{text: fmt.Sprintf("I would call the `%s` tool, but it is not available in this session.", name)}
	}
	raw, _ := json.Marshal(input) // maps marshal with sorted keys: the same request, the same bytes
	return demoAnswer{call: &ToolCall{ID: fmt.Sprintf("call_demo_%d", countToolCalls(req.Messages)+1), Name: name, Input: raw}}
}

// parseDirective reads a directive at the very start of the message. It returns the tool to call
// and its input, or the text of a slow answer, or a problem to report instead.
func parseDirective(text string) (tool string, input any, slow string, handled bool, problem string) {
	head, rest, _ := strings.Cut(text, "\n")
	switch {
	case strings.HasPrefix(text, "run: "):
		cmd := strings.TrimSpace(strings.TrimPrefix(text, "run: "))
		return "bash", map[string]string{"command": cmd, "description": "Run " + cmd}, "", true, ""
	case strings.HasPrefix(text, "read: "):
		return "read", map[string]string{"filePath": strings.TrimSpace(strings.TrimPrefix(head, "read: "))}, "", true, ""
	case strings.HasPrefix(text, "write: "):
		return "write", map[string]string{"filePath": strings.TrimSpace(strings.TrimPrefix(head, "write: ")), "content": rest}, "", true, ""
	case strings.HasPrefix(text, "edit: "):
		oldText, newText, ok := strings.Cut(rest, "\n---\n")
		if !ok {
			return "", nil, "", false, "To edit, write `edit: PATH`, then the old text, a line `---`, and the new text."
		}
		return "edit", map[string]string{"filePath": strings.TrimSpace(strings.TrimPrefix(head, "edit: ")), "oldString": oldText, "newString": newText}, "", true, ""
	case strings.HasPrefix(text, "ask: "):
		parts := strings.Split(strings.TrimPrefix(text, "ask: "), "|")
		q := strings.TrimSpace(parts[0])
		options := []map[string]string{}
		for _, o := range parts[1:] {
			if o = strings.TrimSpace(o); o != "" {
				options = append(options, map[string]string{"label": o, "description": ""})
			}
		}
		return "question", map[string]any{"questions": []map[string]any{{
			"question": q, "header": questionHeader(q), "options": options, "multiple": false,
		}}}, "", true, ""
	case strings.HasPrefix(text, "mcp: "):
		fields := strings.SplitN(strings.TrimSpace(strings.TrimPrefix(text, "mcp: ")), " ", 3)
		if len(fields) < 2 || fields[0] == "" || fields[1] == "" {
			return "", nil, "", false, "To call an MCP tool, write `mcp: SERVER TOOL {json}`."
		}
		in := json.RawMessage("{}")
		if len(fields) == 3 && strings.TrimSpace(fields[2]) != "" {
			in = json.RawMessage(strings.TrimSpace(fields[2]))
			var obj map[string]any
			if err := json.Unmarshal(in, &obj); err != nil {
				return "", nil, "", false, fmt.Sprintf("The input for %s_%s must be a JSON object: %v", fields[0], fields[1], err)
			}
		}
		return fields[0] + "_" + fields[1], in, "", true, ""
	case strings.HasPrefix(text, "fetch: "):
		return "webfetch", map[string]string{"url": strings.TrimSpace(strings.TrimPrefix(head, "fetch: ")), "format": "markdown"}, "", true, ""
	case head == "patch:" || strings.HasPrefix(text, "patch:\n"):
		if strings.TrimSpace(rest) == "" {
			return "", nil, "", false, "To patch, write `patch:` and, on the lines after it, a patch from `*** Begin Patch` to `*** End Patch`."
		}
		return "apply_patch", map[string]string{"patchText": rest}, "", true, ""
	case strings.HasPrefix(text, "task: "):
		agent, prompt, ok := strings.Cut(strings.TrimPrefix(text, "task: "), "|")
		agent, prompt = strings.TrimSpace(agent), strings.TrimSpace(prompt)
		if !ok || agent == "" || prompt == "" {
			return "", nil, "", false, "To start a subagent, write `task: AGENT | what it should do`, e.g. `task: explore | find the config loader`."
		}
		return "task", map[string]string{"description": taskDescription(prompt), "prompt": prompt, "subagent_type": agent}, "", true, ""
	case strings.HasPrefix(text, "slow: "):
		return "", nil, strings.TrimPrefix(text, "slow: "), false, ""
	}
	return "", nil, "", false, ""
}

// taskDescription is a task's short description: the first line of its prompt, in at most five words.
func taskDescription(prompt string) string {
	line, _, _ := strings.Cut(prompt, "\n")
	words := strings.Fields(line)
	if len(words) > 5 {
		words = words[:5]
	}
	return strings.Join(words, " ")
}

// questionHeader is the first words of q that fit OpenCode's 30-character header.
func questionHeader(q string) string {
	var b strings.Builder
	for _, w := range strings.Fields(q) {
		if b.Len() > 0 && b.Len()+1+len(w) > 30 {
			break
		}
		if b.Len() == 0 && len(w) > 30 {
			return w[:30]
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// reportToolResults describes the results that end the conversation.
func reportToolResults(msgs []Message) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == RoleTool {
		start--
	}
	var reports []string
	for _, m := range msgs[start:] {
		out := headAndTail(strings.TrimRight(m.Text, "\n"), 2000)
		switch {
		case m.IsError:
			reports = append(reports, "The tool failed: "+out)
		case m.ToolName == "bash":
			if cmd := commandOf(msgs, m.ToolCallID); cmd != "" {
				reports = append(reports, fmt.Sprintf("`%s` output:\n%s", cmd, out))
				continue
			}
			fallthrough
		default:
			name := m.ToolName
			if name == "" {
				name = "tool"
			}
			reports = append(reports, fmt.Sprintf("`%s` returned:\n%s", name, out))
		}
	}
	return strings.Join(reports, "\n\n")
}

// headAndTail shortens a long output to its first and last lines, about n bytes each, so that
// the end of a long command's output — where errors and results usually are — stays visible.
func headAndTail(out string, n int) string {
	if len(out) <= 2*n+200 {
		return out
	}
	head := out[:n]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i]
	}
	tail := out[len(out)-n:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	return strings.ToValidUTF8(head, "") + "\n…\n" + strings.ToValidUTF8(tail, "")
}

// commandOf finds the bash command of the call a result answers.
func commandOf(msgs []Message, callID string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, tc := range msgs[i].ToolCalls {
			if tc.ID != callID {
				continue
			}
			var in struct {
				Command string `json:"command"`
			}
			_ = json.Unmarshal(tc.Input, &in)
			return in.Command
		}
	}
	return ""
}

func lastUserText(msgs []Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Text, true
		}
	}
	return "", false
}

func hasTool(tools []ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func countToolCalls(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.ToolCalls)
	}
	return n
}

// requestTokens estimates the input tokens of a request as about four bytes a token. It sums
// lengths and reads no text: every model call counts the whole history, and a count that read it
// would make each turn cost more as the session grows.
func requestTokens(req Request) int {
	n := 0
	for _, s := range req.System {
		n += tokens(len(s))
	}
	for _, m := range req.Messages {
		n += tokens(len(m.Text))
		for _, tc := range m.ToolCalls {
			n += tokens(len(tc.Input)) + 1
		}
	}
	return n
}

func tokens(bytes int) int { return (bytes + 3) / 4 }

// splitWords cuts text into word-sized chunks that concatenate back to exactly text.
func splitWords(text string) []string {
	var chunks []string
	start := 0
	inSpace := false
	for i, r := range text {
		space := r == ' ' || r == '\n' || r == '\t'
		if !space && inSpace && i > start {
			chunks = append(chunks, text[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(text) {
		chunks = append(chunks, text[start:])
	}
	return chunks
}
