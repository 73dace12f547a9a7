package question

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/testenv"
)

type toolRun struct {
	res tool.Result
	err error
}

func runTool(t *testing.T, h *harness, input string) (Request, <-chan toolRun) {
	t.Helper()
	done := make(chan toolRun, 1)
	go func() {
		res, err := h.svc.Tool().Run(t.Context(), &tool.Call{ID: "call_9", SessionID: "ses_9", MessageID: "msg_9", Dir: "/proj", Input: json.RawMessage(input)})
		done <- toolRun{res, err}
	}()
	typ, props := h.next(t)
	if typ != "question.asked" {
		t.Fatalf("event %s, want question.asked", typ)
	}
	var req Request
	raw, _ := json.Marshal(props)
	_ = json.Unmarshal(raw, &req)
	return req, done
}

const twoQuestions = `{"questions":[
 {"question":"Which color do you prefer?","header":"Color","options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cool"}]},
 {"question":"Which toppings?","header":"Toppings","multiple":true,"options":[{"label":"Cheese","description":""},{"label":"Basil","description":""}]}]}`

func TestTheToolReturnsOpenCodesAnswerText(t *testing.T) {
	h := newHarness(t, 0)
	req, done := runTool(t, h, twoQuestions)
	if req.SessionID != "ses_9" || req.Tool == nil || *req.Tool != (ToolRef{MessageID: "msg_9", CallID: "call_9"}) || len(req.Questions) != 2 {
		t.Fatalf("asked = %+v", req)
	}
	if err := h.svc.Reply(req.ID, []Answer{{"Blue"}, {"Cheese", "Basil"}}, pending.Who{}); err != nil {
		t.Fatal(err)
	}
	got, _ := testenv.Recv(t, done, "the tool's result")
	if got.err != nil {
		t.Fatal(got.err)
	}
	want := tool.Result{
		Title:    "Asked 2 questions",
		Output:   `User has answered your questions: "Which color do you prefer?"="Blue", "Which toppings?"="Cheese, Basil". You can now continue with the user's answers in mind.`,
		Metadata: map[string]any{"answers": []Answer{{"Blue"}, {"Cheese", "Basil"}}},
	}
	if diff := cmp.Diff(want, got.res); diff != "" {
		t.Fatalf("result (-want +got):\n%s", diff)
	}
}

func TestTheToolEndsTheTurnWhenDismissed(t *testing.T) {
	h := newHarness(t, 0)
	req, done := runTool(t, h, twoQuestions)
	if err := h.svc.Reject(req.ID, pending.Who{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := testenv.Recv(t, done, "the tool's result"); !errors.Is(got.err, ErrDismissed) {
		t.Fatalf("Run error = %v, want ErrDismissed", got.err)
	}
}

func TestTheToolRefusesBadInput(t *testing.T) {
	for name, input := range map[string]string{
		"not JSON":        `{"questions":`,
		"no questions":    `{}`,
		"a wrong type":    `{"questions":"which?"}`,
		"an empty option": `{"questions":[{"question":"Q?","header":"H","options":[{"label":"","description":""}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, 0)
			_, err := h.svc.Tool().Run(t.Context(), &tool.Call{ID: "c", SessionID: "s", Input: json.RawMessage(input)})
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("Run error = %v, want Invalid", err)
			}
		})
	}
}
