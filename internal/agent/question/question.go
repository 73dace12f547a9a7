// Package question holds the questions the agent asks the person it works for, through its question
// tool. A question waits in a pending list that any client can read and answer over REST; the first
// answer wins, a rejection ends the turn, and an optional timeout keeps a headless server from waiting
// forever (OpenCode #10012 is a session stuck on a question nobody would ever see).
//
// The shapes are OpenCode's QuestionRequest, QuestionInfo and QuestionOption, and the events are its
// question.asked, question.replied and question.rejected.
package question

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// The wire types of a question set.
type (
	Option  = api.QuestionOption
	Info    = api.QuestionInfo
	ToolRef = api.QuestionToolRef
)

// Request is one pending question set: its wire form, and the project the asking session works in
// (events are published there).
type Request struct {
	api.QuestionRequest
	// Directory is the project the asking session works in; events are published there.
	Directory string `json:"-"`
}

// Answer is the labels chosen (or the custom text typed) for one question.
type Answer = []string

// ErrDismissed is returned by Ask when the user rejects the question. OpenCode ends the turn without
// calling the model again in that case, unlike a refused permission, so the prompt loop tests for it
// with errors.Is.
//
//lint:ignore ST1005 OpenCode's exact text reaches the clients
var ErrDismissed = errors.New("The user dismissed this question")

// ErrTimedOut is returned by Ask when nobody answered within the configured timeout. The model sees
// it as the tool's error and can carry on with its own assumptions.
var ErrTimedOut = errors.New("the question timed out")

// outcome is what resolves a pending question: answers, or a rejection. A late reply's 409 carries
// the winning one in this JSON shape, as the reply body was sent: {"answers":[...]} or {"rejected":true}.
type outcome struct {
	Answers  []Answer `json:"answers,omitempty"`
	Rejected bool     `json:"rejected,omitempty"`
}

// Options configure a Service.
type Options struct {
	Bus *bus.Bus
	// DB keeps questions while they wait, so that those a crash interrupts are ended at the next
	// start (EndInterrupted); nil keeps nothing.
	DB store.Pending
	// Timeout bounds how long a question waits for an answer; zero waits until the turn is aborted.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Service owns the pending questions.
type Service struct {
	bus     *bus.Bus
	timeout time.Duration
	log     *slog.Logger
	broker  *pending.Broker[Request, outcome]
	journal pending.Journal

	mu      sync.Mutex
	resumed map[string]Stored // "messageID/callID" -> a stored question its resumed call will claim
}

// New makes a Service that publishes its events on o.Bus.
func New(o Options) *Service {
	s := &Service{bus: o.Bus, timeout: o.Timeout, log: o.Logger, resumed: map[string]Stored{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.journal = pending.Journal{DB: o.DB, Kind: "question", Log: s.log}
	s.broker = pending.New(id.Question, "Question",
		func(string) outcome { return outcome{Rejected: true} },
		pending.Hooks[Request, outcome]{Asked: s.asked, Resolved: s.resolved})
	return s
}

// storedQuestion is a waiting question as the store keeps it.
type storedQuestion struct {
	Request
	Dir     string `json:"directory"`
	Created int64  `json:"created"`
}

// Stored is a question that was waiting when the server last stopped.
type Stored struct {
	Request
	Created int64 // epoch ms: its timeout counts from here
}

// Stored returns the questions that were waiting when the server last stopped, oldest first, of
// the sessions only selects.
func (s *Service) Stored(ctx context.Context, only store.SessionFilter) ([]Stored, error) {
	if s.journal.DB == nil {
		return nil, nil
	}
	rows, err := s.journal.DB.ListPending(ctx, s.journal.Kind)
	if err != nil {
		return nil, err
	}
	out := make([]Stored, 0, len(rows))
	for _, row := range rows {
		if !only.Has(row.SessionID) {
			continue
		}
		q, err := decodeStored(row)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func decodeStored(row store.PendingRequest) (Stored, error) {
	var q storedQuestion
	if err := json.Unmarshal(row.Data, &q); err != nil {
		return Stored{}, fmt.Errorf("question: stored request %s: %w", row.ID, err)
	}
	q.Directory = q.Dir
	return Stored{Request: q.Request, Created: row.Created}, nil
}

// Share settles questions across the nodes that share the store (pending.Shared); claimed tells
// the node that asked a question that an answer given here won, and that node calls Apply.
func (s *Service) Share(ctx context.Context, claimed func(kind, itemID, sessionID string)) {
	if s.journal.DB == nil {
		return
	}
	s.journal.Shared = true
	s.broker.Share(pending.Shared[Request]{Ctx: ctx, DB: s.journal.DB, Kind: s.journal.Kind, Log: s.log, Claimed: claimed,
		Decode: func(row store.PendingRequest) (Request, error) {
			q, err := decodeStored(row)
			return q.Request, err
		}})
}

// Apply gives a question waiting here the answer another node claimed for it.
func (s *Service) Apply(requestID string) { s.broker.Apply(requestID) }

// Reserve lists and announces a stored question again from the moment the server starts; the
// resumed tool call that asked it claims it by its tool reference when it asks again.
func (s *Service) Reserve(q Stored) {
	s.mu.Lock()
	s.resumed[q.Tool.MessageID+"/"+q.Tool.CallID] = q
	s.mu.Unlock()
	s.broker.Reserve(q.ID, q.SessionID, q.Request, time.UnixMilli(q.Created))
}

// Unreserve cancels a reserved question whose resumed call ended without asking it again.
func (s *Service) Unreserve(ctx context.Context, q Stored) {
	s.mu.Lock()
	delete(s.resumed, q.Tool.MessageID+"/"+q.Tool.CallID)
	s.mu.Unlock()
	if s.broker.Unreserve(q.ID, "the resumed tool call did not ask it again") {
		s.journal.Delete(ctx, q.ID)
	}
}

func (s *Service) claim(ref *ToolRef) (Stored, bool) {
	if ref == nil {
		return Stored{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := ref.MessageID + "/" + ref.CallID
	q, ok := s.resumed[key]
	delete(s.resumed, key)
	return q, ok
}

// EndInterrupted ends the questions that were waiting when the server last stopped and that no
// resumed turn reserved (Reserve), of the sessions only selects: each is announced as rejected
// (question.rejected), as a cancelled question is, and forgotten. Call it at start, after the
// sessions' recovery.
func (s *Service) EndInterrupted(ctx context.Context, only store.SessionFilter) error {
	s.mu.Lock()
	kept := make(map[string]bool, len(s.resumed))
	for _, q := range s.resumed {
		kept[q.ID] = true
	}
	s.mu.Unlock()
	stored, err := s.Stored(ctx, only)
	if err != nil {
		return err
	}
	n := 0
	for _, q := range stored {
		if kept[q.ID] {
			continue
		}
		s.publish(q.Directory, api.EventQuestionRejected, api.QuestionRejected{SessionID: q.SessionID, RequestID: q.ID, Cause: string(pending.Cancelled)})
		s.journal.Delete(ctx, q.ID)
		n++
	}
	if n > 0 {
		s.log.Warn("ended questions interrupted by a restart", "count", n)
	}
	return nil
}

func (s *Service) publish(dir, typ string, props any) {
	s.bus.Emit(s.log, dir, typ, props)
}

func (s *Service) asked(it pending.Item[Request]) {
	s.publish(it.Request.Directory, api.EventQuestionAsked, it.Request.QuestionRequest)
}

// CauseDismissed is the cause of a question.rejected event when a person dismissed the question.
const CauseDismissed = api.QuestionDismissed

// resolved announces the end of a question. Timeouts and cancellations are announced as rejections,
// so every client drops the question from its list exactly as it would for a dismissal.
func (s *Service) resolved(it pending.Item[Request], r pending.Resolution[outcome]) {
	req := it.Request
	if r.Cause == pending.Replied && !r.Reply.Rejected {
		s.publish(req.Directory, api.EventQuestionReplied, api.QuestionReplied{SessionID: req.SessionID, RequestID: req.ID, Answers: r.Reply.Answers, Client: r.By.Client})
		return
	}
	cause := string(r.Cause) // timeout or cancel
	if r.Cause == pending.Replied {
		cause = CauseDismissed
	}
	s.publish(req.Directory, api.EventQuestionRejected, api.QuestionRejected{SessionID: req.SessionID, RequestID: req.ID, Client: r.By.Client, Cause: cause})
}

// Ask publishes a question set and blocks until it is answered, rejected (ErrDismissed), timed out
// (ErrTimedOut) or ctx ends (ctx's error). The questions are checked first; bad ones are an Invalid
// error and nothing is published.
func (s *Service) Ask(ctx context.Context, req Request) ([]Answer, error) {
	if err := CheckQuestions(req.Questions); err != nil {
		return nil, err
	}
	req.Questions = slices.Clone(req.Questions)
	for i := range req.Questions {
		if req.Questions[i].Options == nil {
			req.Questions[i].Options = []Option{} // OpenCode's clients expect an array
		}
	}
	timeout := s.timeout
	if r, ok := s.claim(req.Tool); ok {
		// The tool call of a turn resumed after a restart: it waits for the question it asked then.
		req.ID = r.ID
		if timeout > 0 {
			timeout = max(timeout-time.Since(time.UnixMilli(r.Created)), time.Nanosecond)
		}
	} else {
		req.ID = s.broker.NewID()
		if err := s.journal.Put(ctx, req.ID, req.SessionID, time.Now().UnixMilli(), storedQuestion{Request: req, Dir: req.Directory, Created: time.Now().UnixMilli()}); err != nil {
			return nil, fmt.Errorf("the question could not be stored: %w", err)
		}
	}
	res := s.broker.Ask(ctx, req.ID, req.SessionID, req, timeout)
	if res.Cause == pending.Stopped {
		// Kept in the journal: the next start asks it again with the same ID and resumes the call.
		return nil, fmt.Errorf("question %s: %w", req.ID, pending.ErrServerStopping)
	}
	s.journal.Delete(context.WithoutCancel(ctx), req.ID)
	switch {
	case res.Cause == pending.TimedOut:
		return nil, fmt.Errorf("%w: %s", ErrTimedOut, res.Reason)
	case res.Cause == pending.Cancelled:
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the question was cancelled: " + res.Reason)
	case res.Reply.Rejected:
		return nil, ErrDismissed
	}
	return res.Reply.Answers, nil
}

// List returns the waiting questions, oldest first. A non-empty directory keeps only the questions
// asked by sessions working there.
func (s *Service) List(directory string) []Request {
	items := s.broker.List("")
	out := make([]Request, 0, len(items))
	for _, it := range items {
		if directory == "" || it.Request.Directory == directory {
			out = append(out, it.Request)
		}
	}
	return out
}

// Get returns one waiting question.
func (s *Service) Get(requestID string) (Request, bool) {
	it, ok := s.broker.Get(requestID)
	return it.Request, ok
}

// Reply answers a waiting question. Answers that do not fit the questions are an Invalid error and the
// question stays pending; a question already resolved is a Conflict naming the winner; an unknown one
// is NotFound.
func (s *Service) Reply(requestID string, answers []Answer, by pending.Who) error {
	req, ok := s.Get(requestID)
	if !ok {
		// Not waiting: the broker tells a late reply (409) from an unknown ID (404) and changes nothing.
		return s.broker.Reply(requestID, outcome{Answers: answers}, by)
	}
	if err := CheckAnswers(req.Questions, answers); err != nil {
		return err
	}
	return s.broker.Reply(requestID, outcome{Answers: answers}, by)
}

// Reject dismisses a waiting question; the asking turn ends.
func (s *Service) Reject(requestID string, by pending.Who) error {
	return s.broker.Reply(requestID, outcome{Rejected: true}, by)
}

// CheckQuestions reports the first problem with a question set the model asked, as an Invalid error
// naming the field.
func CheckQuestions(qs []Info) error {
	if len(qs) == 0 {
		return errs.E(errs.Invalid, "questions: at least one question is required")
	}
	for i, q := range qs {
		if strings.TrimSpace(q.Question) == "" {
			return errs.E(errs.Invalid, "questions[%d].question: must not be empty", i)
		}
		if len(q.Options) == 0 && !q.AllowsCustom() {
			return errs.E(errs.Invalid, "questions[%d].options: a question without options must allow a custom answer", i)
		}
		seen := make(map[string]bool, len(q.Options))
		for j, o := range q.Options {
			if strings.TrimSpace(o.Label) == "" {
				return errs.E(errs.Invalid, "questions[%d].options[%d].label: must not be empty", i, j)
			}
			if seen[o.Label] {
				return errs.E(errs.Invalid, "questions[%d].options[%d].label: %q appears twice", i, j, o.Label)
			}
			seen[o.Label] = true
		}
	}
	return nil
}

// CheckAnswers reports the first way answers do not fit qs, as an Invalid error naming the field:
// one answer per question, one label unless the question is multiple-choice, no label twice, and a
// label that is not an option only where a custom answer is allowed. An empty answer leaves that
// question unanswered, as OpenCode's clients allow.
func CheckAnswers(qs []Info, answers []Answer) error {
	if len(answers) != len(qs) {
		return errs.E(errs.Invalid, "answers: expected %d answer(s), one per question, got %d", len(qs), len(answers))
	}
	for i, a := range answers {
		q := qs[i]
		if len(a) > 1 && !q.Multiple {
			return errs.E(errs.Invalid, "answers[%d]: question %q takes one answer, got %d", i, q.Question, len(a))
		}
		seen := make(map[string]bool, len(a))
		for j, label := range a {
			if strings.TrimSpace(label) == "" {
				return errs.E(errs.Invalid, "answers[%d][%d]: must not be empty", i, j)
			}
			if seen[label] {
				return errs.E(errs.Invalid, "answers[%d][%d]: %q is given twice", i, j, label)
			}
			seen[label] = true
			if !q.AllowsCustom() && !hasOption(q, label) {
				return errs.E(errs.Invalid, "answers[%d][%d]: %q is not an option of %q, which allows no custom answer", i, j, label, q.Question)
			}
		}
	}
	return nil
}

func hasOption(q Info, label string) bool {
	for _, o := range q.Options {
		if o.Label == label {
			return true
		}
	}
	return false
}

// Summary is the tool output OpenCode gives the model for answered questions; an empty answer reads
// "Unanswered".
func Summary(qs []Info, answers []Answer) string {
	parts := make([]string, len(qs))
	for i, q := range qs {
		a := "Unanswered"
		if i < len(answers) && len(answers[i]) > 0 {
			a = strings.Join(answers[i], ", ")
		}
		parts[i] = `"` + q.Question + `"="` + a + `"`
	}
	return "User has answered your questions: " + strings.Join(parts, ", ") + ". You can now continue with the user's answers in mind."
}
