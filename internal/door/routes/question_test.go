package routes_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// askServer is the real server (auth, guards, directory scoping) with the given route modules.
type askServer struct {
	base   string
	dir    string
	client *http.Client
}

func startAskServer(t *testing.T, modules ...routes.Module) *askServer {
	t.Helper()
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
	dir := t.TempDir()
	srv, err := server.Listen(server.Config{
		Port: testenv.UnusedPort(t), Directory: dir,
		Auth: auth.New(auth.Credentials{Username: "tandem", Password: "secret"}), PasswordSet: true,
		API: &routes.API{Modules: modules},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		testenv.Recv(t, srv.Done(), "server shutdown")
	})
	return &askServer{base: strings.TrimSuffix(srv.URL(), "/"), dir: dir, client: client}
}

// do sends a request with credentials and returns the status and body.
func (s *askServer) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("tandem", "secret")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (s *askServer) expect(t *testing.T, method, path, body string, status int, contains ...string) string {
	t.Helper()
	got, resp := s.do(t, method, path, body)
	if got != status {
		t.Fatalf("%s %s %s = %d %s, want %d", method, path, body, got, resp, status)
	}
	for _, c := range contains {
		if !strings.Contains(resp, c) {
			t.Fatalf("%s %s = %s, want it to contain %s", method, path, resp, c)
		}
	}
	return resp
}

type askResult struct {
	answers []question.Answer
	err     error
}

// askInBackground asks questions as the question tool would, in the server's directory, and returns
// the pending request's ID once it is listed.
func askInBackground(t *testing.T, svc *question.Service, s *askServer, qs ...question.Info) (string, <-chan askResult) {
	t.Helper()
	done := make(chan askResult, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); testenv.Recv(t, done, "the question's answer") })
	go func() {
		a, err := svc.Ask(ctx, question.Request{QuestionRequest: api.QuestionRequest{SessionID: "ses_q1", Questions: qs, Tool: &question.ToolRef{MessageID: "msg_q1", CallID: "call_q1"}}, Directory: s.dir})
		done <- askResult{a, err}
		close(done)
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if l := svc.List(""); len(l) > 0 {
			return l[0].ID, done
		}
	}
	t.Fatal("the question never became pending")
	return "", nil
}

func awaitAsk(t *testing.T, done <-chan askResult) askResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return")
		return askResult{}
	}
}

var colorQuestion = question.Info{
	Question: "Which color do you prefer?", Header: "Color",
	Options: []question.Option{{Label: "Red", Description: "warm"}, {Label: "Blue", Description: "cool"}},
}

var strictQuestion = question.Info{
	Question: "Which DB?", Header: "DB", Multiple: true, Custom: new(bool),
	Options: []question.Option{{Label: "Postgres", Description: "server"}, {Label: "SQLite", Description: "file"}},
}

func TestQuestionRoutes(t *testing.T) {
	svc := question.New(question.Options{})
	s := startAskServer(t, &routes.Questions{Service: svc})

	t.Run("a pending question is listed in OpenCode's shape and answered", func(t *testing.T) {
		qid, done := askInBackground(t, svc, s, colorQuestion)
		list := s.expect(t, "GET", "/question", "", 200)
		want := `[{"id":"` + qid + `","sessionID":"ses_q1","questions":[{"question":"Which color do you prefer?","header":"Color","options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cool"}]}],"tool":{"messageID":"msg_q1","callID":"call_q1"}}]`
		if list != want {
			t.Fatalf("GET /question =\n%s\nwant\n%s", list, want)
		}
		s.expect(t, "POST", "/question/"+qid+"/reply", `{"answers":[["Blue"]]}`, 200, "true")
		if r := awaitAsk(t, done); r.err != nil || len(r.answers) != 1 || r.answers[0][0] != "Blue" {
			t.Fatalf("Ask = %v, %v", r.answers, r.err)
		}
		s.expect(t, "GET", "/question", "", 200, "[]")
		late := s.expect(t, "POST", "/question/"+qid+"/reply", `{"answers":[["Red"]]}`, 409, "AlreadyResolvedError")
		var conflict struct {
			Data struct {
				Reply map[string]any `json:"reply"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(late), &conflict); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"answers": []any{[]any{"Blue"}}}, conflict.Data.Reply); diff != "" {
			t.Errorf("the 409 names the winning answers in the reply's JSON shape (-want +got):\n%s\nbody: %s", diff, late)
		}
	})

	t.Run("a rejected question dismisses the tool call", func(t *testing.T) {
		qid, done := askInBackground(t, svc, s, colorQuestion)
		s.expect(t, "POST", "/question/"+qid+"/reject", "", 200, "true")
		if r := awaitAsk(t, done); !errors.Is(r.err, question.ErrDismissed) {
			t.Fatalf("Ask error = %v, want ErrDismissed", r.err)
		}
	})

	t.Run("multi-select and custom answers are accepted where allowed", func(t *testing.T) {
		qid, done := askInBackground(t, svc, s, colorQuestion, strictQuestion)
		s.expect(t, "POST", "/question/"+qid+"/reply", `{"answers":[["Teal"],["Postgres","SQLite"]]}`, 200)
		if r := awaitAsk(t, done); r.err != nil || r.answers[0][0] != "Teal" || len(r.answers[1]) != 2 {
			t.Fatalf("Ask = %v, %v", r.answers, r.err)
		}
	})

	t.Run("bad answers get 400 naming the field and the question stays pending", func(t *testing.T) {
		qid, done := askInBackground(t, svc, s, colorQuestion, strictQuestion)
		for body, field := range map[string]string{
			`{"answers":[["Red"]]}`:                   "answers: expected 2",
			`{"answers":[["Red","Blue"],["SQLite"]]}`: "answers[0]",
			`{"answers":[["Red"],["Oracle"]]}`:        `answers[1][0]: \"Oracle\" is not an option`,
			`{}`:                                      "answers: required",
			`{"answers":"Red"}`:                       "answers",
		} {
			s.expect(t, "POST", "/question/"+qid+"/reply", body, 400, `"name":"BadRequest"`, field)
		}
		s.expect(t, "GET", "/question", "", 200, qid)
		s.expect(t, "POST", "/question/"+qid+"/reply", `{"answers":[["Red"],["SQLite"]]}`, 200)
		awaitAsk(t, done)
	})

	t.Run("unknown and malformed IDs", func(t *testing.T) {
		s.expect(t, "POST", "/question/que_doesnotexist/reply", `{"answers":[]}`, 404, "NotFoundError")
		s.expect(t, "POST", "/question/que_doesnotexist/reject", "", 404)
		s.expect(t, "POST", "/question/nope/reply", `{"answers":[]}`, 400, "requestID")
	})

	t.Run("racing replies have exactly one winner", func(t *testing.T) {
		qid, done := askInBackground(t, svc, s, colorQuestion)
		const n = 12
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if i%3 == 0 {
					codes[i], _ = s.do(t, "POST", "/question/"+qid+"/reject", "")
				} else {
					codes[i], _ = s.do(t, "POST", "/question/"+qid+"/reply", `{"answers":[["Red"]]}`)
				}
			})
		}
		wg.Wait()
		wins := 0
		for _, c := range codes {
			switch c {
			case 200:
				wins++
			case 409:
			default:
				t.Errorf("a racing reply got %d", c)
			}
		}
		if wins != 1 {
			t.Fatalf("%d replies won, want 1 (codes %v)", wins, codes)
		}
		awaitAsk(t, done)
	})

	t.Run("a directory filter hides the questions of other directories", func(t *testing.T) {
		qid, _ := askInBackground(t, svc, &askServer{dir: "/somewhere/else"}, colorQuestion)
		s.expect(t, "GET", "/question?directory="+s.dir, "", 200, "[]")
		s.expect(t, "GET", "/question", "", 200, qid)
	})
}

func TestQuestionRepliesMustBeJSON(t *testing.T) {
	svc := question.New(question.Options{})
	s := startAskServer(t, &routes.Questions{Service: svc})
	qid, done := askInBackground(t, svc, s, colorQuestion)
	req, _ := http.NewRequest("POST", s.base+"/question/"+qid+"/reply", strings.NewReader(`{"answers":[["Red"]]}`))
	req.SetBasicAuth("tandem", "secret")
	req.Header.Set("Content-Type", "text/plain")
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain reply = %d, want 415", res.StatusCode)
	}
	var list []json.RawMessage
	_ = json.Unmarshal([]byte(s.expect(t, "GET", "/question", "", 200)), &list)
	if len(list) != 1 {
		t.Fatalf("the question is gone after a refused reply: %v", list)
	}
	s.expect(t, "POST", "/question/"+qid+"/reject", "", 200)
	awaitAsk(t, done)
}
