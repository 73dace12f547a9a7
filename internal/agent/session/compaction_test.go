package session

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// tightDemo is the demo model with a usable input of one token: every turn with anything before
// it compacts first.
type tightDemo struct{ demoOnly }

func (tightDemo) Compaction(string, string) (bool, int64) { return true, 1 }

// newCompactingService is newService over tightDemo.
func newCompactingService(t *testing.T) (*Service, string) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	s := New(Options{DB: db, Bus: b, Version: "test",
		Agent: &Agent{Providers: tightDemo{demoOnly{provider.NewDemo()}}, Tools: tool.Builtins(tool.Options{}).All}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		b.Close()
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, t.TempDir()
}

func TestTheKeptHistoryFollowsCompactions(t *testing.T) {
	ctx := context.Background()
	s, dir := newCompactingService(t)
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"a first prompt, with nothing to compact", func() error { _, err := s.Prompt(ctx, sess.ID, text("one")); return err }},
		{"a prompt that compacts the first turn", func() error { _, err := s.Prompt(ctx, sess.ID, text("run: echo two")); return err }},
		{"a summary asked for", func() error {
			return s.Summarize(ctx, sess.ID, SummarizeInput{ProviderID: provider.DemoID, ModelID: provider.DemoID})
		}},
		{"a prompt right after the summary", func() error { _, err := s.Prompt(ctx, sess.ID, text("three")); return err }},
		{"a prompt that compacts again", func() error { _, err := s.Prompt(ctx, sess.ID, text("four")); return err }},
	}
	for _, st := range steps {
		t.Run("after "+st.name+", the kept history is the history read from every message", func(t *testing.T) {
			if err := st.run(); err != nil {
				t.Fatal(err)
			}
			keptHistory(t, s, sess.ID)
		})
	}
	t.Run("the last history starts from the last summary, which carries every prompt forward", func(t *testing.T) {
		next := text("five")
		next.NoReply = true // stored, not answered: the history a next turn would start from
		if _, err := s.Prompt(ctx, sess.ID, next); err != nil {
			t.Fatal(err)
		}
		h := fullHistory(t, s, sess.ID, lastUser(t, s, sess.ID)).([]provider.Message)
		var texts []string
		for _, m := range h {
			texts = append(texts, m.Text)
		}
		// The second summary kept its turn's prompt ("four") and that turn's reply follows it.
		if len(h) != 5 || texts[0] != provider.SummaryQuestion || texts[2] != "four" || texts[3] != "You said: four" || texts[4] != "five" {
			t.Fatalf("history %q", texts)
		}
		for _, p := range []string{"one", "run: echo two", "three"} {
			if !strings.Contains(h[1].Text, "- The user asked: "+p+"\n") && !strings.HasSuffix(h[1].Text, "- The user asked: "+p) {
				t.Fatalf("the summary %q does not list %q", h[1].Text, p)
			}
		}
	})
}

func TestACompactionIsStoredUnderTheLastPromptsAgent(t *testing.T) {
	ctx := context.Background()
	s, _, dir := newService(t)
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	in := text("look around")
	in.Agent = "plan"
	if _, err := s.Prompt(ctx, sess.ID, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Summarize(ctx, sess.ID, SummarizeInput{ProviderID: provider.DemoID, ModelID: provider.DemoID}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(page.Items)
	request, summary := page.Items[n-2], page.Items[n-1]
	if request.Info.Agent != "plan" || request.Info.Model == nil || request.Info.Model.ModelID != provider.DemoID {
		t.Fatalf("compaction request %+v: want agent plan and the demo model", request.Info)
	}
	if summary.Info.ParentID != request.Info.ID || summary.Info.Summary == nil || !summary.Info.Summary.Compacted {
		t.Fatalf("summary %+v", summary.Info)
	}
}

func TestACompactionAfterARevertMakesItPermanentFirst(t *testing.T) {
	ctx := context.Background()
	s, _, dir := newService(t)
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, sess.ID, text("kept prompt")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, sess.ID, text("reverted prompt")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revert(ctx, sess.ID, RevertInput{MessageID: lastUser(t, s, sess.ID)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Summarize(ctx, sess.ID, SummarizeInput{ProviderID: provider.DemoID, ModelID: provider.DemoID}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	// kept prompt, its reply, the compaction, the summary
	if n := len(page.Items); n != 4 {
		t.Fatalf("%d messages, want 4: the reverted prompt and its reply are gone", n)
	}
	want := "Summary of the conversation so far:\n- The user asked: kept prompt"
	var got strings.Builder
	for _, p := range page.Items[3].Parts {
		if p.Type == "text" {
			got.WriteString(*p.Text)
		}
	}
	if got.String() != want {
		t.Fatalf("summary %q, want %q", got.String(), want)
	}
	after, err := s.Get(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Revert != nil {
		t.Fatalf("the session still marks a revert: %+v", after.Revert)
	}
}
