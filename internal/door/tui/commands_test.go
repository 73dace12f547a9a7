package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

func names(list []entry) string {
	var out []string
	for _, e := range list {
		out = append(out, e.name)
	}
	return strings.Join(out, " ")
}

func TestTheMenuFiltersAsYouType(t *testing.T) {
	server := []api.Command{
		{Name: "init", Description: "create or update AGENTS.md", Hints: []string{"$ARGUMENTS"}},
		{Name: "review", Description: "review the uncommitted changes"},
		{Name: "git/commit", Description: "commit what is staged"},
		{Name: "undo", Description: "a project's own undo, shadowed by the UI's"},
	}
	all := entries(actions(), server)
	tests := []struct {
		name, query, want string
	}{
		{"an empty query lists the UI's actions, then the server's commands", "", "help undo redo new sessions models agents compact share unshare fork rename export inbox thinking details quit init review git/commit"},
		{"the exact name comes first, then names starting with it", "share", "share unshare"},
		{"names starting with it come before descriptions containing it", "un", "undo unshare redo review"},
		{"names containing it come before names holding its letters apart", "are", "share unshare"},
		{"letters in order match a name", "rvw", "review"},
		{"a description matches last", "agents.md", "init"},
		{"an alias finds its action", "exit", "quit"},
		{"case does not matter", "REV", "review"},
		{"a command in a subdirectory matches by its path", "git/", "git/commit"},
		{"nothing matches a name no command has", "frobnicate", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(filterEntries(all, tt.query)); got != tt.want {
				t.Errorf("filter %q: %q, want %q", tt.query, got, tt.want)
			}
		})
	}
}

func TestAServerCommandNamedAsAnActionIsTheActions(t *testing.T) {
	all := entries(actions(), []api.Command{{Name: "undo"}, {Name: "exit"}, {Name: "hello", Hints: []string{"$1", "$ARGUMENTS"}}})
	e, ok := lookup(all, "undo")
	if !ok || e.act == nil {
		t.Fatalf("/undo is %+v, want the UI's action", e)
	}
	if e, ok := lookup(all, "exit"); !ok || e.act == nil || e.name != "quit" {
		t.Fatalf("/exit is %+v, want the quit action", e)
	}
	e, ok = lookup(all, "hello")
	if !ok || e.cmd == nil || e.args != "[$1 $ARGUMENTS]" {
		t.Fatalf("/hello is %+v, want the server's command with its placeholders", e)
	}
	if _, ok := lookup(all, "hel"); ok {
		t.Fatal("a prefix ran a command: only a whole name does")
	}
}

func TestTheTranscriptLeavesOutUndoneTurns(t *testing.T) {
	conv := newConversation(nil)
	for _, p := range []struct{ msg, role, text string }{
		{"msg_1", "user", "list the files"},
		{"msg_2", "assistant", "a\nb"},
		{"msg_3", "user", "undone prompt"},
	} {
		conv.updateMessage(session.Message{ID: p.msg, SessionID: "ses_1", Role: session.Role(p.role)})
		conv.appendDelta("ses_1", p.msg, "prt_"+p.msg, p.text)
	}
	got := transcript("Files", conv, "msg_3")
	want := "# Files\n\n## User\n\nlist the files\n\n## Assistant\n\na\nb\n"
	if got != want {
		t.Fatalf("transcript\n%q\nwant\n%q", got, want)
	}
}

func TestALongPromptShowsItsFirstLines(t *testing.T) {
	tests := []struct {
		name, text string
		n          int
		want       string
	}{
		{"a short prompt shows whole", "a\nb", 2, "a\nb"},
		{"a prompt one line too long says so", "a\nb\nc", 2, "a\nb\n… 1 more line (ctrl+t shows all)"},
		{"a long one counts what is left out", numbers(30), 3, "1\n2\n3\n… 27 more lines (ctrl+t shows all)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ansi.Strip(firstLines(tt.text, tt.n)); got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}
