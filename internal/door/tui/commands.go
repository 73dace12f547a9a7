package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// action is one of the UI's own slash commands: it runs here, through the server's matching route,
// never as a prompt.
type action struct {
	name    string
	aliases []string
	desc    string
	key     string // the key that does the same ("" when none)
	args    string // what may follow the name, shown as a hint
	session bool   // needs an open session
	run     func(m *model, args string) tea.Cmd
}

// actions are the UI's own commands, in the order the menu lists them. help comes first, so that a
// stray / and Enter opens the help instead of changing anything.
func actions() []action {
	return []action{
		{name: "help", desc: "every key and command", key: "?", run: func(m *model, _ string) tea.Cmd { m.openHelp(); return nil }},
		{name: "undo", desc: "undo the last prompt and the files it changed", key: "ctrl+z", session: true, run: (*model).undoArgs},
		{name: "redo", desc: "redo what was undone", key: "ctrl+y", session: true, run: (*model).redoArgs},
		{name: "new", aliases: []string{"clear"}, desc: "start a new session", key: "ctrl+n", run: func(m *model, _ string) tea.Cmd { return m.newSession() }},
		{name: "sessions", desc: "list, search, rename, fork and delete sessions", key: "ctrl+s", run: func(m *model, _ string) tea.Cmd { return m.openSessions() }},
		{name: "models", desc: "pick the model prompts go to", key: "ctrl+o", run: func(m *model, _ string) tea.Cmd { return m.openModels() }},
		{name: "agents", desc: "pick the agent prompts go to", key: "tab cycles", run: func(m *model, _ string) tea.Cmd { return m.openAgents() }},
		{name: "compact", aliases: []string{"summarize"}, desc: "summarise the conversation to free the model's context", session: true, run: (*model).compact},
		{name: "share", desc: "share the session: a read-only link", session: true, run: (*model).share},
		{name: "unshare", desc: "withdraw the session's link", session: true, run: (*model).unshare},
		{name: "fork", desc: "copy this session into a new one", session: true, run: func(m *model, _ string) tea.Cmd { return m.forkSession(m.cur) }},
		{name: "rename", desc: "rename this session", args: "[title]", session: true, run: (*model).rename},
		{name: "export", desc: "write the conversation to a Markdown file here", args: "[file]", session: true, run: (*model).export},
		{name: "inbox", desc: "what waits for you: approvals, questions, forms", key: "ctrl+w", run: func(m *model, _ string) tea.Cmd { return m.openInbox() }},
		{name: "thinking", desc: "show or hide the model's reasoning", key: "ctrl+r", run: func(m *model, _ string) tea.Cmd { m.thinking = !m.thinking; m.dirty = true; return nil }},
		{name: "details", desc: "show tools' whole output and long prompts whole, or their ends", key: "ctrl+t", run: func(m *model, _ string) tea.Cmd { m.fullTool = !m.fullTool; m.dirty = true; return nil }},
		{name: "quit", aliases: []string{"exit", "q"}, desc: "leave tandem attach (the server goes on)", key: "ctrl+c", run: func(*model, string) tea.Cmd { return tea.Quit }},
	}
}

// entry is one line of the / menu: an action of the UI's or a command of the server's.
type entry struct {
	name, desc, key, args string
	act                   *action
	cmd                   *api.Command
}

// entries are every command the menu offers: the UI's actions, then the server's commands (one
// named as an action is the action's, so /undo never becomes a prompt).
func entries(acts []action, cmds []api.Command) []entry {
	out := make([]entry, 0, len(acts)+len(cmds))
	taken := map[string]bool{}
	for i := range acts {
		a := &acts[i]
		out = append(out, entry{name: a.name, desc: a.desc, key: a.key, args: a.args, act: a})
		taken[a.name] = true
		for _, al := range a.aliases {
			taken[al] = true
		}
	}
	for i := range cmds {
		c := &cmds[i]
		if taken[c.Name] {
			continue
		}
		args := ""
		if len(c.Hints) > 0 {
			args = "[" + strings.Join(c.Hints, " ") + "]"
		}
		out = append(out, entry{name: c.Name, desc: c.Description, args: args, cmd: c})
	}
	return out
}

// filterEntries keeps the entries that match what was typed after the slash, best first: the
// exact name, then names starting with it, names containing it, names holding its letters in
// order, and last descriptions containing it. Ties keep the menu's order.
func filterEntries(list []entry, query string) []entry {
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" {
		return list
	}
	type scored struct {
		e     entry
		score int
	}
	var hits []scored
	for _, e := range list {
		name := strings.ToLower(e.name)
		score := -1
		switch {
		case name == q || (e.act != nil && slices.Contains(e.act.aliases, q)):
			score = 0
		case strings.HasPrefix(name, q):
			score = 1
		case strings.Contains(name, q):
			score = 2
		case subsequence(name, q):
			score = 3
		case strings.Contains(strings.ToLower(e.desc), q):
			score = 4
		}
		if score >= 0 {
			hits = append(hits, scored{e, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score < hits[j].score })
	out := make([]entry, len(hits))
	for i, h := range hits {
		out[i] = h.e
	}
	return out
}

// subsequence reports whether every rune of q appears in s in order ("shr" in "share").
func subsequence(s, q string) bool {
	for _, r := range q {
		i := strings.IndexRune(s, r)
		if i < 0 {
			return false
		}
		s = s[i+len(string(r)):]
	}
	return true
}

// lookup finds the entry a typed name runs: an action by name or alias, else a server command.
func lookup(list []entry, name string) (entry, bool) {
	for _, e := range list {
		if e.name == name || (e.act != nil && slices.Contains(e.act.aliases, name)) {
			return e, true
		}
	}
	return entry{}, false
}

// menuQuery is what follows the slash while the editor holds a lone "/word" and the menu was not
// put away with Esc; ok is false when no menu shows.
func (m *model) menuQuery() (string, bool) {
	v := m.ta.Value()
	if !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") || strings.ContainsAny(v, " \t\n") || v == m.menuClosed {
		return "", false
	}
	return v[1:], true
}

// menu is the menu's entries for what is typed now.
func (m *model) menu() []entry {
	q, ok := m.menuQuery()
	if !ok {
		return nil
	}
	return filterEntries(entries(actions(), m.commands), q)
}

// menuKey handles a key while the menu shows; handled is false for keys that go to the editor.
func (m *model) menuKey(k tea.KeyMsg) (tea.Cmd, bool) {
	q, ok := m.menuQuery()
	if !ok {
		return nil, false
	}
	list := m.menu()
	switch k.String() {
	case "up", "ctrl+p":
		if m.menuCursor > 0 {
			m.menuCursor--
		}
		return nil, true
	case "down":
		if m.menuCursor+1 < len(list) {
			m.menuCursor++
		}
		return nil, true
	case "esc":
		m.menuClosed = m.ta.Value()
		return nil, true
	case "tab":
		if m.menuCursor < len(list) {
			m.ta.SetValue("/" + list[m.menuCursor].name + " ")
			m.ta.CursorEnd()
		}
		return nil, true
	case "enter":
		if m.menuCursor < len(list) {
			e := list[m.menuCursor]
			m.ta.SetValue("/" + e.name)
			return m.runEntry(e, ""), true
		}
		m.setNotice(unknownCommand(q))
		return nil, true
	}
	return nil, false
}

func unknownCommand(name string) string {
	return fmt.Sprintf("unknown command /%s — / lists the commands; start with // to send text that begins with /", name)
}

// slash runs a typed "/name arguments"; an unknown name says so and stays in the editor.
func (m *model) slash(text string) tea.Cmd {
	name, args, _ := strings.Cut(strings.TrimPrefix(text, "/"), " ")
	name, args = strings.TrimSpace(name), strings.TrimSpace(args)
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, args = name[:i], strings.TrimSpace(name[i:]+" "+args)
	}
	e, ok := lookup(entries(actions(), m.commands), name)
	if !ok {
		m.setNotice(unknownCommand(name))
		return nil
	}
	return m.runEntry(e, args)
}

// runEntry runs an action or a server command with what was typed after its name; the editor is
// emptied and the line kept in the history.
func (m *model) runEntry(e entry, args string) tea.Cmd {
	if (e.act == nil || e.act.session) && m.cur == "" {
		m.setNotice("no session open yet")
		return nil
	}
	line := strings.TrimSpace(m.ta.Value())
	m.history = append(m.history, line)
	m.histPos = len(m.history)
	m.ta.Reset()
	m.menuCursor, m.menuClosed = 0, ""
	if e.act != nil {
		return e.act.run(m, args)
	}
	return m.runCommand(*e.cmd, args)
}

// runCommand runs a server command in the session (POST /session/{id}/command): the server expands
// its template and the turn streams in like a prompt's. The command's own agent and model win over
// the ones picked here.
func (m *model) runCommand(c api.Command, args string) tea.Cmd {
	in := api.CommandRunInput{Command: c.Name, Arguments: args}
	if c.Agent == "" {
		in.Agent = m.agent
	}
	if c.Model == "" {
		in.Model = m.model
	}
	m.follow = true
	m.setNotice("/" + c.Name + " sent")
	cl, ctx, sid := m.c, m.ctx, m.cur
	return func() tea.Msg {
		if _, err := cl.RunCommand(ctx, sid, in); err != nil && ctx.Err() == nil {
			return errMsg{"/" + c.Name, err}
		}
		return nil
	}
}

func (m *model) undoArgs(string) tea.Cmd { return m.undo() }
func (m *model) redoArgs(string) tea.Cmd { return m.redo() }

// compact summarises the session with the prompt's model (POST /session/{id}/summarize).
func (m *model) compact(string) tea.Cmd {
	mm, err := session.ParseModel(m.promptModel())
	if err != nil || mm == nil {
		m.setNotice("/compact: no model to summarise with (ctrl+o picks one)")
		return nil
	}
	m.setNotice("compacting…")
	c, ctx, sid := m.c, m.ctx, m.cur
	return func() tea.Msg {
		if err := c.Summarize(ctx, sid, session.SummarizeInput{ProviderID: mm.ProviderID, ModelID: mm.ModelID}); err != nil {
			return errMsg{"compact", err}
		}
		return noticeMsg{"compacted"}
	}
}

func (m *model) share(string) tea.Cmd {
	c, ctx, sid := m.c, m.ctx, m.cur
	return func() tea.Msg {
		s, err := c.Share(ctx, sid)
		if err != nil {
			return errMsg{"share", err}
		}
		if s.Share == nil {
			return noticeMsg{"shared, but the server gave no link"}
		}
		return keptNoticeMsg{"shared, read-only: " + s.Share.URL + "  (Esc hides this)"}
	}
}

func (m *model) unshare(string) tea.Cmd {
	c, ctx, sid := m.c, m.ctx, m.cur
	return func() tea.Msg {
		if _, err := c.Unshare(ctx, sid); err != nil {
			return errMsg{"unshare", err}
		}
		return noticeMsg{"the link no longer opens the session"}
	}
}

// rename renames the session to args, or opens the session list typing a new title for it.
func (m *model) rename(args string) tea.Cmd {
	if args != "" {
		return m.renameSession(m.cur, args)
	}
	m.openSessions()
	for i, r := range m.picker.rows {
		if r.id == m.cur {
			m.picker.cursor = i
			m.picker.renaming, m.picker.title = true, r.label
		}
	}
	return nil
}

// export writes the conversation shown (undone turns left out) as Markdown to args, or to
// session-<id>.md in the directory tandem attach runs in.
func (m *model) export(args string) tea.Cmd {
	file := args
	if file == "" {
		file = "session-" + shortID(m.cur) + ".md"
	}
	revert := ""
	title := ""
	if s := m.curSession(); s != nil {
		title = s.Title
		if s.Revert != nil {
			revert = s.Revert.MessageID
		}
	}
	text := transcript(title, m.conv, revert)
	return func() tea.Msg {
		abs, err := filepath.Abs(file)
		if err != nil {
			return errMsg{"export", err}
		}
		if err := os.WriteFile(abs, []byte(text), 0o644); err != nil {
			return errMsg{"export", err}
		}
		return noticeMsg{"exported to " + abs}
	}
}

// transcript is the conversation as Markdown: each message under a heading, tools with their
// input and output in code blocks.
func transcript(title string, c *conversation, revert string) string {
	var b strings.Builder
	if title != "" {
		fmt.Fprintf(&b, "# %s\n\n", title)
	}
	for _, msg := range c.msgs {
		if revert != "" && msg.info.ID >= revert {
			continue
		}
		head := "## User"
		if msg.info.Role != "user" {
			head = "## Assistant"
			if msg.info.Agent != "" {
				head += " (" + msg.info.Agent + ")"
			}
		}
		var body strings.Builder
		for _, p := range msg.parts {
			switch {
			case p.Type == "text" && p.Text != nil && !p.Synthetic && strings.TrimSpace(*p.Text) != "":
				fmt.Fprintf(&body, "%s\n\n", strings.TrimSpace(*p.Text))
			case p.Type == "file":
				fmt.Fprintf(&body, "📎 %s\n\n", p.Filename)
			case p.Type == "tool" && p.State != nil:
				fmt.Fprintf(&body, "**%s** %s (%s)\n\n", p.Tool, p.State.Title, p.State.Status)
				if len(p.State.Input) > 0 && string(p.State.Input) != "{}" {
					fmt.Fprintf(&body, "```json\n%s\n```\n\n", p.State.Input)
				}
				out, _ := p.State.Metadata["output"].(string)
				if out == "" && p.State.Output != nil {
					out = *p.State.Output
				}
				if out = strings.TrimRight(out, "\n"); out != "" {
					fence := "```"
					for strings.Contains(out, fence) {
						fence += "`"
					}
					fmt.Fprintf(&body, "%s\n%s\n%s\n\n", fence, out, fence)
				}
				if p.State.Error != "" {
					fmt.Fprintf(&body, "Error: %s\n\n", p.State.Error)
				}
			}
		}
		if body.Len() == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s\n\n%s", head, body.String())
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// keyHelp is every key of the UI, for the help screen.
func keyHelp() [][2]string {
	return [][2]string{
		{"enter", "send the prompt, or run the / command"},
		{"alt+enter, ctrl+j", "a new line in the prompt"},
		{"/", "the command menu: type to filter, ↑/↓ choose, tab completes, enter runs, esc closes"},
		{"//text", "send text that begins with / as a prompt"},
		{"!command", "run a shell command in the session"},
		{"@path", "mention a file (tab or enter completes); its content goes with the prompt"},
		{"?", "this help (in an empty prompt)"},
		{"↑/↓", "earlier prompts (in a one-line prompt)"},
		{"pgup/pgdown", "scroll the conversation"},
		{"home/end", "top and bottom of the conversation (in an empty prompt)"},
		{"esc esc", "stop the running turn"},
		{"tab", "next agent"},
		{"ctrl+n", "new session"},
		{"ctrl+s", "sessions: type to search, enter opens, ctrl+r renames, ctrl+f forks, ctrl+d deletes"},
		{"ctrl+o", "models"},
		{"ctrl+w", "what waits for you (approvals, questions, forms) across sessions"},
		{"ctrl+z / ctrl+y", "undo / redo the last prompt"},
		{"ctrl+r", "show or hide the model's reasoning"},
		{"ctrl+t", "show tools' whole output and long prompts whole"},
		{"approval", "1-9 or ←/→ and enter pick a decision; one that needs a message asks for it"},
		{"question", "1-9 or ↑/↓ and enter; space ticks in a multiple choice, enter sends; ctrl+d dismisses"},
		{"form", "tab/↑/↓ move; space or ←/→ toggle and pick; ctrl+s sends, ctrl+d declines, ctrl+x cancels"},
		{"link", "o opens it in your browser, a when done, d declines, c cancels"},
		{"esc (in a dialog)", "put the request aside; ctrl+w brings it back"},
		{"ctrl+c", "quit"},
	}
}

// openHelp shows every key, then every command, in a list that filters as you type.
func (m *model) openHelp() {
	m.picker = newPicker(pickHelp, "")
	m.picker.setHelp(m.helpRows())
}

func (m *model) helpRows() []row {
	var rows []row
	for _, k := range keyHelp() {
		rows = append(rows, row{label: k[0], detail: k[1]})
	}
	for _, e := range entries(actions(), m.commands) {
		label := "/" + e.name
		if e.args != "" {
			label += " " + e.args
		}
		detail := e.desc
		if e.key != "" {
			detail += " (" + e.key + ")"
		}
		rows = append(rows, row{label: label, detail: detail})
	}
	return rows
}

func (m *model) openSessions() tea.Cmd {
	m.picker = newPicker(pickSessions, "")
	m.picker.setSessions(m.sessions)
	return nil
}

func (m *model) openInbox() tea.Cmd {
	m.picker = newPicker(pickInbox, "")
	m.picker.setInbox(m.inbox.items, m.sessions)
	return nil
}

func (m *model) openModels() tea.Cmd {
	m.picker = newPicker(pickModels, "")
	m.picker.setStrings(m.models, m.promptModel())
	m.picker.cursor = max(slices.Index(m.models, m.promptModel()), 0)
	return nil
}

func (m *model) openAgents() tea.Cmd {
	m.picker = newPicker(pickAgents, "")
	m.picker.setStrings(m.agents, m.agent)
	m.picker.cursor = max(slices.Index(m.agents, m.agent), 0)
	return nil
}
