package session

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// fullHistory is the history read from every stored message, without what was kept.
func fullHistory(t *testing.T, s *Service, sessionID, upTo string) any {
	t.Helper()
	s.histories.drop(sessionID)
	h, err := s.history(context.Background(), sessionID, upTo)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// keptHistory is the history of the session's last prompt read as a turn reads it, from what was
// kept; it fails the test unless that equals the history read from every message.
func keptHistory(t *testing.T, s *Service, sessionID string) []provider.Message {
	t.Helper()
	upTo := lastUser(t, s, sessionID)
	kept, err := s.history(context.Background(), sessionID, upTo)
	if err != nil {
		t.Fatal(err)
	}
	if full := fullHistory(t, s, sessionID, upTo); !reflect.DeepEqual(kept, full) {
		t.Fatalf("kept history\n%+v\nread from every message\n%+v", kept, full)
	}
	return kept
}

func lastUser(t *testing.T, s *Service, sessionID string) string {
	t.Helper()
	page, err := s.Messages(context.Background(), sessionID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(page.Items) - 1; i >= 0; i-- {
		if page.Items[i].Info.Role == RoleUser {
			return page.Items[i].Info.ID
		}
	}
	t.Fatal("no user message")
	return ""
}

func TestTheKeptHistoryIsTheHistoryReadFromEveryMessage(t *testing.T) {
	ctx := context.Background()
	t.Run("after turns one after another, with tool calls", func(t *testing.T) {
		s, _, dir := newService(t)
		sess, err := s.Create(ctx, dir, CreateInput{})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range []string{"hello", "read: missing.txt", "run: echo hi", "and again", "read: other.txt"} {
			if _, err := s.Prompt(ctx, sess.ID, text(p)); err != nil {
				t.Fatal(err)
			}
			upTo := lastUser(t, s, sess.ID)
			kept, err := s.history(ctx, sess.ID, upTo)
			if err != nil {
				t.Fatal(err)
			}
			if s.histories.take(sess.ID) == nil {
				t.Fatalf("turn %d: nothing was kept for the next turn", i)
			}
			if full := fullHistory(t, s, sess.ID, upTo); !reflect.DeepEqual(kept, full) {
				t.Fatalf("turn %d: kept history\n%+v\nread from every message\n%+v", i, kept, full)
			}
		}
	})
	t.Run("after prompts queued while a turn runs, and one stored without a reply", func(t *testing.T) {
		s, _, dir := newService(t)
		sess, err := s.Create(ctx, dir, CreateInput{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prompt(ctx, sess.ID, text("first")); err != nil {
			t.Fatal(err)
		}
		// The command runs while the next prompts are stored, so the first turn's second step is
		// stored after them.
		if _, err := s.PromptAsync(ctx, sess.ID, text("run: sleep 0.3")); err != nil {
			t.Fatal(err)
		}
		quiet := text("a note without a reply")
		quiet.NoReply = true
		for _, in := range []PromptInput{text("queued one"), quiet, text("read: queued.txt")} {
			if _, err := s.PromptAsync(ctx, sess.ID, in); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, "every queued turn ran", func() bool { return len(s.Statuses()) == 0 })
		if _, err := s.Prompt(ctx, sess.ID, text("last")); err != nil {
			t.Fatal(err)
		}
		keptHistory(t, s, sess.ID)
	})
	t.Run("after a message appeared among those already read", func(t *testing.T) {
		s, db, dir := newService(t)
		sess, err := s.Create(ctx, dir, CreateInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"one", "two"} {
			if _, err := s.Prompt(ctx, sess.ID, text(p)); err != nil {
				t.Fatal(err)
			}
		}
		// A user message stored with a time before everything (a clock that went back).
		early := "from the past"
		m := Message{ID: s.ids.New("msg"), SessionID: sess.ID, Role: RoleUser, Agent: "build", Time: MessageTime{Created: 1}}
		p := Part{ID: s.ids.New("prt"), SessionID: sess.ID, MessageID: m.ID, Type: "text", Text: &early}
		err = db.Tx(ctx, func(q store.Tx) error {
			if err := putMessage(ctx, q, m); err != nil {
				return err
			}
			return putPart(ctx, q, p)
		})
		if err != nil {
			t.Fatal(err)
		}
		kept := keptHistory(t, s, sess.ID)
		if b, _ := json.Marshal(kept); !json.Valid(b) || len(kept) == 0 || kept[0].Text != early {
			t.Fatalf("the inserted message is not first: %+v", kept)
		}
	})
}

func TestMessagesJSONIsTheDecodedPageEncodedAgain(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"hello <b>&</b>", "read: missing.txt", "run: printf 'x\\ty\\n'"} {
		if _, err := s.Prompt(ctx, sess.ID, text(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []MessagesInput{{}, {Limit: 2}, {Limit: 100}} {
		page, err := s.Messages(ctx, sess.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(page.Items)
		if err != nil {
			t.Fatal(err)
		}

		got, next, err := s.MessagesJSON(ctx, sess.ID, in)

		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) || next != page.NextCursor {
			t.Fatalf("limit %d:\n%s\nwant\n%s\ncursor %q, want %q", in.Limit, got, want, next, page.NextCursor)
		}
	}
}

func TestListJSONIsTheDecodedPageEncodedAgain(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	for _, in := range []CreateInput{{Title: "plain"}, {Title: "<b>&</b> \u2028", Metadata: map[string]any{"n": 1.5, "big": 12345678, "s": "x"}}, {}} {
		if _, err := s.Create(ctx, dir, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []ListInput{{}, {Limit: 2}, {Directory: dir, Search: "plain"}} {
		page, err := s.List(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(page.Items)
		if err != nil {
			t.Fatal(err)
		}

		got, next, err := s.ListJSON(ctx, in)

		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) || next != page.NextCursor {
			t.Fatalf("%+v:\n%s\nwant\n%s\ncursor %q, want %q", in, got, want, next, page.NextCursor)
		}
	}
}

func TestAKeptListingNeverOutlivesAChange(t *testing.T) {
	s, _, dir := newService(t)
	ctx := context.Background()
	first, err := s.Create(ctx, dir, CreateInput{Title: "first"})
	if err != nil {
		t.Fatal(err)
	}
	in := ListInput{Directory: dir, Limit: 10}
	list := func() string {
		t.Helper()
		body, _, err := s.ListJSON(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	before := list()
	if again := list(); again != before {
		t.Fatalf("two listings without a change differ:\n%s\n%s", before, again)
	}
	var second Session
	changes := []struct {
		name   string
		change func() error
	}{
		{"a session is created", func() (err error) { second, err = s.Create(ctx, dir, CreateInput{Title: "second"}); return err }},
		{"a session is renamed", func() error { _, err := s.Update(ctx, first.ID, UpdateInput{Title: ptr("renamed")}); return err }},
		{"a prompt retitles and touches a session in one transaction", func() error {
			_, err := s.Prompt(ctx, second.ID, text("hello there"))
			return err
		}},
		{"a session is deleted", func() error { return s.Delete(ctx, first.ID) }},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			list() // kept before the change
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
			want, _, err := s.listJSON(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := list(); got != string(want) {
				t.Fatalf("after the change the listing is\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestEditingTheHistoryIsSeenByTheNextTurn(t *testing.T) {
	ctx := context.Background()
	s, _, dir := newService(t)
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"the first prompt", "read: missing.txt", "the third prompt"} {
		if _, err := s.Prompt(ctx, sess.ID, text(p)); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	first := page.Items[0].Parts[0]
	edited := "the first prompt, edited"
	first.Text = &edited
	editWhenIdle(t, "the first prompt is edited", func() error {
		_, err := s.UpdatePart(ctx, sess.ID, first.MessageID, first.ID, first)
		return err
	})
	// The second turn's reply: its step-finish part goes.
	reply := page.Items[3]
	editWhenIdle(t, "a part is deleted", func() error {
		return s.DeletePart(ctx, sess.ID, reply.Info.ID, reply.Parts[len(reply.Parts)-1].ID)
	})
	if _, err := s.Prompt(ctx, sess.ID, text("the fourth prompt")); err != nil {
		t.Fatal(err)
	}
	kept := keptHistory(t, s, sess.ID)
	if kept[0].Text != edited {
		t.Fatalf("the first message of the history is %q, want the edited text", kept[0].Text)
	}
}

// TestTheModelGetsTheSameRequestWithTheKeptEncodings checks the encoding cache a session's history
// keeps between turns: over turns with tool calls, an edited part, a deleted part and a revert, the
// body a provider sends with the session's cache is byte for byte the body it sends without one,
// and a cache that outlived an edit (one taken before it) does not send the part's old text.
func TestTheModelGetsTheSameRequestWithTheKeptEncodings(t *testing.T) {
	ctx := context.Background()
	s, _, dir := newService(t)
	llm := providertest.NewOpenAI(t)
	openai := provider.NewOpenAI(provider.OpenAIOptions{ID: "openai", BaseURL: llm.BaseURL})
	t.Cleanup(openai.Close)
	sess, err := s.Create(ctx, dir, CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	// send makes one call with the session's history as a turn reads it, with cache, and returns
	// the body the model received.
	send := func(conv conversation, cache *provider.EncodeCache) []byte {
		t.Helper()
		llm.Add(providertest.Turn{Text: []string{"ok"}})
		req := provider.Request{Model: "gpt-scripted", System: []string{"system"}, Messages: conv.msgs, Cache: cache}
		if err := openai.Stream(ctx, req, func(provider.Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
		reqs := llm.Requests()
		return reqs[len(reqs)-1].Body
	}
	// same reads the history of the last prompt and fails unless the body sent with the session's
	// cache (and with old, a cache from before, when set) is the body sent without a cache.
	same := func(what string, old *provider.EncodeCache) conversation {
		t.Helper()
		conv, err := s.conversation(ctx, sess.ID, lastUser(t, s, sess.ID))
		if err != nil {
			t.Fatal(err)
		}
		if conv.cache == nil {
			t.Fatalf("%s: the history keeps no encoding cache", what)
		}
		want := send(conv, nil)
		for _, cache := range []*provider.EncodeCache{conv.cache, conv.cache, old} {
			if cache == nil {
				continue
			}
			if got := send(conv, cache); !bytes.Equal(got, want) {
				t.Fatalf("%s: with the kept encodings the model got\n%s\nwithout them\n%s", what, got, want)
			}
		}
		if n, _ := conv.cache.Len(); n == 0 {
			t.Fatalf("%s: the cache kept nothing, so the comparison proved nothing", what)
		}
		return conv
	}
	for _, p := range []string{"the first prompt", "read: missing.txt", "run: echo hi", "the fourth prompt"} {
		if _, err := s.Prompt(ctx, sess.ID, text(p)); err != nil {
			t.Fatal(err)
		}
		same("after "+p, nil)
	}
	before := same("before the edits", nil)

	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	first := page.Items[0].Parts[0]
	edited := "the first prompt, edited"
	first.Text = &edited
	editWhenIdle(t, "the first prompt is edited", func() error {
		_, err := s.UpdatePart(ctx, sess.ID, first.MessageID, first.ID, first)
		return err
	})
	after := same("after a stored part changed", before.cache)
	if body := send(after, before.cache); !bytes.Contains(body, []byte(edited)) || bytes.Contains(body, []byte(`"the first prompt"`)) {
		t.Fatalf("a cache from before the edit sent the old text: %s", body)
	}
	reply := page.Items[3]
	editWhenIdle(t, "a part is deleted", func() error {
		return s.DeletePart(ctx, sess.ID, reply.Info.ID, reply.Parts[len(reply.Parts)-1].ID)
	})
	same("after a part was deleted", after.cache)
	editWhenIdle(t, "the last turn is reverted", func() error {
		_, err := s.Revert(ctx, sess.ID, RevertInput{MessageID: page.Items[len(page.Items)-2].Info.ID})
		return err
	})
	if _, err := s.Prompt(ctx, sess.ID, text("a prompt after the revert")); err != nil {
		t.Fatal(err)
	}
	same("after a revert and a new prompt", after.cache)
}

// editWhenIdle runs an edit of a session's history, retrying it while it is refused as busy: the
// last turn's runner retires just after its reply.
func editWhenIdle(t *testing.T, what string, fn func() error) {
	t.Helper()
	testenv.Eventually(t, what, func() bool {
		err := fn()
		if errs.Is(err, errs.Conflict) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
}
