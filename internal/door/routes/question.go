package routes

import (
	"net/http"

	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Questions serves the questions the agent's question tool is waiting on.
type Questions struct {
	Service *question.Service
}

// QuestionPath names a pending question in the URL.
type QuestionPath struct {
	RequestID string `path:"requestID" pattern:"^que" json:"-"`
}

// QuestionReply is POST /question/{requestID}/reply.
type QuestionReply struct {
	QuestionPath
	Answers []question.Answer `json:"answers" required:"true" description:"User answers in order of questions (each answer is an array of selected labels, or typed text where the question allows a custom answer; an empty array leaves that question unanswered)."`
}

// Validate checks that answers are present; they are checked against the questions by the service.
func (q *QuestionReply) Validate() error {
	if q.Answers == nil {
		return errs.E(errs.Invalid, "answers: required")
	}
	return nil
}

// Ops declares the question routes.
func (q *Questions) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/question", "question.list", "List pending questions", func(c *Call, _ *struct{}) ([]question.Request, error) {
			return q.Service.List(explicitDirectory(c)), nil
		}).doc("Questions still waiting for an answer, oldest first; with ?directory= (or x-opencode-directory) only those " +
			"asked by sessions working there."),
		op(http.MethodPost, "/question/{requestID}/reply", "question.reply", "Reply to question request", func(c *Call, in *QuestionReply) (bool, error) {
			return true, q.Service.Reply(in.RequestID, in.Answers, who(c))
		}).doc("One answer per question. A label that is not an option needs a question that allows a custom answer. "+
			"Answers that do not fit get 400 naming the field and the question stays pending; the first reply wins and a "+
			"later one gets 409 with the winning decision.", 404, 409, 413, 415),
		op(http.MethodPost, "/question/{requestID}/reject", "question.reject", "Reject question request", func(c *Call, in *QuestionPath) (bool, error) {
			return true, q.Service.Reject(in.RequestID, who(c))
		}).doc("Dismisses the question: the tool call fails with \"The user dismissed this question\" and the turn ends "+
			"without another model call.", 404, 409),
	}
}
