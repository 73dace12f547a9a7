package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// The Markdown renderer walks goldmark's syntax tree and styles it with lipgloss. It replaces a
// full terminal Markdown library whose syntax highlighter registered hundreds of lexers at
// program start: every `tandem` command, the server included, paid ~25 ms and several MB for it.
var (
	mdHeading = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	mdCode    = lipgloss.NewStyle().Foreground(lipgloss.Color("215"))
	mdBlock   = lipgloss.NewStyle().Foreground(lipgloss.Color("252"))
	mdLink    = lipgloss.NewStyle().Foreground(lipgloss.Color("14")).Underline(true)
	mdQuote   = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	mdBold    = lipgloss.NewStyle().Bold(true)
	mdItalic  = lipgloss.NewStyle().Italic(true)
	mdStrike  = lipgloss.NewStyle().Strikethrough(true)
)

// newMarkdown is the parser: CommonMark with GitHub's tables, strikethrough and task lists.
func newMarkdown() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))
}

// renderMarkdown renders src for a terminal width columns wide.
func renderMarkdown(md goldmark.Markdown, src string, width int) string {
	width = max(width, 20)
	source := []byte(src)
	doc := md.Parser().Parse(text.NewReader(source))
	m := mdWriter{src: source}
	return strings.Trim(m.blocks(doc, width), "\n")
}

type mdWriter struct{ src []byte }

// blocks renders the block children of n, separated by blank lines.
func (m mdWriter) blocks(n gast.Node, width int) string {
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := m.block(c, width); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n\n")
}

func (m mdWriter) block(n gast.Node, width int) string {
	switch n := n.(type) {
	case *gast.Heading:
		return mdHeading.Render(ansi.Wordwrap(strings.Repeat("#", n.Level)+" "+m.inline(n), width, ""))
	case *gast.Paragraph, *gast.TextBlock:
		return ansi.Wordwrap(m.inline(n), width, "")
	case *gast.FencedCodeBlock, *gast.CodeBlock:
		code := strings.TrimRight(m.lines(n), "\n")
		var b strings.Builder
		if f, ok := n.(*gast.FencedCodeBlock); ok && f.Info != nil {
			if lang := string(f.Language(m.src)); lang != "" {
				b.WriteString(mdQuote.Render("  " + lang))
				b.WriteString("\n")
			}
		}
		for i, line := range strings.Split(code, "\n") {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(mdBlock.Render("  " + ansi.Truncate(line, width-2, "…")))
		}
		return b.String()
	case *gast.Blockquote:
		inner := m.blocks(n, width-2)
		lines := strings.Split(inner, "\n")
		for i, l := range lines {
			lines[i] = mdQuote.Render("│ ") + l
		}
		return strings.Join(lines, "\n")
	case *gast.List:
		return m.list(n, width)
	case *gast.ThematicBreak:
		return mdQuote.Render(strings.Repeat("─", min(width, 40)))
	case *gast.HTMLBlock:
		return strings.TrimRight(m.lines(n), "\n")
	case *east.Table:
		return m.table(n)
	default:
		return m.blocks(n, width)
	}
}

// list renders bullets or numbers with each item's blocks indented under its marker.
func (m mdWriter) list(l *gast.List, width int) string {
	var items []string
	num := l.Start
	for c := l.FirstChild(); c != nil; c = c.NextSibling() {
		marker := "• "
		if l.IsOrdered() {
			marker = fmt.Sprintf("%d. ", num)
			num++
		}
		pad := strings.Repeat(" ", ansi.StringWidth(marker))
		var parts []string
		for b := c.FirstChild(); b != nil; b = b.NextSibling() {
			if s := m.block(b, width-len(pad)); s != "" {
				parts = append(parts, s)
			}
		}
		sep := "\n"
		if !l.IsTight {
			sep = "\n\n"
		}
		lines := strings.Split(strings.Join(parts, sep), "\n")
		for i := range lines {
			if i == 0 {
				lines[i] = marker + lines[i]
			} else if lines[i] != "" {
				lines[i] = pad + lines[i]
			}
		}
		items = append(items, strings.Join(lines, "\n"))
	}
	if l.IsTight {
		return strings.Join(items, "\n")
	}
	return strings.Join(items, "\n\n")
}

// table renders a GFM table with its columns padded to their widest cell.
func (m mdWriter) table(t *east.Table) string {
	var rows [][]string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, m.inline(c))
		}
		rows = append(rows, cells)
	}
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	var b strings.Builder
	for ri, r := range rows {
		if ri > 0 {
			b.WriteString("\n")
		}
		for i, c := range r {
			if i > 0 {
				b.WriteString(mdQuote.Render(" │ "))
			}
			cell := c + strings.Repeat(" ", widths[i]-ansi.StringWidth(c))
			if ri == 0 {
				cell = mdBold.Render(cell)
			}
			b.WriteString(cell)
		}
		if ri == 0 {
			b.WriteString("\n")
			for i, w := range widths {
				if i > 0 {
					b.WriteString(mdQuote.Render("─┼─"))
				}
				b.WriteString(mdQuote.Render(strings.Repeat("─", w)))
			}
		}
	}
	return b.String()
}

// lines is the raw text of a block whose content is kept verbatim (code, HTML).
func (m mdWriter) lines(n gast.Node) string {
	var b strings.Builder
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		s := segs.At(i)
		b.Write(s.Value(m.src))
	}
	return b.String()
}

// inline renders the inline children of n as one styled string.
func (m mdWriter) inline(n gast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *gast.Text:
			b.Write(c.Segment.Value(m.src))
			// Every line break stays one, soft ones too: an answer that is plain text (a listing,
			// a column of numbers) reads line by line, as in OpenCode's TUI, not as one paragraph.
			if c.HardLineBreak() || c.SoftLineBreak() {
				b.WriteString("\n")
			}
		case *gast.String:
			b.Write(c.Value)
		case *gast.CodeSpan:
			b.WriteString(mdCode.Render(m.plain(c)))
		case *gast.Emphasis:
			if c.Level >= 2 {
				b.WriteString(mdBold.Render(m.inline(c)))
			} else {
				b.WriteString(mdItalic.Render(m.inline(c)))
			}
		case *east.Strikethrough:
			b.WriteString(mdStrike.Render(m.inline(c)))
		case *east.TaskCheckBox:
			if c.IsChecked {
				b.WriteString("[x] ")
			} else {
				b.WriteString("[ ] ")
			}
		case *gast.Link:
			label := m.inline(c)
			dest := string(c.Destination)
			b.WriteString(mdLink.Render(label))
			if dest != "" && dest != label {
				b.WriteString(mdQuote.Render(" (" + dest + ")"))
			}
		case *gast.AutoLink:
			b.WriteString(mdLink.Render(string(c.URL(m.src))))
		case *gast.Image:
			b.WriteString(mdQuote.Render("🖼 " + m.plain(c)))
		case *gast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				s := c.Segments.At(i)
				b.Write(s.Value(m.src))
			}
		default:
			b.WriteString(m.inline(c))
		}
	}
	return b.String()
}

// plain is the unstyled text under n.
func (m mdWriter) plain(n gast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *gast.Text:
			b.Write(c.Segment.Value(m.src))
		case *gast.String:
			b.Write(c.Value)
		default:
			b.WriteString(m.plain(c))
		}
	}
	return b.String()
}
