// Package tui is `tandem attach`: a terminal UI that is a pure HTTP/SSE client of a tandem server,
// local or remote. It shows a session's conversation as it streams, sends prompts, and keeps one
// inbox of everything that waits for a person across sessions: approvals, questions and MCP
// elicitation forms and links.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// Options configure one attached terminal UI.
type Options struct {
	Client    *client.Client
	Server    string // shown in the status line
	SessionID string // the session to open first; "" opens the most recent one (or a new one)
	// Open opens a URL for the person (an elicitation's link), only when they press the key.
	Open func(url string) error
	// In and Out default to the process's terminal.
	In  io.Reader
	Out io.Writer
}

// Run shows the UI until the person quits or ctx ends.
func Run(ctx context.Context, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, o)
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx)}
	if o.In != nil {
		opts = append(opts, tea.WithInput(o.In))
	}
	if o.Out != nil {
		opts = append(opts, tea.WithOutput(o.Out))
	}
	p := tea.NewProgram(m, opts...)
	go pump(ctx, o.Client, p)
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// Messages the event pump and the commands send to the model.
type (
	eventMsg       client.Event
	disconnectMsg  struct{ err error }
	streamEndedMsg struct{ err error }
	loadedMsg      struct {
		sessions  []session.Session
		statuses  map[string]session.Status
		perms     []api.PermissionRequest
		questions []api.QuestionRequest
		elics     []client.Elicitation
		agents    []session.AgentInfo
		models    []string
		defModel  string
		commands  []api.Command
		cmdErr    error // the commands could not be listed: the UI works without them
		err       error
	}
	openedMsg struct {
		sessionID string
		msgs      []session.WithParts
		err       error
	}
	sessionMadeMsg struct {
		s   session.Session
		err error
	}
	noticeMsg struct{ text string }
	// keptNoticeMsg is a notice that stays until the next one or Esc: a link to copy.
	keptNoticeMsg struct{ text string }
	errMsg        struct {
		what string
		err  error
	}
	replyErrMsg struct {
		id  string
		err error
	}
	repliedOKMsg struct{ id string }
	filesMsg     struct {
		query string
		files []string
	}
	sessionsMsg struct {
		search string
		list   []session.Session
	}
	tickMsg time.Time
)

// pump forwards the event stream to the program. A stream that gives up (the server was away too
// long) is opened again; its first server.connected makes the model refetch everything.
func pump(ctx context.Context, c *client.Client, p *tea.Program) {
	for ctx.Err() == nil {
		s := c.Events(ctx, client.OnDisconnect(func(err error) { p.Send(disconnectMsg{err}) }))
		for {
			ev, err := s.Next(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				p.Send(streamEndedMsg{err})
				break
			}
			p.Send(eventMsg(ev))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// model is the whole UI's state.
type model struct {
	ctx  context.Context
	c    *client.Client
	opts Options

	width, height int
	ready         bool

	connected  bool
	connNote   string
	everLoaded bool
	refetch    bool // the next server.connected reloads everything

	sessions []session.Session
	statuses map[string]session.Status
	cur      string
	conv     *conversation

	agents   []string
	agent    string
	models   []string
	model    string
	defModel string

	inbox   inbox
	dialog  *dialog
	hidden  map[string]bool // requests the person put aside with Esc
	notice  string
	noticeT time.Time
	keep    bool // the notice stays past noticeFor

	vp       viewport.Model
	ta       textarea.Model
	follow   bool // the viewport sticks to the bottom
	dirty    bool
	render   *renderer
	history  []string
	histPos  int
	draft    string
	lastEsc  time.Time
	thinking bool // reasoning expanded
	fullTool bool // tool output expanded

	picker *picker // sessions, models or the inbox, over the conversation

	files      []string // @ completion candidates
	filesQuery string
	completed  map[string]bool // the paths @ completion put in the editor, sent as file parts when still mentioned

	confirmDelete string // the session awaiting y to be deleted

	commands   []api.Command // the server's slash commands (GET /command)
	menuCursor int           // the highlighted entry of the / menu
	menuQ      string        // what the menu was filtered by when menuCursor was set
	menuClosed string        // the editor's text when Esc put the menu away
}

func newModel(ctx context.Context, o Options) *model {
	ta := textarea.New()
	ta.Placeholder = "Ask anything — Enter sends, Alt+Enter a new line, / commands, ! shell, @ file, ? help"
	ta.ShowLineNumbers = false
	ta.Prompt = "› "
	ta.SetHeight(3)
	ta.CharLimit = 0
	ta.Focus()
	ta.KeyMap.InsertNewline.SetKeys("alt+enter", "ctrl+j")
	m := &model{ctx: ctx, c: o.Client, opts: o, ta: ta, vp: viewport.New(80, 20), follow: true,
		statuses: map[string]session.Status{}, hidden: map[string]bool{}, conv: newConversation(nil),
		render: newRenderer(), connNote: "connecting", refetch: true, cur: o.SessionID}
	m.vp.KeyMap = viewport.KeyMap{} // scrolling keys are handled here, so typing never scrolls
	return m
}

func (m *model) Init() tea.Cmd {
	return tea.Batch(textarea.Blink, tick())
}

func tick() tea.Cmd {
	return tea.Tick(500*time.Millisecond, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// load reads everything the UI shows besides the conversation.
func (m *model) load() tea.Cmd {
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		var out loadedMsg
		var err error
		if out.sessions, err = c.SearchSessions(ctx, "", 200); err != nil {
			return loadedMsg{err: err}
		}
		if out.statuses, err = c.Statuses(ctx); err != nil {
			return loadedMsg{err: err}
		}
		if out.perms, err = c.Permissions(ctx); err != nil {
			return loadedMsg{err: err}
		}
		if out.questions, err = c.Questions(ctx); err != nil {
			return loadedMsg{err: err}
		}
		if out.elics, err = c.Elicitations(ctx); err != nil {
			return loadedMsg{err: err}
		}
		if out.agents, err = c.Agents(ctx); err != nil {
			return loadedMsg{err: err}
		}
		out.commands, out.cmdErr = c.Commands(ctx)
		if pl, err := c.Providers(ctx); err == nil {
			for _, p := range pl.Providers {
				for id := range p.Models {
					out.models = append(out.models, p.ID+"/"+id)
				}
				if d, ok := pl.Default[p.ID]; ok && out.defModel == "" {
					out.defModel = p.ID + "/" + d
				}
			}
			sortStrings(out.models)
		}
		return out
	}
}

// open loads a session's messages.
func (m *model) open(sessionID string) tea.Cmd {
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		msgs, err := c.Messages(ctx, sessionID)
		return openedMsg{sessionID: sessionID, msgs: msgs, err: err}
	}
}

func (m *model) newSession() tea.Cmd {
	c, ctx, agent := m.c, m.ctx, m.agent
	return func() tea.Msg {
		s, err := c.CreateSession(ctx, api.SessionCreateInput{Agent: agent, Metadata: map[string]any{"client": "tandem attach"}})
		return sessionMadeMsg{s, err}
	}
}

func (m *model) setNotice(s string) {
	m.notice, m.noticeT, m.keep = s, time.Now(), false
}

func (m *model) curSession() *session.Session {
	for i := range m.sessions {
		if m.sessions[i].ID == m.cur {
			return &m.sessions[i]
		}
	}
	return nil
}

// promptModel is the model a prompt goes to: the one picked (or the session's), else the server's
// default.
func (m *model) promptModel() string {
	if m.model != "" {
		return m.model
	}
	return m.defModel
}

func (m *model) busy() bool {
	st, ok := m.statuses[m.cur]
	return ok && st.Type != "" && st.Type != "idle"
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height, m.ready = msg.Width, msg.Height, true
		m.ta.SetWidth(msg.Width)
		m.render.setWidth(msg.Width)
		m.dirty = true
		return m, nil
	case tickMsg:
		return m, tick()
	case eventMsg:
		return m, m.onEvent(client.Event(msg))
	case disconnectMsg:
		m.connected = false
		m.connNote = "reconnecting"
		return m, nil
	case streamEndedMsg:
		m.connected, m.refetch = false, true
		m.connNote = "offline: " + shortErr(msg.err)
		return m, nil
	case loadedMsg:
		return m, m.onLoaded(msg)
	case openedMsg:
		if msg.err != nil {
			m.setNotice("could not open the session: " + shortErr(msg.err))
			return m, nil
		}
		if msg.sessionID == m.cur {
			m.conv = newConversation(msg.msgs)
			m.follow, m.dirty = true, true
			m.openDialog()
		}
		return m, nil
	case sessionMadeMsg:
		if msg.err != nil {
			m.setNotice("could not make a session: " + shortErr(msg.err))
			return m, nil
		}
		m.upsertSession(msg.s)
		return m, m.switchTo(msg.s.ID)
	case sessionsMsg:
		if m.picker != nil && m.picker.kind == pickSessions && m.picker.search == msg.search {
			m.picker.setSessions(msg.list)
		}
		return m, nil
	case filesMsg:
		if msg.query == m.filesQuery {
			m.files = msg.files
		}
		return m, nil
	case noticeMsg:
		m.setNotice(msg.text)
		return m, nil
	case keptNoticeMsg:
		m.setNotice(msg.text)
		m.keep = true
		return m, nil
	case errMsg:
		m.setNotice(msg.what + ": " + shortErr(msg.err))
		return m, nil
	case replyErrMsg:
		if m.dialog != nil && m.dialog.it.id() == msg.id {
			m.dialog.fail(msg.err)
		} else {
			m.setNotice("reply: " + shortErr(msg.err))
		}
		return m, nil
	case repliedOKMsg:
		m.inbox.remove(msg.id)
		if m.dialog != nil && m.dialog.it.id() == msg.id {
			m.dialog = nil
			m.openDialog()
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.onKey(msg)
	case tea.MouseMsg:
		return m, nil
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(msg)
	return m, cmd
}

func (m *model) onLoaded(msg loadedMsg) tea.Cmd {
	if msg.err != nil {
		m.refetch = true
		m.setNotice("loading: " + shortErr(msg.err))
		return nil
	}
	m.sessions = msg.sessions
	m.statuses = msg.statuses
	if m.statuses == nil {
		m.statuses = map[string]session.Status{}
	}
	m.inbox = inbox{}
	for i := range msg.perms {
		m.inbox.add(item{perm: &msg.perms[i]})
	}
	for i := range msg.questions {
		m.inbox.add(item{ques: &msg.questions[i]})
	}
	for i := range msg.elics {
		m.inbox.add(item{elic: &msg.elics[i]})
	}
	if m.dialog != nil {
		if it, ok := m.inbox.get(m.dialog.it.id()); ok {
			m.dialog.it = it
		} else {
			m.dialog = nil
		}
	}
	m.agents = m.agents[:0]
	for _, a := range msg.agents {
		if a.Mode != "subagent" {
			m.agents = append(m.agents, a.Name)
		}
	}
	if m.agent == "" && len(m.agents) > 0 {
		m.agent = m.agents[0]
	}
	m.models, m.defModel = msg.models, msg.defModel
	m.commands = msg.commands
	if msg.cmdErr != nil {
		m.setNotice("the server's / commands could not be listed: " + shortErr(msg.cmdErr))
	}
	first := !m.everLoaded
	m.everLoaded = true
	switch {
	case m.cur != "" && (first || m.curSession() != nil):
		if s := m.curSession(); s != nil && first {
			m.adoptSession(*s)
		}
		return m.open(m.cur)
	case len(m.sessions) > 0:
		return m.switchTo(m.sessions[0].ID)
	default:
		return m.newSession()
	}
}

// adoptSession takes the session's agent and model as the prompt's.
func (m *model) adoptSession(s session.Session) {
	if s.Agent != "" {
		m.agent = s.Agent
	}
	if s.Model != nil && s.Model.ProviderID != "" {
		m.model = s.Model.ProviderID + "/" + s.Model.ID
	}
}

func (m *model) switchTo(id string) tea.Cmd {
	m.cur = id
	m.conv = newConversation(nil)
	m.dialog = nil
	m.dirty, m.follow = true, true
	if s := m.curSession(); s != nil {
		m.adoptSession(*s)
	}
	return m.open(id)
}

func (m *model) upsertSession(s session.Session) {
	for i := range m.sessions {
		if m.sessions[i].ID == s.ID {
			m.sessions[i] = s
			return
		}
	}
	m.sessions = append([]session.Session{s}, m.sessions...)
}

// openDialog shows the oldest request of the current session, unless one is shown already.
func (m *model) openDialog() {
	if m.dialog != nil {
		return
	}
	for _, it := range m.inbox.items {
		if it.under(m.cur) && !m.hidden[it.id()] {
			m.dialog = newDialog(it)
			return
		}
	}
}

func (m *model) onEvent(ev client.Event) tea.Cmd {
	switch ev.Type {
	case api.EventServerConnected:
		m.connected, m.connNote = true, "connected"
		p, _ := decode[api.ServerConnected](ev.Properties)
		if p.Resync || m.refetch {
			m.refetch = false
			return m.load()
		}
	case api.EventSessionCreated, api.EventSessionUpdated:
		p, ok := decode[api.SessionInfo](ev.Properties)
		if ok && p.Info.ParentID == "" {
			m.upsertSession(p.Info)
			m.dirty = m.dirty || p.Info.ID == m.cur
			if m.picker != nil && m.picker.kind == pickSessions && !m.picker.renaming {
				m.picker.setSessions(m.sessions)
			}
		}
	case api.EventSessionDeleted:
		p, _ := decode[api.SessionInfo](ev.Properties)
		for i := range m.sessions {
			if m.sessions[i].ID == p.Info.ID {
				m.sessions = append(m.sessions[:i], m.sessions[i+1:]...)
				break
			}
		}
		if p.Info.ID == m.cur {
			if len(m.sessions) > 0 {
				return m.switchTo(m.sessions[0].ID)
			}
			return m.newSession()
		}
	case api.EventSessionStatus:
		p, _ := decode[api.SessionStatusChanged](ev.Properties)
		m.statuses[p.SessionID] = p.Status
	case api.EventSessionIdle:
		p, _ := decode[api.SessionIdle](ev.Properties)
		m.statuses[p.SessionID] = api.SessionStatus{Type: "idle"}
	case api.EventSessionError:
		p, _ := decode[api.SessionError](ev.Properties)
		if p.SessionID == m.cur && p.Error != nil {
			m.setNotice("error: " + errorText(p.Error))
		}
	case api.EventMessageUpdated:
		p, _ := decode[api.MessageUpdated](ev.Properties)
		if p.Info.SessionID == m.cur {
			m.conv.updateMessage(p.Info)
			m.dirty = true
		}
	case api.EventMessageRemoved:
		p, _ := decode[api.MessageRemoved](ev.Properties)
		if p.SessionID == m.cur {
			m.conv.removeMessage(p.MessageID)
			m.dirty = true
		}
	case api.EventPartUpdated:
		p, _ := decode[api.PartUpdated](ev.Properties)
		if p.Part.SessionID == m.cur {
			m.conv.updatePart(p.Part)
			m.dirty = true
		}
	case api.EventPartDelta:
		p, _ := decode[api.PartDelta](ev.Properties)
		switch {
		case p.SessionID != m.cur:
		case p.Field == "text":
			m.conv.appendDelta(p.SessionID, p.MessageID, p.PartID, p.Delta)
			m.dirty = true
		case p.Field == api.FieldLiveOutput:
			m.conv.appendOutput(p.SessionID, p.MessageID, p.PartID, p.Offset, p.Delta)
			m.dirty = true
		}
	case api.EventPartRemoved:
		p, _ := decode[api.PartRemoved](ev.Properties)
		if p.SessionID == m.cur {
			m.conv.removePart(p.MessageID, p.PartID)
			m.dirty = true
		}
	case api.EventPermissionAsked:
		if r, ok := decode[api.PermissionRequest](ev.Properties); ok {
			m.inbox.add(item{perm: &r})
			m.openDialog()
		}
	case api.EventQuestionAsked:
		if r, ok := decode[api.QuestionRequest](ev.Properties); ok {
			m.inbox.add(item{ques: &r})
			m.openDialog()
		}
	case api.EventElicitationAsked:
		if r, ok := decode[api.Elicitation](ev.Properties); ok {
			m.inbox.add(item{elic: &r})
			m.openDialog()
		}
	case api.EventPermissionReplied, api.EventQuestionReplied, api.EventQuestionRejected, api.EventElicitationReplied:
		r, _ := decode[replied](ev.Properties)
		if ev.Type == api.EventQuestionRejected && r.Cause == "" {
			r.Cause = api.QuestionDismissed // OpenCode's event says no more
		}
		if ev.Type == api.EventQuestionRejected && r.Cause == api.QuestionDismissed {
			r.Decision = "dismissed"
		}
		m.resolved(r)
	}
	return nil
}

// resolved drops an answered request; when it was on screen and another client answered it, the
// dialog closes saying who.
func (m *model) resolved(r replied) {
	id := r.requestID()
	it, known := m.inbox.get(id)
	m.inbox.remove(id)
	delete(m.hidden, id)
	if m.dialog == nil || m.dialog.it.id() != id {
		return
	}
	mine := m.dialog.sent && (r.Client == "" || r.Client == clientName)
	m.dialog = nil
	if !mine && known && r.Client == "" && (r.Cause == "timeout" || r.Cause == "cancel") {
		// Nobody answered it: it ran out of time, or its turn ended.
		ended := "timed out before anyone answered"
		if r.Cause == "cancel" {
			ended = "was withdrawn: its turn ended"
		}
		m.setNotice(fmt.Sprintf("%s %s %s", titleCase(it.kind()), shortID(id), ended))
	} else if !mine && known {
		by := r.Client
		if by == "" {
			by = "the server (" + r.Cause + ")"
		}
		what := r.what()
		if what != "" {
			what = " (" + what + ")"
		}
		m.setNotice(fmt.Sprintf("%s %s answered by %s%s", titleCase(it.kind()), shortID(id), by, what))
	}
	m.openDialog()
}

// clientName is how this UI names itself to the server.
const clientName = "tandem attach"

func (m *model) send() tea.Cmd {
	text := strings.TrimSpace(m.ta.Value())
	if text == "" {
		return nil
	}
	if strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "//") {
		// A slash command never goes to the model as text, a mistyped one included.
		return m.slash(text)
	}
	if m.cur == "" {
		m.setNotice("no session open yet: the prompt waits in the editor")
		return nil
	}
	text = strings.TrimPrefix(text, "/") // "//…" sends text that begins with a slash
	m.history = append(m.history, text)
	m.histPos = len(m.history)
	m.ta.Reset()
	m.files = nil
	m.follow = true
	c, ctx, sid := m.c, m.ctx, m.cur
	var model *session.MessageModel
	if m.model != "" {
		mm, err := session.ParseModel(m.model)
		if err == nil {
			model = mm
		}
	}
	if cmd, ok := strings.CutPrefix(text, "!"); ok && strings.TrimSpace(cmd) != "" {
		agent := m.agent
		return func() tea.Msg {
			if err := c.Shell(ctx, sid, api.ShellInput{Command: strings.TrimSpace(cmd), Agent: agent, Model: model}); err != nil {
				return errMsg{"shell", err}
			}
			return nil
		}
	}
	in := api.PromptInput{Agent: m.agent, Model: model, Parts: []api.PartInput{{Type: "text", Text: text}}}
	dir := ""
	if s := m.curSession(); s != nil {
		dir = s.Directory
	}
	completed := m.completed
	m.completed = nil
	return func() tea.Msg {
		in.Parts = append(in.Parts, fileParts(ctx, c, dir, text, completed)...)
		if err := c.PromptAsync(ctx, sid, in); err != nil {
			return errMsg{"prompt", err}
		}
		return nil
	}
}

// undo moves the session's revert point back to the user message before it (the latest one when
// nothing is undone yet) and puts that prompt back in the editor.
func (m *model) undo() tea.Cmd {
	s := m.curSession()
	if s == nil || m.busy() {
		return nil
	}
	point := ""
	if s.Revert != nil {
		point = s.Revert.MessageID
	}
	var target *message
	for _, msg := range m.conv.msgs {
		if msg.info.Role == "user" && (point == "" || msg.info.ID < point) {
			target = msg
		}
	}
	if target == nil {
		m.setNotice("nothing to undo")
		return nil
	}
	for _, p := range target.parts {
		if p.Type == "text" && p.Text != nil && !p.Synthetic {
			m.ta.SetValue(*p.Text)
			break
		}
	}
	c, ctx, sid, id := m.c, m.ctx, m.cur, target.info.ID
	return func() tea.Msg {
		if _, err := c.Revert(ctx, sid, id); err != nil {
			return errMsg{"undo", err}
		}
		return noticeMsg{"undone — Ctrl+Y redoes"}
	}
}

// redo moves the revert point forward to the next user message, or cancels it after the last one.
func (m *model) redo() tea.Cmd {
	s := m.curSession()
	if s == nil || s.Revert == nil {
		m.setNotice("nothing to redo")
		return nil
	}
	next := ""
	for _, msg := range m.conv.msgs {
		if msg.info.Role == "user" && msg.info.ID > s.Revert.MessageID {
			next = msg.info.ID
			break
		}
	}
	m.ta.Reset()
	c, ctx, sid := m.c, m.ctx, m.cur
	return func() tea.Msg {
		var err error
		if next != "" {
			_, err = c.Revert(ctx, sid, next)
		} else {
			_, err = c.Unrevert(ctx, sid)
		}
		if err != nil {
			return errMsg{"redo", err}
		}
		return noticeMsg{"redone"}
	}
}

func (m *model) abort() tea.Cmd {
	c, ctx, sid := m.c, m.ctx, m.cur
	m.setNotice("aborting…")
	return func() tea.Msg {
		if err := c.Abort(ctx, sid); err != nil {
			return errMsg{"abort", err}
		}
		return noticeMsg{"aborted"}
	}
}

func shortErr(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func errorText(e *session.MessageError) string {
	if msg, ok := e.Data["message"].(string); ok && msg != "" {
		return e.Name + ": " + msg
	}
	return e.Name
}
