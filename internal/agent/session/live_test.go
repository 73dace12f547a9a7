package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// listedText is the text of the streamed text parts in a listing of the session's messages.
func listedText(t *testing.T, body []byte) (text string, parts int) {
	t.Helper()
	var list []struct {
		Parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		for _, p := range m.Parts {
			if p.Type == "text" && !strings.HasPrefix(p.Text, "slow:") {
				text += p.Text
				parts++
			}
		}
	}
	return text, parts
}

func TestAListingMidTurnHasTheTextStreamedSoFar(t *testing.T) {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	s := New(Options{DB: db, Bus: b, Version: "test",
		Agent: &Agent{Providers: demoOnly{provider.NewDemo()}, Tools: tool.Builtins(tool.Options{}).All}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		b.Close()
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	sess, err := s.Create(t.Context(), t.TempDir(), CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := b.Subscribe("", func(ev *bus.Event) bool { return ev.Type == "message.part.delta" })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Prompt(t.Context(), sess.ID, text("slow: one two three four five six"))
		done <- err
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var announced strings.Builder
	delta := func() {
		t.Helper()
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no delta within 10 s: %v", err)
		}
		var env struct {
			Properties struct {
				Delta  string `json:"delta"`
				Offset *int   `json:"offset"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(ev.Payload, &env); err != nil {
			t.Fatal(err)
		}
		// Each delta says where it starts, so a client holding a listing knows what it lacks.
		if env.Properties.Offset == nil || *env.Properties.Offset != announced.Len() {
			t.Fatalf("a delta after %d announced characters says it starts at %v", announced.Len(), env.Properties.Offset)
		}
		announced.WriteString(env.Properties.Delta)
	}
	delta()
	delta()
	before := announced.String()
	body, _, err := s.MessagesJSON(t.Context(), sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	mid, n := listedText(t, body)
	page, err := s.Messages(t.Context(), sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	decoded, _ := json.Marshal(page.Items)
	if got, _ := listedText(t, decoded); !strings.HasPrefix(got, before) {
		t.Errorf("Messages mid-turn has text %q, want it to start with the announced %q", got, before)
	}
	if n != 1 || !strings.HasPrefix(mid, before) {
		t.Fatalf("MessagesJSON mid-turn has %d text parts, text %q; want one starting with the announced %q", n, mid, before)
	}
	for !strings.HasSuffix(announced.String(), "six") {
		delta()
	}
	if !strings.HasPrefix(announced.String(), mid) {
		t.Errorf("the listing's text %q is not what was announced so far (%q): a client adding the deltas would repeat some", mid, announced.String())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	body, _, err = s.MessagesJSON(t.Context(), sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if final, n := listedText(t, body); n != 1 || final != announced.String() {
		t.Errorf("after the turn: %d text parts, %q; want one, %q", n, final, announced.String())
	}
}
