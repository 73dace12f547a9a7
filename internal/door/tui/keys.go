package tui

import (
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// escWindow is how soon a second Esc must follow the first to abort the running turn.
const escWindow = time.Second

func (m *model) onKey(k tea.KeyMsg) tea.Cmd {
	s := k.String()
	if s == "ctrl+c" {
		return tea.Quit
	}
	if m.confirmDelete != "" {
		id := m.confirmDelete
		m.confirmDelete = ""
		if s == "y" {
			return m.deleteSession(id)
		}
		m.setNotice("not deleted")
		return nil
	}
	if m.picker != nil {
		return m.pickerKey(k)
	}
	if m.dialog != nil {
		switch s {
		case "ctrl+n", "ctrl+w", "ctrl+o", "ctrl+r", "ctrl+t", "pgup", "pgdown":
			// What moves around the UI works with a dialog open; the request stays in the inbox.
			if s != "pgup" && s != "pgdown" && s != "ctrl+r" && s != "ctrl+t" {
				m.hidden[m.dialog.it.id()] = true
				m.dialog = nil
			}
			return m.globalKey(k)
		case "ctrl+s":
			if m.dialog.it.elic == nil || m.dialog.it.elic.Mode == "url" {
				m.hidden[m.dialog.it.id()] = true
				m.dialog = nil
				return m.globalKey(k)
			}
		}
	}
	if m.dialog != nil && k.Type == tea.KeyRunes && len(k.Runes) > 1 && !k.Paste && !m.dialog.input.Focused() {
		// Keys typed faster than the screen reads them arrive together: in a dialog each one is a
		// choice ("3" picks the third option, what follows is the answer's text).
		var cmds []tea.Cmd
		for _, r := range k.Runes {
			cmds = append(cmds, m.onKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
		}
		return tea.Batch(cmds...)
	}
	if m.dialog != nil {
		typing := m.dialog.asking || m.dialog.typing
		if s == "esc" && !typing {
			m.hidden[m.dialog.it.id()] = true
			m.dialog = nil
			m.setNotice("put aside: ctrl+w shows what waits")
			return nil
		}
		r, cmd := m.dialog.key(k)
		if r != nil {
			return tea.Batch(cmd, m.sendReply(m.dialog, r))
		}
		return cmd
	}
	return m.globalKey(k)
}

// globalKey handles a key outside dialogs and pickers.
func (m *model) globalKey(k tea.KeyMsg) tea.Cmd {
	if cmd, ok := m.menuKey(k); ok {
		return cmd
	}
	if k.String() == "?" && m.ta.Value() == "" {
		m.openHelp()
		return nil
	}
	switch k.String() {
	case "esc":
		if m.busy() {
			if time.Since(m.lastEsc) < escWindow {
				m.lastEsc = time.Time{}
				return m.abort()
			}
			m.lastEsc = time.Now()
			m.setNotice("press Esc again to stop the turn")
		}
		m.files = nil
		m.keep = false
		return nil
	case "enter":
		if len(m.files) > 0 && m.completing() != "" {
			m.complete(m.files[0])
			return nil
		}
		return m.send()
	case "ctrl+n":
		return m.newSession()
	case "ctrl+z":
		return m.undo()
	case "ctrl+y":
		return m.redo()
	case "ctrl+s":
		return m.openSessions()
	case "ctrl+w":
		return m.openInbox()
	case "ctrl+o":
		return m.openModels()
	case "ctrl+r":
		m.thinking = !m.thinking
		m.dirty = true
		return nil
	case "ctrl+t":
		m.fullTool = !m.fullTool
		m.dirty = true
		return nil
	case "tab":
		if len(m.files) > 0 && m.completing() != "" {
			m.complete(m.files[0])
			return nil
		}
		m.cycleAgent()
		return nil
	case "pgup":
		m.vp.HalfPageUp()
		m.follow = false
		return nil
	case "pgdown":
		m.vp.HalfPageDown()
		m.follow = m.vp.AtBottom()
		return nil
	case "home":
		if m.ta.Value() == "" {
			m.vp.GotoTop()
			m.follow = false
			return nil
		}
	case "end":
		if m.ta.Value() == "" {
			m.vp.GotoBottom()
			m.follow = true
			return nil
		}
	case "up":
		if m.ta.LineCount() <= 1 && len(m.history) > 0 {
			if m.histPos == len(m.history) {
				m.draft = m.ta.Value()
			}
			if m.histPos > 0 {
				m.histPos--
			}
			m.ta.SetValue(m.history[m.histPos])
			return nil
		}
	case "down":
		if m.ta.LineCount() <= 1 && m.histPos < len(m.history) {
			m.histPos++
			if m.histPos == len(m.history) {
				m.ta.SetValue(m.draft)
			} else {
				m.ta.SetValue(m.history[m.histPos])
			}
			return nil
		}
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(k)
	if q, ok := m.menuQuery(); ok && q != m.menuQ {
		m.menuQ, m.menuCursor = q, 0 // a new filter highlights its best match
	}
	return tea.Batch(cmd, m.lookupFiles())
}

func (m *model) cycleAgent() {
	if len(m.agents) == 0 {
		return
	}
	i := 0
	for j, a := range m.agents {
		if a == m.agent {
			i = j + 1
		}
	}
	m.agent = m.agents[i%len(m.agents)]
	m.setNotice("agent: " + m.agent)
}

// completing is the @word the prompt ends with ("" when none).
func (m *model) completing() string {
	v := m.ta.Value()
	i := strings.LastIndexAny(v, " \n\t")
	word := v[i+1:]
	if strings.HasPrefix(word, "@") {
		return word
	}
	return ""
}

func (m *model) complete(path string) {
	v := m.ta.Value()
	word := m.completing()
	m.ta.SetValue(v[:len(v)-len(word)] + "@" + path + " ")
	if m.completed == nil {
		m.completed = map[string]bool{}
	}
	m.completed[path] = true
	m.ta.CursorEnd()
	m.files, m.filesQuery = nil, ""
}

// lookupFiles asks the server for the paths an @word may complete to.
func (m *model) lookupFiles() tea.Cmd {
	word := m.completing()
	if word == "" {
		m.files, m.filesQuery = nil, ""
		return nil
	}
	q := strings.TrimPrefix(word, "@")
	if q == m.filesQuery {
		return nil
	}
	m.filesQuery = q
	if q == "" {
		m.files = nil
		return nil
	}
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		list, err := c.FindFiles(ctx, q, 8)
		if err != nil {
			return nil
		}
		return filesMsg{query: q, files: list}
	}
}

// sendReply sends a dialog's answer to the server.
func (m *model) sendReply(d *dialog, r *reply) tea.Cmd {
	c, ctx, it := m.c, m.ctx, d.it
	id := it.id()
	if r.openURL {
		if m.opts.Open == nil {
			m.setNotice("no way to open a browser here: open the URL yourself")
			return nil
		}
		open, url := m.opts.Open, it.elic.URL
		return func() tea.Msg {
			if err := open(url); err != nil {
				return errMsg{"open", err}
			}
			return noticeMsg{"opened " + url + " — press a once you are done"}
		}
	}
	d.sent = true
	d.err = ""
	return func() tea.Msg {
		var err error
		switch {
		case it.perm != nil:
			err = c.Decide(ctx, id, r.decision, r.message)
		case it.ques != nil && r.dismiss:
			err = c.RejectQuestion(ctx, id)
		case it.ques != nil:
			err = c.ReplyQuestion(ctx, id, r.answers)
		default:
			err = c.ReplyElicitation(ctx, id, r.action, r.content)
		}
		if err != nil {
			return replyErrMsg{id, err}
		}
		return repliedOKMsg{id}
	}
}
