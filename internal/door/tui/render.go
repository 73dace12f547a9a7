package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

var (
	styleUser     = lipgloss.NewStyle().Border(lipgloss.ThickBorder(), false, false, false, true).BorderForeground(lipgloss.Color("12")).PaddingLeft(1)
	styleDim      = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	styleTool     = lipgloss.NewStyle().Foreground(lipgloss.Color("14")).Bold(true)
	styleOK       = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	styleBad      = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	styleWarn     = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	styleAdd      = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	styleDel      = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	styleHunk     = lipgloss.NewStyle().Foreground(lipgloss.Color("14"))
	styleOutput   = lipgloss.NewStyle().Foreground(lipgloss.Color("7"))
	styleStatus   = lipgloss.NewStyle().Background(lipgloss.Color("236")).Foreground(lipgloss.Color("252"))
	styleBadge    = lipgloss.NewStyle().Background(lipgloss.Color("3")).Foreground(lipgloss.Color("0")).Bold(true)
	styleSel      = lipgloss.NewStyle().Reverse(true)
	styleBox      = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("11")).Padding(0, 1)
	styleTitle    = lipgloss.NewStyle().Bold(true)
	styleFieldErr = lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true)
)

// toolLines is how many lines of a tool's output show while collapsed (the newest ones).
const toolLines = 12

// renderer turns parts into terminal text, caching each part's rendering until it changes.
type renderer struct {
	width int
	md    goldmark.Markdown
	cache map[string]cached
}

type cached struct {
	key string
	out string
}

func newRenderer() *renderer {
	return &renderer{width: 80, md: newMarkdown(), cache: map[string]cached{}}
}

func (r *renderer) setWidth(w int) {
	if w != r.width {
		r.width = w
		clear(r.cache)
	}
}

func (r *renderer) markdown(text string) string { return renderMarkdown(r.md, text, r.width-4) }

// conversation renders every message of the session.
// Messages from revert on (a session's undone turns) are left out.
func (r *renderer) conversation(c *conversation, revert string, thinking, fullTool bool) string {
	var b strings.Builder
	undone := 0
	for _, m := range c.msgs {
		if revert != "" && m.info.ID >= revert {
			if m.info.Role == "user" {
				undone++
			}
			continue
		}
		out := r.message(m, thinking, fullTool)
		if out == "" {
			continue
		}
		b.WriteString(out)
		b.WriteString("\n\n")
	}
	if undone > 0 {
		b.WriteString(styleDim.Render(fmt.Sprintf("⟲ %d prompt(s) undone — Ctrl+Y redoes, the next prompt makes it final", undone)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (r *renderer) message(m *message, thinking, fullTool bool) string {
	var blocks []string
	if m.info.Role == "user" {
		var texts []string
		for _, p := range m.parts {
			switch {
			case p.Type == "text" && p.Text != nil && !p.Synthetic:
				texts = append(texts, *p.Text)
			case p.Type == "file":
				texts = append(texts, "📎 "+p.Filename)
			}
		}
		if len(texts) == 0 {
			return ""
		}
		text := strings.Join(texts, "\n")
		if !fullTool {
			// A long prompt (a command's expanded template, a pasted log) shows its first lines.
			text = firstLines(text, 2*toolLines)
		}
		return styleUser.Width(max(r.width-2, 10)).Render(text)
	}
	for _, p := range m.parts {
		if out := r.part(p, thinking, fullTool); out != "" {
			blocks = append(blocks, out)
		}
	}
	if e := m.info.Error; e != nil && e.Name != "MessageAbortedError" {
		blocks = append(blocks, styleBad.Render("✗ "+errorText(e)))
	} else if e != nil {
		blocks = append(blocks, styleWarn.Render("■ stopped"))
	}
	return strings.Join(blocks, "\n")
}

func (r *renderer) part(p *session.Part, thinking, fullTool bool) string {
	text := ""
	if p.Text != nil {
		text = *p.Text
	}
	switch p.Type {
	case "text":
		if p.Synthetic || strings.TrimSpace(text) == "" {
			return ""
		}
		key := fmt.Sprintf("t%d", len(text))
		if c, ok := r.cache[p.ID]; ok && c.key == key {
			return c.out
		}
		out := r.markdown(text)
		r.cache[p.ID] = cached{key, out}
		return out
	case "reasoning":
		if strings.TrimSpace(text) == "" {
			return ""
		}
		if !thinking {
			return styleDim.Render(fmt.Sprintf("▸ thinking (%d lines) — ctrl+r shows it", strings.Count(strings.TrimSpace(text), "\n")+1))
		}
		return styleDim.Render("▾ thinking\n" + wrap(text, r.width-2))
	case "tool":
		return r.tool(p, fullTool)
	case "file":
		return "📎 " + p.Filename
	case "retry":
		return styleWarn.Render("↻ retrying")
	case "compaction":
		return styleDim.Render("— the conversation above was compacted —")
	}
	return ""
}

func (r *renderer) tool(p *session.Part, full bool) string {
	st := p.State
	if st == nil {
		return styleTool.Render("⚙ " + p.Tool)
	}
	out, _ := st.Metadata["output"].(string)
	key := fmt.Sprintf("%s %d %t %d %d", st.Status, len(out), full, len(st.Error), len(st.Input))
	if st.Output != nil {
		key += fmt.Sprintf(" %d", len(*st.Output))
	}
	if c, ok := r.cache[p.ID]; ok && c.key == key {
		return c.out
	}
	res := r.renderTool(p, full)
	r.cache[p.ID] = cached{key, res}
	return res
}

func (r *renderer) renderTool(p *session.Part, full bool) string {
	st := p.State
	var in map[string]any
	_ = json.Unmarshal(st.Input, &in)
	what := st.Title
	if c, ok := in["command"].(string); ok && c != "" {
		what = "$ " + c
	} else if f, ok := in["filePath"].(string); ok && what == "" {
		what = f
	}
	mark := map[string]string{"pending": styleDim.Render("…"), "running": styleWarn.Render("●"),
		"completed": styleOK.Render("✓"), "error": styleBad.Render("✗")}[st.Status]
	head := mark + " " + styleTool.Render(p.Tool) + " " + what
	var body string
	if d, ok := st.Metadata["diff"].(string); ok && d != "" {
		body = colourDiff(d)
	} else {
		out, _ := st.Metadata["output"].(string)
		if out == "" && st.Output != nil {
			out = *st.Output
		}
		out = strings.TrimRight(out, "\n")
		if out != "" {
			hidden := 0
			if !full {
				// Only the newest lines show: cut them from the end, without splitting a long output.
				cut := len(out)
				for n := 0; n < toolLines && cut > 0; n++ {
					cut = strings.LastIndexByte(out[:cut], '\n')
					if cut < 0 {
						cut = 0
					}
				}
				if cut > 0 {
					hidden = strings.Count(out[:cut], "\n") + 1
					out = out[cut+1:]
				}
			}
			lines := strings.Split(out, "\n")
			for i, l := range lines {
				lines[i] = truncate(l, r.width-4)
			}
			body = styleOutput.Render(strings.Join(lines, "\n"))
			if hidden > 0 {
				body = styleDim.Render(fmt.Sprintf("… %d earlier lines (ctrl+t shows all)", hidden)) + "\n" + body
			}
		}
	}
	if st.Status == "error" && st.Error != "" {
		body = strings.TrimLeft(body+"\n"+styleBad.Render(st.Error), "\n")
	}
	if body == "" {
		return head
	}
	return head + "\n" + indent(body, "  │ ")
}

// firstLines is text's first n lines, and how many more there are.
func firstLines(text string, n int) string {
	cut := 0
	for i := 0; i < n; i++ {
		j := strings.IndexByte(text[cut:], '\n')
		if j < 0 {
			return text
		}
		cut += j + 1
	}
	rest := strings.Count(text[cut:], "\n") + 1
	more := fmt.Sprintf("… %d more lines (ctrl+t shows all)", rest)
	if rest == 1 {
		more = "… 1 more line (ctrl+t shows all)"
	}
	return text[:cut] + styleDim.Render(more)
}

// colourDiff colours a unified diff: additions green, deletions red, hunk headers cyan.
func colourDiff(d string) string {
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "Index:"), strings.HasPrefix(l, "==="):
			lines[i] = styleDim.Render(l)
		case strings.HasPrefix(l, "@@"):
			lines[i] = styleHunk.Render(l)
		case strings.HasPrefix(l, "+"):
			lines[i] = styleAdd.Render(l)
		case strings.HasPrefix(l, "-"):
			lines[i] = styleDel.Render(l)
		}
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

func truncate(s string, w int) string {
	if w < 4 {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

func wrap(s string, w int) string {
	return lipgloss.NewStyle().Width(max(w, 10)).Render(s)
}
