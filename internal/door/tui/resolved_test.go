package tui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/client"
)

// TestHowAnOpenQuestionEndedIsSaid drives the model with the server's events for a question on
// screen that another client, the clock or the end of its turn took away.
func TestHowAnOpenQuestionEndedIsSaid(t *testing.T) {
	tests := []struct {
		name, ended, want string
	}{
		{"dismissed by another client", `{"sessionID":"ses_a","requestID":"que_1","cause":"reject","client":"curl/8.0"}`, "Question que_1 answered by curl/8.0 (dismissed)"},
		{"dismissed, in OpenCode's words (no cause)", `{"sessionID":"ses_a","requestID":"que_1","client":"opencode"}`, "Question que_1 answered by opencode (dismissed)"},
		{"timed out", `{"sessionID":"ses_a","requestID":"que_1","cause":"timeout"}`, "Question que_1 timed out before anyone answered"},
		{"withdrawn with its turn", `{"sessionID":"ses_a","requestID":"que_1","cause":"cancel"}`, "Question que_1 was withdrawn: its turn ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t.Context(), Options{SessionID: "ses_a"})
			asked := `{"id":"que_1","sessionID":"ses_a","questions":[{"question":"Ship it?","header":"Ship","options":[{"label":"Yes"},{"label":"No"}]}]}`
			m.onEvent(client.Event{Type: "question.asked", Properties: json.RawMessage(asked)})
			if m.dialog == nil || m.dialog.it.id() != "que_1" {
				t.Fatal("the question is not on screen")
			}
			m.onEvent(client.Event{Type: "question.rejected", Properties: json.RawMessage(tt.ended)})
			if m.dialog != nil {
				t.Error("the dialog stayed open")
			}
			if !strings.Contains(m.notice, tt.want) {
				t.Errorf("notice %q, want it to say %q", m.notice, tt.want)
			}
		})
	}
}
