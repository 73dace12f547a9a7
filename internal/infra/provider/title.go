package provider

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// TitleSystem is the system prompt of a title call: after the first prompt of a session, its
// model is asked for a short title, as OpenCode's title agent does. The one user message of the
// call is that prompt.
const TitleSystem = "You write the title of a coding session from the first message the user sent in it. " +
	"Answer with the title only: at most 50 characters, in the user's language, no quotes, no trailing period, " +
	"no preamble. Name the task, not the user (\"Fix flaky login test\", not \"User wants to fix a test\")."

// TitleMaxRunes bounds a title: a longer answer is cut, with an ellipsis.
const TitleMaxRunes = 50

// IsTitleRequest reports whether req asks for a session title (its first system prompt is TitleSystem).
func IsTitleRequest(req Request) bool {
	return len(req.System) > 0 && req.System[0] == TitleSystem
}

// CleanTitle makes a model's answer a title: its first non-empty line, without surrounding quotes,
// markup, a "Title:" label or a trailing period, spaces collapsed, at most TitleMaxRunes runes.
func CleanTitle(answer string) string {
	line := ""
	for _, l := range strings.Split(answer, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.Join(strings.Fields(line), " ")
	if rest, ok := cutPrefixFold(line, "title:"); ok {
		line = strings.TrimSpace(rest)
	}
	line = strings.Trim(line, "\"'`*#“”‘’ ")
	line = strings.TrimRight(line, ".")
	if utf8.RuneCountInString(line) > TitleMaxRunes {
		r := []rune(line)
		line = strings.TrimRightFunc(string(r[:TitleMaxRunes-1]), unicode.IsSpace) + "…"
	}
	return line
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// demoTitle is the demo model's title for a first prompt: what its directive does, in words
// ("Run echo hi", "Question: Which DB?"), or the first line of plain text, capitalised.
func demoTitle(text string) string {
	text = strings.TrimSpace(text)
	head, _, _ := strings.Cut(text, "\n")
	head = strings.TrimSpace(head)
	after := func(p string) string { return strings.TrimSpace(strings.TrimPrefix(head, p)) }
	var title string
	switch {
	case strings.HasPrefix(head, "run: "):
		title = "Run " + after("run: ")
	case strings.HasPrefix(head, "read: "):
		title = "Read " + after("read: ")
	case strings.HasPrefix(head, "write: "):
		title = "Write " + after("write: ")
	case strings.HasPrefix(head, "edit: "):
		title = "Edit " + after("edit: ")
	case strings.HasPrefix(head, "ask: "):
		q, _, _ := strings.Cut(after("ask: "), "|")
		title = "Question: " + strings.TrimSpace(q)
	case strings.HasPrefix(head, "mcp: "):
		f := strings.Fields(after("mcp: "))
		if len(f) >= 2 {
			title = "Call " + f[1] + " on " + f[0]
		} else {
			title = "MCP call"
		}
	case strings.HasPrefix(head, "slow: "):
		title = "Slow answer"
	case head == "":
		title = "Empty message"
	default:
		r, n := utf8.DecodeRuneInString(head)
		title = string(unicode.ToUpper(r)) + head[n:]
	}
	return CleanTitle(title)
}
