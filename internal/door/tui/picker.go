package tui

import (
	"fmt"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

type pickKind int

const (
	pickSessions pickKind = iota
	pickInbox
	pickModels
	pickAgents
	pickHelp
)

// picker is a list over the conversation: sessions (searchable), what waits, models, agents or
// the help.
type picker struct {
	kind     pickKind
	search   string
	cursor   int
	rows     []row
	all      []row // the help's every row, rows being those matching search
	renaming bool
	title    string // the new title being typed
}

type row struct {
	id, label, detail string
}

func newPicker(k pickKind, search string) *picker { return &picker{kind: k, search: search} }

func (p *picker) setSessions(list []session.Session) {
	p.rows = p.rows[:0]
	for _, s := range list {
		if s.ParentID != "" {
			continue
		}
		if p.search != "" && !strings.Contains(strings.ToLower(s.Title), strings.ToLower(p.search)) {
			continue
		}
		p.rows = append(p.rows, row{id: s.ID, label: s.Title, detail: s.ID})
	}
	p.clamp()
}

func (p *picker) setInbox(items []item, sessions []session.Session) {
	titles := map[string]string{}
	for _, s := range sessions {
		titles[s.ID] = s.Title
	}
	p.rows = p.rows[:0]
	for _, it := range items {
		p.rows = append(p.rows, row{id: it.id(), label: it.summary(), detail: "in " + titles[it.sessionID()]})
	}
	p.clamp()
}

func (p *picker) setStrings(list []string, current string) {
	p.rows = p.rows[:0]
	for _, s := range list {
		if p.search != "" && !strings.Contains(strings.ToLower(s), strings.ToLower(p.search)) {
			continue
		}
		d := ""
		if s == current {
			d = "current"
		}
		p.rows = append(p.rows, row{id: s, label: s, detail: d})
	}
	p.clamp()
}

// setHelp lists the help rows whose key or meaning contains the search.
func (p *picker) setHelp(all []row) {
	p.all = all
	p.rows = p.rows[:0]
	q := strings.ToLower(p.search)
	for _, r := range all {
		if q == "" || strings.Contains(strings.ToLower(r.label+" "+r.detail), q) {
			p.rows = append(p.rows, r)
		}
	}
	p.clamp()
}

func (p *picker) clamp() {
	if p.cursor >= len(p.rows) {
		p.cursor = max(len(p.rows)-1, 0)
	}
}

func (p *picker) selected() (row, bool) {
	if p.cursor < len(p.rows) {
		return p.rows[p.cursor], true
	}
	return row{}, false
}

func (m *model) pickerKey(k tea.KeyMsg) tea.Cmd {
	p := m.picker
	s := k.String()
	if p.renaming {
		switch s {
		case "esc":
			p.renaming = false
		case "enter":
			p.renaming = false
			if r, ok := p.selected(); ok && strings.TrimSpace(p.title) != "" {
				return m.renameSession(r.id, strings.TrimSpace(p.title))
			}
		case "backspace":
			p.title = dropLast(p.title)
		case "ctrl+u":
			p.title = ""
		default:
			if k.Type == tea.KeyRunes || k.Type == tea.KeySpace {
				p.title += string(k.Runes)
			}
		}
		return nil
	}
	switch s {
	case "esc":
		m.picker = nil
		return nil
	case "up", "ctrl+p":
		if p.cursor > 0 {
			p.cursor--
		}
		return nil
	case "down", "ctrl+n":
		if p.cursor+1 < len(p.rows) {
			p.cursor++
		}
		return nil
	case "enter":
		r, ok := p.selected()
		m.picker = nil
		if !ok {
			return nil
		}
		switch p.kind {
		case pickSessions:
			return m.switchTo(r.id)
		case pickModels:
			m.model = r.id
			m.setNotice("model: " + r.id)
		case pickAgents:
			m.agent = r.id
			m.setNotice("agent: " + r.id)
		case pickInbox:
			it, ok := m.inbox.get(r.id)
			if !ok {
				return nil
			}
			delete(m.hidden, r.id)
			var cmd tea.Cmd
			if !it.under(m.cur) && it.sessionID() != "" {
				cmd = m.switchTo(it.sessionID())
			}
			m.dialog = newDialog(it)
			return cmd
		}
		return nil
	}
	if p.kind == pickSessions {
		r, ok := p.selected()
		switch s {
		case "ctrl+r":
			if ok {
				p.renaming, p.title = true, r.label
			}
			return nil
		case "ctrl+f":
			if ok {
				m.picker = nil
				return m.forkSession(r.id)
			}
			return nil
		case "ctrl+d":
			if ok {
				m.picker = nil
				m.confirmDelete = r.id
				m.setNotice(fmt.Sprintf("delete %q? y deletes, any other key keeps it", r.label))
			}
			return nil
		}
	}
	switch {
	case s == "backspace":
		p.search = dropLast(p.search)
	case s == "ctrl+u":
		p.search = ""
	case k.Type == tea.KeyRunes || k.Type == tea.KeySpace:
		p.search += string(k.Runes)
	default:
		return nil
	}
	p.cursor = 0
	switch p.kind {
	case pickSessions:
		p.setSessions(m.sessions)
		return m.searchSessions(p.search)
	case pickModels:
		p.setStrings(m.models, m.promptModel())
	case pickAgents:
		p.setStrings(m.agents, m.agent)
	case pickHelp:
		p.setHelp(p.all)
	}
	return nil
}

func dropLast(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return s
	}
	return string(r[:len(r)-1])
}

// searchSessions asks the server for the sessions whose title matches (beyond the ones loaded).
func (m *model) searchSessions(search string) tea.Cmd {
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		list, err := c.SearchSessions(ctx, search, 200)
		if err != nil {
			return errMsg{"search", err}
		}
		return sessionsMsg{search: search, list: list}
	}
}

func (m *model) renameSession(id, title string) tea.Cmd {
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		if _, err := c.RenameSession(ctx, id, title); err != nil {
			return errMsg{"rename", err}
		}
		return noticeMsg{"renamed to " + title}
	}
}

func (m *model) forkSession(id string) tea.Cmd {
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		s, err := c.ForkSession(ctx, id, session.ForkInput{})
		return sessionMadeMsg{s, err}
	}
}

func (m *model) deleteSession(id string) tea.Cmd {
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		if err := c.DeleteSession(ctx, id); err != nil {
			return errMsg{"delete", err}
		}
		return noticeMsg{"deleted"}
	}
}

func sortStrings(s []string) { sort.Strings(s) }
