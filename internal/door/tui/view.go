package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// noticeFor is how long a notice stays on the line above the prompt.
const noticeFor = 8 * time.Second

func (m *model) View() string {
	if !m.ready {
		return "tandem attach: connecting to " + m.opts.Server + "…"
	}
	status := m.statusLine()
	prompt := m.ta.View()
	var below []string
	if q, ok := m.menuQuery(); ok {
		below = append(below, m.menuView(q)...)
	}
	if len(m.files) > 0 && m.completing() != "" {
		below = append(below, styleDim.Render("@ "+strings.Join(m.files, "  ")+"   (Tab completes the first)"))
	}
	if m.notice != "" && (m.keep || time.Since(m.noticeT) < noticeFor) {
		below = append(below, styleWarn.Render(truncate(m.notice, m.width)))
	}
	var dialog string
	if m.dialog != nil {
		dialog = m.dialogView()
	}
	used := 1 + lipgloss.Height(prompt) + len(below)
	if dialog != "" {
		used += lipgloss.Height(dialog)
	}
	h := max(m.height-used, 1)
	var main string
	if m.picker != nil {
		main = m.pickerView(h)
	} else {
		if m.vp.Width != m.width || m.vp.Height != h {
			m.vp.Width, m.vp.Height = m.width, h
			m.dirty = true
		}
		if m.dirty {
			m.dirty = false
			revert := ""
			if s := m.curSession(); s != nil && s.Revert != nil {
				revert = s.Revert.MessageID
			}
			m.vp.SetContent(m.render.conversation(m.conv, revert, m.thinking, m.fullTool))
			if m.follow {
				m.vp.GotoBottom()
			}
		}
		main = m.vp.View()
	}
	parts := []string{main}
	if dialog != "" {
		parts = append(parts, dialog)
	}
	parts = append(parts, below...)
	parts = append(parts, prompt, status)
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

func (m *model) statusLine() string {
	title := "no session"
	if s := m.curSession(); s != nil {
		title = s.Title
	}
	conn := styleStatus.Render(" ") + styleOK.Inherit(styleStatus).Render("● connected")
	if !m.connected {
		conn = styleStatus.Render(" ") + styleBad.Inherit(styleStatus).Render("○ "+m.connNote)
	}
	model := m.promptModel()
	activity := ""
	if m.busy() {
		activity = styleWarn.Render(" ● working (Esc Esc stops)")
	}
	tokens, cost := m.conv.totals()
	server := strings.TrimPrefix(strings.TrimPrefix(m.opts.Server, "http://"), "https://")
	left := conn + styleStatus.Render(fmt.Sprintf(" │ %s │ %s │ %s │ %s │ %s tok $%.4f", server, truncate(title, 36), m.agent, model, humanCount(tokens), cost))
	badge := ""
	if total, elsewhere := m.inbox.count(m.cur); total > 0 {
		b := fmt.Sprintf(" ⚑ %d waiting", total)
		if elsewhere > 0 {
			b += fmt.Sprintf(" (%d in other sessions)", elsewhere)
		}
		badge = styleBadge.Render(b+" ctrl+w ") + " "
	}
	line := ansi.Truncate(badge+left+activity, m.width, "…")
	if pad := m.width - ansi.StringWidth(line); pad > 0 {
		line += styleStatus.Render(strings.Repeat(" ", pad))
	}
	return line
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func (m *model) dialogView() string {
	d := m.dialog
	w := max(m.width-4, 20)
	var b strings.Builder
	switch {
	case d.it.perm != nil:
		p := d.it.perm
		fmt.Fprintln(&b, styleTitle.Render("Permission: "+p.Permission))
		if c, ok := p.Metadata["command"].(string); ok && c != "" {
			fmt.Fprintln(&b, "$ "+c)
		}
		if len(p.Patterns) > 0 {
			fmt.Fprintln(&b, styleDim.Render("asks for: "+strings.Join(p.Patterns, " · ")))
		}
		if diff, ok := p.Metadata["diff"].(string); ok && diff != "" {
			lines := strings.Split(colourDiff(diff), "\n")
			if len(lines) > 12 {
				lines = append(lines[:12], styleDim.Render(fmt.Sprintf("… %d more lines", len(lines)-12)))
			}
			fmt.Fprintln(&b, strings.Join(lines, "\n"))
		}
		var buttons []string
		for i, c := range p.Decisions {
			label := fmt.Sprintf("[%d] %s", i+1, c.Label)
			if i == d.choice {
				label = styleSel.Render(label)
			}
			buttons = append(buttons, label)
		}
		fmt.Fprint(&b, lipgloss.NewStyle().Width(w).Render(strings.Join(buttons, "  ")))
		if d.asking {
			fmt.Fprint(&b, "\n"+d.input.View())
		}
		fmt.Fprint(&b, "\n"+styleDim.Render("1-9 or ←/→ Enter choose · Esc puts it aside"))
	case d.it.ques != nil:
		info := d.question()
		head := "Question"
		if n := len(d.it.ques.Questions); n > 1 {
			head += fmt.Sprintf(" %d/%d", d.q+1, n)
		}
		if info.Header != "" {
			head += ": " + info.Header
		}
		fmt.Fprintln(&b, styleTitle.Render(head))
		fmt.Fprintln(&b, info.Question)
		for i, o := range info.Options {
			box := "  "
			if info.Multiple {
				box = "[ ] "
				if d.picks[d.q][i] {
					box = "[x] "
				}
			}
			line := fmt.Sprintf("%d. %s%s", i+1, box, o.Label)
			if o.Description != "" {
				line += styleDim.Render(" — " + o.Description)
			}
			if i == d.cursor {
				line = styleSel.Render(line)
			}
			fmt.Fprintln(&b, line)
		}
		if info.AllowsCustom() {
			line := fmt.Sprintf("%d. Type your own answer", len(info.Options)+1)
			if d.cursor == len(info.Options) {
				line = styleSel.Render(line)
			}
			fmt.Fprintln(&b, line)
		}
		if d.typing {
			fmt.Fprintln(&b, d.input.View())
		}
		help := "↑/↓ Enter choose · ctrl+d dismisses · Esc puts it aside"
		if info.Multiple {
			help = "1-9 or Space ticks · Enter sends the ticked ones · ctrl+d dismisses · Esc puts it aside"
		}
		fmt.Fprint(&b, styleDim.Render(help))
	case d.it.elic.Mode == "url":
		e := d.it.elic
		fmt.Fprintln(&b, styleTitle.Render("MCP server "+e.Server+" asks you to open a link"))
		fmt.Fprintln(&b, e.Message)
		fmt.Fprintln(&b, "URL:    "+e.URL)
		fmt.Fprintln(&b, "Domain: "+styleWarn.Render(linkDomain(e.URL, e.Domain)))
		fmt.Fprint(&b, styleDim.Render("o opens it in your browser · a when done · d declines · c cancels · Esc puts it aside"))
	default:
		e := d.it.elic
		fmt.Fprintln(&b, styleTitle.Render("MCP server "+e.Server+" asks"))
		fmt.Fprintln(&b, e.Message)
		for i, f := range d.fields {
			label := f.name
			if f.title != "" {
				label = f.title
			}
			if f.required {
				label += "*"
			}
			var val string
			switch f.kind {
			case "boolean":
				val = "[ ] no"
				if f.on {
					val = "[x] yes"
				}
			case "enum":
				val = "‹ (choose) ›"
				if f.pick >= 0 {
					val = "‹ " + f.labels[f.pick] + " ›"
				}
			case "multi":
				var opts []string
				for j, l := range f.labels {
					o := "[ ] " + l
					if f.picked[j] {
						o = "[x] " + l
					}
					if i == d.focus && j == f.cursor {
						o = styleSel.Render(o)
					}
					opts = append(opts, o)
				}
				val = strings.Join(opts, "  ")
			default:
				if i == d.focus {
					val = d.input.View()
				} else {
					val = f.text
				}
			}
			kind := f.kind
			if f.format != "" {
				kind += ", " + f.format
			}
			line := fmt.Sprintf("%s %s: %s %s", map[bool]string{true: "▸", false: " "}[i == d.focus], label, val, styleDim.Render("("+kind+")"))
			fmt.Fprintln(&b, truncate(line, w))
			if f.description != "" && i == d.focus {
				fmt.Fprintln(&b, styleDim.Render("    "+f.description))
			}
			if f.errorMsg != "" {
				fmt.Fprintln(&b, styleFieldErr.Render("    ✗ "+f.errorMsg))
			}
		}
		fmt.Fprint(&b, styleDim.Render("Tab/↑/↓ move · Space/←/→ pick · Enter on the last field or ctrl+s sends · ctrl+d declines · ctrl+x cancels · Esc puts it aside"))
	}
	if d.err != "" {
		fmt.Fprint(&b, "\n"+styleFieldErr.Render("✗ "+d.err))
	}
	return styleBox.Width(w).Render(b.String())
}

func (m *model) pickerView(h int) string {
	p := m.picker
	var b strings.Builder
	switch p.kind {
	case pickSessions:
		fmt.Fprintln(&b, styleTitle.Render("Sessions")+styleDim.Render("  type to search · Enter opens · ctrl+r renames · ctrl+f forks · ctrl+d deletes · Esc closes"))
		if p.renaming {
			fmt.Fprintln(&b, "new title: "+p.title+"█")
		} else {
			fmt.Fprintln(&b, "search: "+p.search+"█")
		}
	case pickInbox:
		fmt.Fprintln(&b, styleTitle.Render("Waiting for you")+styleDim.Render("  Enter opens · Esc closes"))
	case pickModels:
		fmt.Fprintln(&b, styleTitle.Render("Models")+styleDim.Render("  type to filter · Enter picks · Esc closes"))
		fmt.Fprintln(&b, "filter: "+p.search+"█")
	case pickAgents:
		fmt.Fprintln(&b, styleTitle.Render("Agents")+styleDim.Render("  type to filter · Enter picks · Esc closes"))
		fmt.Fprintln(&b, "filter: "+p.search+"█")
	case pickHelp:
		fmt.Fprintln(&b, styleTitle.Render("Keys and commands")+styleDim.Render("  type to filter · ↑/↓ scroll · Esc closes"))
		fmt.Fprintln(&b, "filter: "+p.search+"█")
	}
	if len(p.rows) == 0 {
		fmt.Fprintln(&b, styleDim.Render("  (nothing)"))
	}
	room := max(h-3, 1)
	start := 0
	if p.cursor >= room {
		start = p.cursor - room + 1
	}
	keyWidth := 0
	if p.kind == pickHelp {
		for _, r := range p.rows {
			keyWidth = max(keyWidth, ansi.StringWidth(r.label))
		}
	}
	for i := start; i < len(p.rows) && i < start+room; i++ {
		r := p.rows[i]
		if keyWidth > 0 {
			r.label += strings.Repeat(" ", keyWidth-ansi.StringWidth(r.label))
		}
		line := truncate(fmt.Sprintf("  %s  %s", r.label, styleDim.Render(r.detail)), m.width)
		if i == p.cursor {
			line = styleSel.Render(truncate("▸ "+r.label+"  "+r.detail, m.width))
		}
		fmt.Fprintln(&b, line)
	}
	return lipgloss.NewStyle().Height(h).MaxHeight(h).Render(b.String())
}

// menuView is the / menu's lines: the matching commands around the highlighted one, each with
// what it does and its key, then how to use the menu.
func (m *model) menuView(q string) []string {
	list := m.menu()
	if len(list) == 0 {
		return []string{styleWarn.Render(truncate(unknownCommand(q), m.width))}
	}
	m.menuCursor = min(m.menuCursor, len(list)-1)
	menuRows := max(min(m.height/3, 12), 3) // how many commands show at once
	start := max(m.menuCursor-menuRows+1, 0)
	end := min(start+menuRows, len(list))
	nameW := 0
	for _, e := range list[start:end] {
		nameW = max(nameW, ansi.StringWidth("/"+e.name+" "+e.args))
	}
	nameW = min(nameW, 32)
	descW := 0
	for _, e := range list[start:end] {
		descW = max(descW, ansi.StringWidth(e.desc))
	}
	var lines []string
	for i := start; i < end; i++ {
		e := list[i]
		name := "/" + e.name
		if e.args != "" {
			name += " " + e.args
		}
		name = truncate(name, nameW)
		name += strings.Repeat(" ", max(nameW-ansi.StringWidth(name), 0))
		key := ""
		if e.key != "" {
			key = "  " + e.key
		}
		room := max(m.width-nameW-18, 8) // the key column keeps about 14 columns
		desc := truncate(e.desc, room)
		desc += strings.Repeat(" ", max(min(descW, room)-ansi.StringWidth(desc), 0))
		if i == m.menuCursor {
			lines = append(lines, styleSel.Render(truncate("▸ "+name+"  "+desc+key, m.width)))
		} else {
			lines = append(lines, truncate("  "+name+"  "+styleDim.Render(desc)+styleHunk.Render(key), m.width))
		}
	}
	more := ""
	if len(list) > end-start {
		more = fmt.Sprintf("%d of %d · ", m.menuCursor+1, len(list))
	}
	lines = append(lines, styleDim.Render(truncate(more+"↑/↓ choose · Tab completes · Enter runs · Esc closes · ? all keys", m.width)))
	return lines
}
