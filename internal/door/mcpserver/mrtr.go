package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpclient "github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Clients of protocol 2026-07-28 and later are stateless: the server may not send requests of its
// own, so an approval cannot be asked in the middle of a tools/call. For them a turn runs on the
// server past the end of the call. When it needs a person, the call returns an input-required
// result (SEP-2322): one form per waiting request, keyed by the request's ID, and a signed
// requestState naming the session. The client asks its user and calls the same tool again with the
// answers and the state; tandem applies the answers (first answer wins, as everywhere) and waits
// for the turn's end or its next question.

const multiRoundTripVersion = "2026-07-28"

func multiRoundTrip(req *mcp.CallToolRequest) bool {
	return Stateless(req.ProtocolVersion())
}

// Stateless reports whether an MCP protocol version is one of the stateless ones (2026-07-28 and
// later, dates compare as text), whose HTTP requests carry no session.
func Stateless(version string) bool { return version >= multiRoundTripVersion }

// roundTrips holds what must outlive one tools/call of a multi-round-trip client.
type roundTrips struct {
	key []byte // signs requestState; a restart invalidates outstanding states, which then fail clearly

	mu        sync.Mutex
	turns     map[string]*backgroundTurn // by session ID
	deadlines map[string]*time.Timer     // by request ID: rejects what nobody answered in time
}

func newRoundTrips() *roundTrips {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	return &roundTrips{key: key, turns: map[string]*backgroundTurn{}, deadlines: map[string]*time.Timer{}}
}

// backgroundTurn is a turn that runs on while its client is away answering.
type backgroundTurn struct {
	done  chan struct{}
	reply session.WithParts
	err   error
	led   *ledger // what the turn asked, across its rounds
}

// roundState is what requestState carries between rounds.
type roundState struct {
	SessionID string `json:"s"`
	Expires   int64  `json:"e"` // unix seconds
}

func (rt *roundTrips) sign(st roundState) string {
	body, _ := json.Marshal(st)
	mac := hmac.New(sha256.New, rt.key)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

var errBadState = errors.New("requestState: not issued by this tandem process (it was altered, or the server restarted); call the tool again without it")

func (rt *roundTrips) verify(s string, now time.Time) (roundState, error) {
	var st roundState
	body64, mac64, ok := strings.Cut(s, ".")
	if !ok {
		return st, errBadState
	}
	body, err1 := base64.RawURLEncoding.DecodeString(body64)
	got, err2 := base64.RawURLEncoding.DecodeString(mac64)
	if err1 != nil || err2 != nil {
		return st, errBadState
	}
	mac := hmac.New(sha256.New, rt.key)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) || json.Unmarshal(body, &st) != nil {
		return st, errBadState
	}
	if now.Unix() > st.Expires {
		return st, errors.New("requestState: expired; the requests it answered were rejected when their time ran out")
	}
	return st, nil
}

// startBackground runs a prompt detached from the call that started it.
func (s *Server) startBackground(ctx context.Context, sid string, in session.PromptInput) error {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if t, ok := s.rt.turns[sid]; ok {
		select {
		case <-t.done:
		default:
			return fmt.Errorf("session %s: a turn started over MCP is still waiting for input; answer it (call again with its requestState) first", sid)
		}
	}
	led, stop, err := s.follow(sid)
	if err != nil {
		return err
	}
	t := &backgroundTurn{done: make(chan struct{}), led: led}
	s.rt.turns[sid] = t
	go func() {
		defer close(t.done)
		t.reply, t.err = s.o.Sessions.Prompt(context.WithoutCancel(ctx), sid, in)
		stop()
	}()
	return nil
}

// noteReason tells the ledger of the session's background turn why this server ends request id.
func (s *Server) noteReason(sid, id, why string) {
	s.rt.mu.Lock()
	t, ok := s.rt.turns[sid]
	s.rt.mu.Unlock()
	if ok {
		t.led.reason(id, why)
	}
}

// resumeRound applies a retry's answers and returns the session whose turn goes on.
func (s *Server) resumeRound(req *mcp.CallToolRequest) (string, error) {
	st, err := s.rt.verify(req.Params.RequestState, time.Now())
	if err != nil {
		return "", err
	}
	who := pending.Who{Client: "mcp:" + clientName(req)}
	for id, resp := range req.Params.InputResponses {
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return "", fmt.Errorf("inputResponses[%q]: expected an elicitation result, got %T", id, resp)
		}
		s.stopDeadline(id)
		var err error
		if e, ok := s.elicitation(id); ok {
			if e.SessionID != st.SessionID && e.ParentSessionID != st.SessionID && e.RootSessionID != st.SessionID {
				return "", fmt.Errorf("inputResponses[%q]: not a request of session %s", id, st.SessionID)
			}
			err = s.o.Elicitations.ReplyElicitation(id, mcpclient.ElicitationReply{Action: res.Action, Content: res.Content}, who)
		} else if q, ok := s.question(id); ok {
			if q.SessionID != st.SessionID && q.ParentSessionID != st.SessionID && q.RootSessionID != st.SessionID {
				return "", fmt.Errorf("inputResponses[%q]: not a request of session %s", id, st.SessionID)
			}
			answers, why := questionReply(q, res)
			if answers != nil {
				err = s.o.Questions.Reply(id, answers, who)
			}
			if answers == nil || errs.Is(err, errs.Invalid) {
				if errs.Is(err, errs.Invalid) {
					why = "the client's answer was refused (" + err.Error() + "): rejected"
				}
				if why != "" {
					s.noteReason(st.SessionID, id, why)
				}
				err = s.o.Questions.Reject(id, who)
			}
		} else {
			if owner, ok := s.o.Permissions.Owner(id); ok && owner != st.SessionID && !s.listedUnder(id, st.SessionID) {
				return "", fmt.Errorf("inputResponses[%q]: not a request of session %s", id, st.SessionID)
			}
			err = s.o.Permissions.Reply(id, permissionAnswer(res), who)
		}
		if err != nil {
			// Answered elsewhere first, or timed out: the first answer stands, and the turn goes on.
			s.o.Logger.Debug("mcp: late input response", "id", id, "err", err)
		}
	}
	return st.SessionID, nil
}

func (s *Server) elicitation(id string) (mcpclient.Elicitation, bool) {
	if s.o.Elicitations == nil {
		return mcpclient.Elicitation{}, false
	}
	return s.o.Elicitations.Elicitation(id)
}

// listedUnder reports whether permission request id waits under session sid: one of a subagent
// sid started (GET /permission?sessionID=sid lists those too).
func (s *Server) listedUnder(id, sid string) bool {
	for _, r := range s.o.Permissions.List(sid, "") {
		if r.ID == id {
			return true
		}
	}
	return false
}

func (s *Server) question(id string) (question.Request, bool) {
	if s.o.Questions == nil {
		return question.Request{}, false
	}
	return s.o.Questions.Get(id)
}

// awaitRound waits until the session's background turn ends (its result) or needs a person (an
// input-required result). Clients that cannot answer forms get the approval strategy instead, as
// in a single-round call.
func (s *Server) awaitRound(ctx context.Context, req *mcp.CallToolRequest, sid string) (*mcp.CallToolResult, Result, error) {
	s.rt.mu.Lock()
	t, ok := s.rt.turns[sid]
	s.rt.mu.Unlock()
	if !ok {
		return nil, Result{}, fmt.Errorf("session %s has no turn waiting for input (it ended, or the server restarted); continue it with tandem-reply", sid)
	}
	w := &watcher{s: s, req: req, sid: sid, elicit: canElicit(req), rounds: true, token: req.Params.GetProgressToken(), led: t.led}
	finish := func() (*mcp.CallToolResult, Result, error) {
		s.rt.mu.Lock()
		if s.rt.turns[sid] == t {
			delete(s.rt.turns, sid)
		}
		s.rt.mu.Unlock()
		return s.result(sid, t.reply, t.err, t.led.statement(w.mode()), t.led.unansweredQuestions())
	}
	abort := func() (*mcp.CallToolResult, Result, error) {
		// The client cancelled the call: the turn stops too, as in a single-round call.
		if _, aerr := s.o.Sessions.Abort(context.WithoutCancel(ctx), sid); aerr != nil {
			s.o.Logger.Error("mcp: abort after cancel", "session", sid, "err", aerr)
		}
		return nil, Result{}, ctx.Err()
	}
	sub, _, err := s.o.Bus.Subscribe("", waitsForAPerson)
	if err != nil {
		return nil, Result{}, err
	}
	if req.Params.RequestState == "" {
		w.progress(ctx, "turn started")
	}
	if !w.elicit {
		// No forms: the watcher applies the strategy to what the turn asks while this call lasts.
		stop := w.watch(ctx, sub)
		defer stop()
		for _, r := range s.o.Permissions.List(sid, "") {
			w.spawn(ctx, r.ID, func(actx context.Context) { w.approve(actx, r) })
		}
		select {
		case <-t.done:
			return finish()
		case <-ctx.Done():
			return abort()
		}
	}
	defer sub.Close()
	for {
		if inputs := s.inputRequests(ctx, w); len(inputs) > 0 {
			for _, in := range inputs {
				w.progress(ctx, "input needed: "+in.(*mcp.ElicitParams).Message)
			}
			state := s.rt.sign(roundState{SessionID: sid, Expires: time.Now().Add(s.o.Timeout).Unix()})
			return &mcp.CallToolResult{Meta: w.meta(), InputRequests: inputs, RequestState: state}, Result{}, nil
		}
		select {
		case <-t.done:
			return finish()
		case <-ctx.Done():
			return abort()
		case <-sub.Ready():
			if _, err := sub.Take(nil); err != nil {
				return nil, Result{}, err
			}
		}
	}
}

// inputRequests is one form per request of this session that waits for a person, and starts the
// timeout of each the first time it is handed out.
func (s *Server) inputRequests(ctx context.Context, w *watcher) mcp.InputRequestMap {
	out := mcp.InputRequestMap{}
	dir := s.o.Directory
	if sess, err := s.o.Sessions.Get(ctx, w.sid); err == nil {
		dir = sess.Directory
	}
	for _, r := range s.o.Permissions.List(w.sid, "") {
		out[r.ID] = &mcp.ElicitParams{Meta: w.meta(), Message: describe(r, dir), RequestedSchema: approvalSchema(r)}
		s.startDeadline(r.ID, func() {
			w.cannot(r.ID, fmt.Sprintf("no answer within %s: rejected", s.o.Timeout))
			_ = s.o.Permissions.Reply(r.ID, permission.Answer{Reply: permission.Reject, Message: fmt.Sprintf("no answer within %s; rejected", s.o.Timeout)}, pending.Who{Client: "mcp:timeout"})
		})
	}
	if s.o.Questions != nil {
		for _, q := range s.o.Questions.List("") {
			if q.SessionID != w.sid {
				continue
			}
			out[q.ID] = &mcp.ElicitParams{Meta: w.meta(), Message: questionMessage(q), RequestedSchema: questionSchema(q)}
			s.startDeadline(q.ID, func() {
				w.cannot(q.ID, fmt.Sprintf("no answer within %s: rejected", s.o.Timeout))
				_ = s.o.Questions.Reject(q.ID, pending.Who{Client: "mcp:timeout"})
			})
		}
	}
	if s.o.Elicitations != nil {
		// A downstream server's own request keeps the timeout the MCP manager gave it.
		for _, e := range s.o.Elicitations.Elicitations(w.sid) {
			if params := forwardParams(w.req, e, w.meta()); params != nil {
				out[e.ID] = params
			}
		}
	}
	return out
}

func (s *Server) startDeadline(id string, expire func()) {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if _, ok := s.rt.deadlines[id]; ok {
		return
	}
	s.rt.deadlines[id] = time.AfterFunc(s.o.Timeout, func() {
		s.stopDeadline(id)
		expire()
	})
}

func (s *Server) stopDeadline(id string) {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if t, ok := s.rt.deadlines[id]; ok {
		t.Stop()
		delete(s.rt.deadlines, id)
	}
}
