package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// TestTheGoClientCallsWhatTheAttachUINeeds drives the calls `tandem attach` makes against the real
// router: sessions (search, rename, fork, delete), the inbox lists and their replies, files, undo.
func TestTheGoClientCallsWhatTheAttachUINeeds(t *testing.T) {
	td := startTandem(t, setup{})
	if err := os.WriteFile(filepath.Join(td.project, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := client.New(td.base, testUser, testPassword).Named("attach test")
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	events := td.subscribe(t)

	s, err := c.CreateSession(ctx, session.CreateInput{Title: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, session.CreateInput{Title: "beta"}); err != nil {
		t.Fatal(err)
	}
	t.Run("sessions are searched by title, renamed, forked and deleted", func(t *testing.T) {
		found, err := c.SearchSessions(ctx, "alp", 10)
		if err != nil || len(found) != 1 || found[0].ID != s.ID {
			t.Fatalf("search alp: %+v %v", found, err)
		}
		renamed, err := c.RenameSession(ctx, s.ID, "gamma")
		if err != nil || renamed.Title != "gamma" {
			t.Fatalf("rename: %+v %v", renamed, err)
		}
		fork, err := c.ForkSession(ctx, s.ID, session.ForkInput{})
		if err != nil || fork.ID == s.ID {
			t.Fatalf("fork: %+v %v", fork, err)
		}
		if err := c.DeleteSession(ctx, fork.ID); err != nil {
			t.Fatal(err)
		}
		var apiErr *client.Error
		if _, err := c.Session(ctx, fork.ID); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
			t.Fatalf("a deleted session: %v, want 404", err)
		}
	})
	t.Run("a question is listed and answered, and the event names who answered", func(t *testing.T) {
		if err := c.PromptAsync(ctx, s.ID, session.PromptInput{Parts: []session.PartInput{{Type: "text", Text: "ask: Which? | A | B"}}}); err != nil {
			t.Fatal(err)
		}
		events.waitFor(t, "question.asked", ofType("question.asked", s.ID))
		qs, err := c.Questions(ctx)
		if err != nil || len(qs) != 1 {
			t.Fatalf("questions: %+v %v", qs, err)
		}
		if err := c.ReplyQuestion(ctx, qs[0].ID, [][]string{{"my own"}}); err != nil {
			t.Fatal(err)
		}
		ev := events.waitFor(t, "question.replied", ofType("question.replied", s.ID))
		var r struct{ Client string }
		if json.Unmarshal(ev.Properties, &r); r.Client != "attach test" {
			t.Fatalf("question.replied %s: want client \"attach test\"", ev.Properties)
		}
		events.waitFor(t, "the turn ends", idle(s.ID))
	})
	t.Run("an approval is answered with a key of its decisions", func(t *testing.T) {
		if err := c.PromptAsync(ctx, s.ID, session.PromptInput{Parts: []session.PartInput{{Type: "text", Text: "run: echo decided"}}}); err != nil {
			t.Fatal(err)
		}
		ev := events.waitFor(t, "permission.asked", ofType("permission.asked", s.ID))
		id := ev.permission().ID
		if err := c.Decide(ctx, id, "reject-with-message", ""); err == nil {
			t.Fatal("reject-with-message without a message was accepted")
		}
		if err := c.Decide(ctx, id, "reject-with-message", "not now"); err != nil {
			t.Fatal(err)
		}
		ev = events.waitFor(t, "permission.replied", ofType("permission.replied", s.ID))
		var r struct{ Decision, Client string }
		if json.Unmarshal(ev.Properties, &r); r.Decision != "reject-with-message" || r.Client != "attach test" {
			t.Fatalf("permission.replied %s", ev.Properties)
		}
		events.waitFor(t, "the turn ends", idle(s.ID))
	})
	t.Run("files are found and an undo is redone", func(t *testing.T) {
		files, err := c.FindFiles(ctx, "notes", 5)
		if err != nil || len(files) == 0 || files[0] != "notes.txt" {
			t.Fatalf("find notes: %v %v", files, err)
		}
		msgs, err := c.Messages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		reverted, err := c.Revert(ctx, s.ID, msgs[0].Info.ID)
		if err != nil || reverted.Revert == nil || reverted.Revert.MessageID != msgs[0].Info.ID {
			t.Fatalf("revert: %+v %v", reverted.Revert, err)
		}
		back, err := c.Unrevert(ctx, s.ID)
		if err != nil || back.Revert != nil {
			t.Fatalf("unrevert: %+v %v", back.Revert, err)
		}
	})
	t.Run("the stream reports a lost connection", func(t *testing.T) {
		lost := make(chan error, 1)
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		st := c.Events(sctx, client.OnDisconnect(func(err error) {
			select {
			case lost <- err:
			default:
			}
		}))
		if ev, err := st.Next(sctx); err != nil || ev.Type != "server.connected" {
			t.Fatalf("first event %+v %v", ev, err)
		}
		td.restart(t) // the old listener closes: the stream is cut
		select {
		case <-lost:
		case <-sctx.Done():
			t.Fatal("no disconnect reported")
		}
	})
}
