package permission

import (
	"errors"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// TestWhatAnAskAlsoNeedsIsDecidedInTheSameRequest: a command's writes (Ask.With) are decided by the
// edit rules without a request of their own; a lasting answer remembers the command only.
func TestWhatAnAskAlsoNeedsIsDecidedInTheSameRequest(t *testing.T) {
	sc := Scope{SessionID: "ses_1", Directory: "/p", ProjectID: "p"}
	write := func(unjudged string) tool.Ask {
		return tool.Ask{Permission: "bash", Patterns: []string{"echo v2"}, Always: []string{"echo *"},
			With: []tool.Need{{Permission: "edit", Pattern: "f.txt", Unjudged: unjudged}}}
	}
	t.Run("an edit deny refuses the command without asking", func(t *testing.T) {
		s := newTestService(t, "ses_1")
		s.SetConfig(Config{Rules: []Rule{{Permission: "bash", Pattern: "*", Action: Allow}, {Permission: "edit", Pattern: "*.txt", Action: Deny}}})
		if asked, err := checkAnswering(t, s, sc, write(""), ""); !errors.Is(err, ErrRejected) || asked {
			t.Fatalf("%v (asked %v), want a refusal unasked", err, asked)
		}
	})
	t.Run("an edit allow asks nothing", func(t *testing.T) {
		s := newTestService(t, "ses_1")
		s.SetConfig(Config{Rules: []Rule{{Permission: "bash", Pattern: "echo *", Action: Allow}, {Permission: "edit", Pattern: "*", Action: Allow}}})
		if asked, err := checkAnswering(t, s, sc, write(""), ""); err != nil || asked {
			t.Fatalf("%v (asked %v), want it allowed unasked", err, asked)
		}
	})
	t.Run("a command and its write are one request, and always keeps only the command", func(t *testing.T) {
		s := newTestService(t, "ses_1")
		if asked, err := checkAnswering(t, s, sc, write(""), KeyAlways); err != nil || !asked {
			t.Fatalf("%v (asked %v), want one request", err, asked)
		}
		grants, err := s.Grants(t.Context(), "p")
		if err != nil || len(grants) != 1 || grants[0].Permission != "bash" || grants[0].Pattern != "echo *" {
			t.Fatalf("grants %+v %v, want only bash echo *", grants, err)
		}
		if asked, err := checkAnswering(t, s, sc, write(""), KeyOnce); err != nil || !asked {
			t.Fatalf("%v (asked %v): the write must be asked again", err, asked)
		}
		if asked, err := checkAnswering(t, s, sc, tool.Ask{Permission: "bash", Patterns: []string{"echo v3"}}, ""); err != nil || asked {
			t.Fatalf("%v (asked %v): the command alone is granted", err, asked)
		}
	})
	t.Run("a write to configuration is asked even when an edit grant covers it", func(t *testing.T) {
		s := newTestService(t, "ses_1")
		if asked, err := checkAnswering(t, s, sc, tool.Ask{Permission: "edit", Patterns: []string{"f.txt"}, Always: []string{"f.txt"}}, KeyAlways); err != nil || !asked {
			t.Fatalf("%v (asked %v)", err, asked)
		}
		if asked, err := checkAnswering(t, s, sc, write(""), KeyAlways); err != nil || !asked {
			t.Fatalf("%v (asked %v): the command is not granted yet", err, asked)
		}
		if asked, err := checkAnswering(t, s, sc, write(""), ""); err != nil || asked {
			t.Fatalf("%v (asked %v): command and write are both granted", err, asked)
		}
		if asked, err := checkAnswering(t, s, sc, write("it writes configuration"), KeyReject); !errors.Is(err, ErrRejected) || !asked {
			t.Fatalf("%v (asked %v), want it asked", err, asked)
		}
	})
}
