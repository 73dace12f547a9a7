package tui

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"golang.org/x/net/idna"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/question"
)

// dialog is the request on screen: an approval, a question set, an MCP form or an MCP link.
type dialog struct {
	it   item
	sent bool   // a reply left from here
	err  string // the server's refusal, not tied to a field

	// approvals: the highlighted decision; asking says the decision needs a message first
	choice int
	asking bool
	input  textinput.Model

	// questions: which question, the option under the cursor, the picks so far, custom text
	q       int
	cursor  int
	picks   []map[int]bool
	answers [][]string
	typing  bool

	// forms
	fields []*field
	focus  int
}

func newDialog(it item) *dialog {
	d := &dialog{it: it, input: textinput.New()}
	d.input.Prompt = "› "
	d.input.CharLimit = 0
	switch {
	case it.ques != nil:
		d.picks = make([]map[int]bool, len(it.ques.Questions))
		for i := range d.picks {
			d.picks[i] = map[int]bool{}
		}
	case it.elic != nil && it.elic.Mode != "url":
		f, err := parseForm(it.elic.RequestedSchema)
		if err != nil {
			d.err = "the form's schema: " + err.Error()
		}
		d.fields = f
		d.focusField()
	}
	return d
}

// fail shows the server's refusal: at the field it names, or above the buttons.
func (d *dialog) fail(err error) {
	d.sent = false
	var apiErr *client.Error
	msg := err.Error()
	if errors.As(err, &apiErr) && apiErr.Message != "" {
		msg = apiErr.Message
	}
	if name, detail, ok := fieldOfError(msg); ok {
		for i, f := range d.fields {
			if f.name == name {
				f.errorMsg = detail
				d.focus = i
				d.focusField()
				return
			}
		}
	}
	d.err = msg
}

func (d *dialog) focusField() {
	d.input.Blur()
	if d.focus < len(d.fields) {
		f := d.fields[d.focus]
		if f.kind == "string" || f.kind == "number" || f.kind == "integer" || f.kind == "" {
			d.input.SetValue(f.text)
			d.input.CursorEnd()
			d.input.Focus()
		}
	}
}

// reply is what a key press in the dialog decided: a request to send, or nothing yet.
type reply struct {
	decision string // approvals
	message  string
	answers  [][]string // questions
	dismiss  bool       // questions
	action   string     // elicitations
	content  map[string]any
	openURL  bool
}

// key handles a key press; it returns a reply to send when one is complete.
func (d *dialog) key(k tea.KeyMsg) (*reply, tea.Cmd) {
	switch {
	case d.it.perm != nil:
		return d.permKey(k)
	case d.it.ques != nil:
		return d.questionKey(k)
	case d.it.elic.Mode == "url":
		switch k.String() {
		case "o":
			return &reply{openURL: true}, nil
		case "enter", "a":
			return &reply{action: "accept"}, nil
		case "d":
			return &reply{action: "decline"}, nil
		case "c":
			return &reply{action: "cancel"}, nil
		}
		return nil, nil
	default:
		return d.formKey(k)
	}
}

func (d *dialog) permKey(k tea.KeyMsg) (*reply, tea.Cmd) {
	decisions := d.it.perm.Decisions
	if d.asking {
		switch k.String() {
		case "enter":
			msg := strings.TrimSpace(d.input.Value())
			if msg == "" {
				d.err = "type what the agent should be told"
				return nil, nil
			}
			return &reply{decision: decisions[d.choice].Key, message: msg}, nil
		case "esc":
			d.asking = false
			d.input.Blur()
			return nil, nil
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(k)
		return nil, cmd
	}
	if len(decisions) == 0 {
		return nil, nil
	}
	switch s := k.String(); s {
	case "left", "shift+tab", "h", "up", "k":
		d.choice = (d.choice + len(decisions) - 1) % len(decisions)
	case "right", "tab", "l", "down", "j":
		d.choice = (d.choice + 1) % len(decisions)
	case "enter":
		return d.pick(d.choice)
	default:
		if len(s) == 1 && s[0] >= '1' && s[0] <= '9' && int(s[0]-'1') < len(decisions) {
			return d.pick(int(s[0] - '1'))
		}
	}
	return nil, nil
}

func (d *dialog) pick(i int) (*reply, tea.Cmd) {
	d.choice = i
	c := d.it.perm.Decisions[i]
	if c.Message {
		d.asking = true
		d.input.SetValue("")
		d.input.Placeholder = "tell the agent why, Enter sends"
		return nil, d.input.Focus()
	}
	return &reply{decision: c.Key}, nil
}

func (d *dialog) question() question.Info { return d.it.ques.Questions[d.q] }

// options are a question's options, plus "Type your own answer" when custom answers are allowed.
func (d *dialog) options() int {
	n := len(d.question().Options)
	if d.question().AllowsCustom() {
		n++
	}
	return n
}

func (d *dialog) questionKey(k tea.KeyMsg) (*reply, tea.Cmd) {
	info := d.question()
	if d.typing {
		switch k.String() {
		case "enter":
			text := strings.TrimSpace(d.input.Value())
			if text == "" {
				return nil, nil
			}
			d.typing = false
			d.input.Blur()
			ans := []string{text}
			if info.Multiple {
				ans = append(d.chosen(), text)
			}
			return d.answer(ans)
		case "esc":
			d.typing = false
			d.input.Blur()
			return nil, nil
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(k)
		return nil, cmd
	}
	custom := len(info.Options) // the index of "Type your own answer"
	switch s := k.String(); s {
	case "up", "k":
		d.cursor = (d.cursor + d.options() - 1) % d.options()
	case "down", "j", "tab":
		d.cursor = (d.cursor + 1) % d.options()
	case "ctrl+d":
		return &reply{dismiss: true}, nil
	case " ", "x":
		if info.Multiple && d.cursor < custom {
			d.picks[d.q][d.cursor] = !d.picks[d.q][d.cursor]
		}
	case "enter":
		if d.cursor == custom {
			return nil, d.typeOwn()
		}
		if info.Multiple {
			ans := d.chosen()
			if len(ans) == 0 {
				ans = []string{info.Options[d.cursor].Label}
			}
			return d.answer(ans)
		}
		return d.answer([]string{info.Options[d.cursor].Label})
	default:
		if len(s) == 1 && s[0] >= '1' && s[0] <= '9' && int(s[0]-'1') < d.options() {
			d.cursor = int(s[0] - '1')
			if !info.Multiple || d.cursor == custom {
				return d.questionKey(tea.KeyMsg{Type: tea.KeyEnter})
			}
			d.picks[d.q][d.cursor] = !d.picks[d.q][d.cursor]
		}
	}
	return nil, nil
}

// typeOwn opens the line for a custom answer; on a multiple-choice question it joins the ticked
// options.
func (d *dialog) typeOwn() tea.Cmd {
	d.typing = true
	d.input.SetValue("")
	d.input.Placeholder = "your answer, Enter sends"
	if d.question().Multiple {
		d.input.Placeholder = "your answer (sent with the ticked ones), Enter sends"
	}
	return d.input.Focus()
}

func (d *dialog) chosen() []string {
	var out []string
	for i, o := range d.question().Options {
		if d.picks[d.q][i] {
			out = append(out, o.Label)
		}
	}
	return out
}

// answer records one question's answer and moves on; after the last one the set is sent.
func (d *dialog) answer(ans []string) (*reply, tea.Cmd) {
	d.answers = append(d.answers, ans)
	if d.q+1 < len(d.it.ques.Questions) {
		d.q++
		d.cursor = 0
		return nil, nil
	}
	return &reply{answers: d.answers}, nil
}

func (d *dialog) formKey(k tea.KeyMsg) (*reply, tea.Cmd) {
	switch k.String() {
	case "ctrl+s", "ctrl+enter":
		return d.submit()
	case "ctrl+d":
		return &reply{action: "decline"}, nil
	case "ctrl+x":
		return &reply{action: "cancel"}, nil
	case "tab", "down":
		d.store()
		if len(d.fields) > 0 {
			d.focus = (d.focus + 1) % len(d.fields)
		}
		d.focusField()
		return nil, nil
	case "shift+tab", "up":
		d.store()
		if len(d.fields) > 0 {
			d.focus = (d.focus + len(d.fields) - 1) % len(d.fields)
		}
		d.focusField()
		return nil, nil
	case "enter":
		d.store()
		if d.focus+1 < len(d.fields) {
			d.focus++
			d.focusField()
			return nil, nil
		}
		return d.submit()
	}
	if d.focus >= len(d.fields) {
		return nil, nil
	}
	f := d.fields[d.focus]
	switch f.kind {
	case "boolean":
		if k.String() == " " || k.String() == "left" || k.String() == "right" {
			f.on = !f.on
		}
	case "enum":
		switch k.String() {
		case "left", " ":
			if k.String() == " " {
				f.pick = (f.pick + 1) % len(f.choices)
			} else {
				f.pick = (f.pick + len(f.choices) - 1) % len(f.choices)
			}
		case "right":
			f.pick = (f.pick + 1) % len(f.choices)
		}
	case "multi":
		switch k.String() {
		case "left":
			f.cursor = (f.cursor + len(f.choices) - 1) % max(len(f.choices), 1)
		case "right":
			f.cursor = (f.cursor + 1) % max(len(f.choices), 1)
		case " ":
			f.picked[f.cursor] = !f.picked[f.cursor]
		}
	default:
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(k)
		f.text = d.input.Value()
		f.errorMsg = ""
		return nil, cmd
	}
	f.errorMsg = ""
	return nil, nil
}

func (d *dialog) store() {
	if d.focus < len(d.fields) && d.input.Focused() {
		d.fields[d.focus].text = d.input.Value()
	}
}

func (d *dialog) submit() (*reply, tea.Cmd) {
	d.store()
	d.err = ""
	for _, f := range d.fields {
		f.errorMsg = ""
	}
	return &reply{action: "accept", content: formContent(d.fields)}, nil
}

// summary is one line naming the request, for the inbox list.
func (it item) summary() string {
	switch {
	case it.perm != nil:
		what := strings.Join(it.perm.Patterns, " ")
		if c, ok := it.perm.Metadata["command"].(string); ok && c != "" {
			what = c
		}
		return fmt.Sprintf("approve %s: %s", it.perm.Permission, what)
	case it.ques != nil:
		if len(it.ques.Questions) > 0 {
			return "question: " + it.ques.Questions[0].Question
		}
		return "question"
	case it.elic.Mode == "url":
		return fmt.Sprintf("%s asks you to open %s", it.elic.Server, linkDomain(it.elic.URL, it.elic.Domain))
	default:
		return fmt.Sprintf("%s asks: %s", it.elic.Server, it.elic.Message)
	}
}

// linkDomain is the host a link really leads to, read from the URL itself (not from user info
// such as https://bank.example.com@attacker.test/, nor only from what the server says). A host
// with non-ASCII letters also shows its ASCII (punycode) form, which look-alike letters cannot
// fake.
func linkDomain(raw, fallback string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return fallback
	}
	host := u.Hostname()
	for _, r := range host {
		if r > unicode.MaxASCII {
			if ascii, err := idna.Lookup.ToASCII(host); err == nil && ascii != host {
				return host + " = " + ascii + " (not plain ASCII: check the letters)"
			}
			return host + " (not plain ASCII: check the letters)"
		}
	}
	return host
}
