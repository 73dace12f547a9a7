package question

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ptr[T any](v T) *T { return &v }

var colour = Info{
	Question: "Which color do you prefer?", Header: "Color",
	Options: []Option{{Label: "Red", Description: "warm"}, {Label: "Blue", Description: "cool"}},
}

var toppings = Info{
	Question: "Which toppings?", Header: "Toppings", Multiple: true, Custom: ptr(false),
	Options: []Option{{Label: "Cheese", Description: "melted"}, {Label: "Olives", Description: "black"}, {Label: "Basil", Description: "fresh"}},
}

// harness runs a Service on a real bus and records its events.
type harness struct {
	svc *Service
	sub *bus.Subscription
}

func newHarness(t *testing.T, timeout time.Duration) *harness {
	t.Helper()
	b := bus.New(bus.Options{})
	sub, _, err := b.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close(); b.Close() })
	return &harness{svc: New(Options{Bus: b, Timeout: timeout}), sub: sub}
}

// next returns the next event's type and properties.
func (h *harness) next(t *testing.T) (string, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ev, err := h.sub.Next(ctx)
	if err != nil {
		t.Fatalf("no event within 10s: %v", err)
	}
	var env struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(ev.Payload, &env); err != nil {
		t.Fatal(err)
	}
	return env.Type, env.Properties
}

type asked struct {
	answers []Answer
	err     error
}

// ask starts an Ask in the background and returns the pending request once question.asked is out.
func (h *harness) ask(t *testing.T, ctx context.Context, qs ...Info) (Request, <-chan asked) {
	t.Helper()
	done := make(chan asked, 1)
	go func() {
		a, err := h.svc.Ask(ctx, Request{QuestionRequest: api.QuestionRequest{SessionID: "ses_1", Questions: qs, Tool: &ToolRef{MessageID: "msg_1", CallID: "call_1"}}, Directory: "/proj"})
		done <- asked{a, err}
	}()
	typ, props := h.next(t)
	if typ != "question.asked" {
		t.Fatalf("first event = %s, want question.asked", typ)
	}
	var req Request
	raw, _ := json.Marshal(props)
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	return req, done
}

func wait(t *testing.T, done <-chan asked) asked {
	t.Helper()
	select {
	case a := <-done:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return within 10s")
		return asked{}
	}
}

func TestAReplyReachesTheAskerAndIsAnnounced(t *testing.T) {
	h := newHarness(t, 0)
	req, done := h.ask(t, t.Context(), colour)

	if got := h.svc.List("/proj"); len(got) != 1 || got[0].ID != req.ID {
		t.Fatalf("List = %+v, want the one pending question", got)
	}
	if len(h.svc.List("/elsewhere")) != 0 {
		t.Fatal("a question is listed for another directory")
	}
	if req.Tool == nil || req.Tool.CallID != "call_1" || req.SessionID != "ses_1" || len(req.ID) < 4 || req.ID[:4] != "que_" {
		t.Fatalf("asked event = %+v", req)
	}
	if err := h.svc.Reply(req.ID, []Answer{{"Blue"}}, pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	got := wait(t, done)
	if got.err != nil || !cmp.Equal(got.answers, []Answer{{"Blue"}}) {
		t.Fatalf("Ask = %v, %v", got.answers, got.err)
	}
	typ, props := h.next(t)
	want := map[string]any{"sessionID": "ses_1", "requestID": req.ID, "answers": []any{[]any{"Blue"}}, "client": "test"}
	if typ != "question.replied" || !cmp.Equal(props, want) {
		t.Fatalf("event %s %v, want question.replied %v", typ, props, want)
	}
	if len(h.svc.List("")) != 0 {
		t.Fatal("an answered question is still listed")
	}
}

func TestARejectionDismissesTheQuestion(t *testing.T) {
	h := newHarness(t, 0)
	req, done := h.ask(t, t.Context(), colour)
	if err := h.svc.Reject(req.ID, pending.Who{}); err != nil {
		t.Fatal(err)
	}
	got := wait(t, done)
	if !errors.Is(got.err, ErrDismissed) || got.err.Error() != "The user dismissed this question" {
		t.Fatalf("Ask error = %v, want ErrDismissed", got.err)
	}
	if typ, props := h.next(t); typ != "question.rejected" || props["requestID"] != req.ID || props["sessionID"] != "ses_1" || props["cause"] != "reject" {
		t.Fatalf("event %s %v, want question.rejected with cause reject", typ, props)
	}
}

func TestAcceptedAnswers(t *testing.T) {
	tests := []struct {
		name    string
		qs      []Info
		answers []Answer
	}{
		{"several labels answer a multiple-choice question", []Info{toppings}, []Answer{{"Cheese", "Basil"}}},
		{"typed text answers a question that allows custom answers", []Info{colour}, []Answer{{"Green, like grass"}}},
		{"an empty answer leaves a question unanswered", []Info{colour, toppings}, []Answer{{}, {"Olives"}}},
		{"custom text is allowed when custom is true", []Info{{Question: "Name?", Header: "Name", Custom: ptr(true)}}, []Answer{{"tandem"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 0)
			req, done := h.ask(t, t.Context(), tt.qs...)
			if err := h.svc.Reply(req.ID, tt.answers, pending.Who{}); err != nil {
				t.Fatal(err)
			}
			if got := wait(t, done); got.err != nil || !cmp.Equal(got.answers, tt.answers) {
				t.Fatalf("Ask = %v, %v", got.answers, got.err)
			}
		})
	}
}

func TestBadAnswersAreRefusedAndChangeNothing(t *testing.T) {
	tests := []struct {
		name    string
		answers []Answer
		field   string
	}{
		{"too few answers", []Answer{{"Blue"}}, "answers: expected 2"},
		{"too many answers", []Answer{{"Blue"}, {"Cheese"}, {"x"}}, "answers: expected 2"},
		{"two labels for a single-choice question", []Answer{{"Red", "Blue"}, {"Cheese"}}, "answers[0]:"},
		{"a label that is not an option where custom is false", []Answer{{"Red"}, {"Pineapple"}}, `answers[1][0]: "Pineapple" is not an option`},
		{"an empty label", []Answer{{""}, {"Cheese"}}, "answers[0][0]: must not be empty"},
		{"the same label twice", []Answer{{"Red"}, {"Cheese", "Cheese"}}, "answers[1][1]"},
		{"no answers at all", nil, "answers: expected 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 0)
			req, done := h.ask(t, t.Context(), colour, toppings)
			err := h.svc.Reply(req.ID, tt.answers, pending.Who{})
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("Reply error = %v, want Invalid", err)
			}
			if got := err.Error(); len(got) < len(tt.field) || got[:len(tt.field)] != tt.field {
				t.Fatalf("error %q does not start with %q", got, tt.field)
			}
			if _, ok := h.svc.Get(req.ID); !ok {
				t.Fatal("the question stopped waiting after a bad answer")
			}
			if err := h.svc.Reply(req.ID, []Answer{{"Red"}, {"Olives"}}, pending.Who{}); err != nil {
				t.Fatalf("a good answer after a bad one: %v", err)
			}
			if got := wait(t, done); got.err != nil || !cmp.Equal(got.answers, []Answer{{"Red"}, {"Olives"}}) {
				t.Fatalf("Ask = %v, %v", got.answers, got.err)
			}
		})
	}
}

func TestUnknownAndLateReplies(t *testing.T) {
	h := newHarness(t, 0)
	if err := h.svc.Reply("que_nope", []Answer{{"Red"}}, pending.Who{}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("reply to unknown = %v, want NotFound", err)
	}
	if err := h.svc.Reject("que_nope", pending.Who{}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("reject of unknown = %v, want NotFound", err)
	}
	req, done := h.ask(t, t.Context(), colour)
	if err := h.svc.Reply(req.ID, []Answer{{"Red"}}, pending.Who{Client: "first"}); err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	for name, late := range map[string]error{
		"reply":       h.svc.Reply(req.ID, []Answer{{"Blue"}}, pending.Who{Client: "second"}),
		"reject":      h.svc.Reject(req.ID, pending.Who{Client: "second"}),
		"bad answers": h.svc.Reply(req.ID, nil, pending.Who{Client: "second"}),
	} {
		if !errs.Is(late, errs.Conflict) {
			t.Errorf("late %s = %v, want Conflict", name, late)
		}
	}
}

func TestRacingRepliesHaveOneWinner(t *testing.T) {
	h := newHarness(t, 0)
	req, done := h.ask(t, t.Context(), colour)
	const n = 16
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				results[i] = h.svc.Reply(req.ID, []Answer{{"Red"}}, pending.Who{})
			} else {
				results[i] = h.svc.Reject(req.ID, pending.Who{})
			}
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range results {
		switch {
		case err == nil:
			wins++
		case !errs.Is(err, errs.Conflict):
			t.Errorf("a losing reply got %v, want Conflict", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d replies won, want exactly 1", wins)
	}
	wait(t, done)
	if typ, _ := h.next(t); typ != "question.replied" && typ != "question.rejected" {
		t.Fatalf("event %s", typ)
	}
	if evs, _ := h.sub.Take(nil); len(evs) > 0 {
		t.Fatalf("a second resolution event: %s", evs[0].Payload)
	}
}

func TestAnUnansweredQuestionTimesOut(t *testing.T) {
	h := newHarness(t, 50*time.Millisecond)
	req, done := h.ask(t, t.Context(), colour)
	got := wait(t, done)
	if !errors.Is(got.err, ErrTimedOut) || errors.Is(got.err, ErrDismissed) {
		t.Fatalf("Ask error = %v, want ErrTimedOut", got.err)
	}
	if typ, props := h.next(t); typ != "question.rejected" || props["requestID"] != req.ID || props["cause"] != "timeout" {
		t.Fatalf("event %s %v, want question.rejected with cause timeout", typ, props)
	}
	if err := h.svc.Reply(req.ID, []Answer{{"Red"}}, pending.Who{}); !errs.Is(err, errs.Conflict) {
		t.Fatalf("reply after timeout = %v, want Conflict", err)
	}
}

func TestAbortingTheTurnCancelsTheQuestion(t *testing.T) {
	t.Run("the asker's context ends", func(t *testing.T) {
		h := newHarness(t, 0)
		ctx, cancel := context.WithCancel(t.Context())
		_, done := h.ask(t, ctx, colour)
		cancel()
		if got := wait(t, done); !errors.Is(got.err, context.Canceled) {
			t.Fatalf("Ask error = %v, want context.Canceled", got.err)
		}
		if typ, props := h.next(t); typ != "question.rejected" || props["cause"] != "cancel" {
			t.Fatalf("event %s %v, want question.rejected with cause cancel", typ, props)
		}
	})
}

func TestBadQuestionsAreRefusedBeforeAnythingIsPublished(t *testing.T) {
	tests := []struct {
		name  string
		qs    []Info
		field string
	}{
		{"no questions", nil, "questions:"},
		{"an empty question", []Info{{Question: " ", Options: colour.Options}}, "questions[0].question"},
		{"an option without a label", []Info{{Question: "Q?", Options: []Option{{Label: ""}}}}, "questions[0].options[0].label"},
		{"a repeated label", []Info{{Question: "Q?", Options: []Option{{Label: "A"}, {Label: "A"}}}}, "questions[0].options[1].label"},
		{"no options and no custom answer", []Info{{Question: "Q?", Custom: ptr(false)}}, "questions[0].options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 0)
			_, err := h.svc.Ask(t.Context(), Request{QuestionRequest: api.QuestionRequest{SessionID: "ses_1", Questions: tt.qs}})
			if !errs.Is(err, errs.Invalid) || len(err.Error()) < len(tt.field) || err.Error()[:len(tt.field)] != tt.field {
				t.Fatalf("Ask error = %v, want Invalid starting %q", err, tt.field)
			}
			if evs, _ := h.sub.Take(nil); len(evs) > 0 {
				t.Fatalf("published %s", evs[0].Payload)
			}
		})
	}
}

func TestSummaryIsOpenCodesText(t *testing.T) {
	got := Summary([]Info{colour, toppings, {Question: "Line one\nline two"}}, []Answer{{"Blue"}, {"Cheese", "Basil"}, {}})
	want := `User has answered your questions: "Which color do you prefer?"="Blue", "Which toppings?"="Cheese, Basil", "Line one` + "\n" + `line two"="Unanswered". You can now continue with the user's answers in mind.`
	if got != want {
		t.Fatalf("Summary =\n%s\nwant\n%s", got, want)
	}
}
