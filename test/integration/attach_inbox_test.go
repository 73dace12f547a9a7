//go:build linux

package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/mcpclient"
	"github.com/tandem-dev/tandem/internal/agent/question"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// questionReplied decodes question.replied.
type questionReplied struct {
	RequestID string     `json:"requestID"`
	Answers   [][]string `json:"answers"`
	Client    string     `json:"client"`
}

// TestAttachAnswersMultipleChoiceAndCustomQuestions has a scripted model ask three questions in
// one set — pick several, type your own, and pick several plus your own — and answers them from
// the screen; the server's event and the stored tool part carry exactly those answers.
func TestAttachAnswersMultipleChoiceAndCustomQuestions(t *testing.T) {
	questions := `{"questions":[` +
		`{"question":"Which languages?","header":"Languages","multiple":true,"options":[{"label":"Go","description":""},{"label":"Rust","description":""},{"label":"Zig","description":""}]},` +
		`{"question":"Which editor?","header":"Editor","options":[{"label":"Vim","description":""},{"label":"Emacs","description":""}]},` +
		`{"question":"Which extras?","header":"Extras","multiple":true,"options":[{"label":"Docs","description":""},{"label":"Tests","description":""}]}]}`
	llm := providertest.NewOpenAI(t,
		providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_q", Name: "question", Arguments: questions}}},
		providertest.Turn{Text: []string{"noted your choices"}})
	td := startTandem(t, setup{env: openAIEnv(llm)})
	events := td.subscribe(t)
	sc := attachIn(t, td.base, testPassword)

	sc.prompt("plan the project")
	t.Run("several options are ticked and sent together", func(t *testing.T) {
		sc := sc.on(t)
		sc.waitText("Question 1/3: Languages", "1. [ ] Go", "3. [ ] Zig", "4. Type your own answer", "Enter sends the ticked ones")
		sc.keys("1")
		sc.waitText("1. [x] Go")
		sc.keys("3")
		sc.waitText("1. [x] Go", "2. [ ] Rust", "3. [x] Zig")
		sc.keys("Enter")
	})
	t.Run("a typed answer replaces the options", func(t *testing.T) {
		sc := sc.on(t)
		sc.waitText("Question 2/3: Editor", "1.   Vim", "3. Type your own answer")
		sc.keys("3")
		sc.waitText("your answer, Enter sends")
		sc.typeText("Helix, modal")
		sc.keys("Enter")
	})
	t.Run("ticked options and a typed answer go together", func(t *testing.T) {
		sc := sc.on(t)
		sc.waitText("Question 3/3: Extras", "2. [ ] Tests", "3. Type your own answer")
		sc.keys("2")
		sc.waitText("2. [x] Tests")
		sc.keys("3")
		sc.waitText("your answer (sent with the ticked ones), Enter sends")
		sc.typeText("Benchmarks")
		sc.keys("Enter")
	})
	want := [][]string{{"Go", "Zig"}, {"Helix, modal"}, {"Tests", "Benchmarks"}}
	t.Run("the server records exactly the answers given", func(t *testing.T) {
		ev := events.waitFor(t, "question.replied", ofType("question.replied", ""))
		var got questionReplied
		if err := json.Unmarshal(ev.Properties, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Answers, want) || got.Client != "tandem attach" {
			t.Fatalf("question.replied: answers %q by %q, want %q by tandem attach", got.Answers, got.Client, want)
		}
		sc.on(t).waitText("noted your choices")
		var stored any
		for _, m := range td.messages(t, ev.sessionID()) {
			for _, p := range m.Parts {
				if p.Type == "tool" && p.Tool == "question" && p.State != nil {
					stored = p.State.Metadata["answers"]
				}
			}
		}
		raw, _ := json.Marshal(stored)
		var answers [][]string
		if err := json.Unmarshal(raw, &answers); err != nil || !reflect.DeepEqual(answers, want) {
			t.Fatalf("the stored tool part's answers: %s, want %q", raw, want)
		}
		var waiting []question.Request
		td.call(t, http.MethodGet, "/question", "", http.StatusOK, &waiting)
		if len(waiting) != 0 {
			t.Fatalf("GET /question still lists %+v", waiting)
		}
	})
}

// TestAttachShowsAnMCPLinkAndOpensItOnlyOnAKey has server-everything ask for a URL whose user
// info pretends to be another site: the screen shows the real domain, and the browser (BROWSER,
// a script leaving a marker) runs only when o is pressed.
func TestAttachShowsAnMCPLinkAndOpensItOnlyOnAKey(t *testing.T) {
	td := startWithEverything(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "opened")
	opener := filepath.Join(dir, "browser")
	if err := os.WriteFile(opener, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" >> "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sc := attachWith(t, td.base, testPassword, []string{"BROWSER=" + opener})

	const link = "https://bank.example.com@attacker.test/consent?step=1"
	sc.prompt(`mcp: everything trigger-url-elicitation {"url":"` + link + `","elicitationId":"el-attach"}`)
	sc.waitText("Permission: everything_trigger-url-elicitation")
	sc.keys("1")
	t.Run("the link and its real domain show and nothing opens by itself", func(t *testing.T) {
		sc := sc.on(t)
		screen := sc.waitText("MCP server everything asks you to open a link", "URL:    "+link, "Domain: attacker.test")
		if strings.Contains(screen, "Domain: bank.example.com") {
			t.Fatalf("the domain shown is the user info:\n%s", screen)
		}
		// A screen refresh later (the notice comes and goes through the same loop) nothing has run.
		time.Sleep(time.Second)
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("the browser ran before any key was pressed: %v", err)
		}
	})
	t.Run("o opens the link once and the request still waits", func(t *testing.T) {
		sc := sc.on(t)
		sc.keys("o")
		sc.waitText("opened " + link)
		var got []byte
		deadline := time.Now().Add(waitLimit)
		for {
			got, _ = os.ReadFile(marker)
			if len(got) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if string(got) != link+"\n" {
			t.Fatalf("the browser was given %q, want %q once", got, link)
		}
		var waiting []mcpclient.Elicitation
		td.call(t, http.MethodGet, "/mcp/elicitation", "", http.StatusOK, &waiting)
		if len(waiting) != 1 || waiting[0].URL != link || waiting[0].Domain != "attacker.test" {
			t.Fatalf("after opening, GET /mcp/elicitation: %+v", waiting)
		}
	})
	t.Run("a says it is done and the tool completes", func(t *testing.T) {
		sc := sc.on(t)
		sc.keys("a")
		sc.waitText("✓ everything_trigger-url-elicitation", "User completed the URL elicitation flow")
		sc.waitGone("asks you to open a link")
	})
	t.Run("a host in look-alike letters shows its ASCII form and d declines it unopened", func(t *testing.T) {
		sc := sc.on(t)
		const lookalike = "https://\u0430pple.com/consent" // a Cyrillic а
		sc.prompt(`mcp: everything trigger-url-elicitation {"url":"` + lookalike + `","elicitationId":"el-idn"}`)
		sc.waitText("Permission: everything_trigger-url-elicitation")
		sc.keys("1")
		sc.waitText("asks you to open a link", "= xn--pple-43d.com (not plain ASCII: check the letters)")
		sc.keys("d")
		sc.waitText("User declined to open the URL (Elicitation ID: el-idn)")
		sc.waitGone("asks you to open a link")
		if got, _ := os.ReadFile(marker); string(got) != link+"\n" {
			t.Fatalf("the browser was run again: it was given %q", got)
		}
	})
}

// TestAttachSaysWhoAnsweredElsewhere answers a question and an MCP form over REST while they are
// on screen: each dialog closes naming the client that answered first.
func TestAttachSaysWhoAnsweredElsewhere(t *testing.T) {
	td := startWithEverything(t)
	sc := attachIn(t, td.base, testPassword)

	t.Run("a question answered with curl closes with its answer and client", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("ask: Which database? | Postgres | SQLite")
		sc.waitText("Question: Which database", "2.   SQLite")
		var waiting []question.Request
		td.call(t, http.MethodGet, "/question", "", http.StatusOK, &waiting)
		if len(waiting) != 1 {
			t.Fatalf("pending questions: %+v", waiting)
		}
		td.answerAs(t, "curl/8.0", "/question/"+waiting[0].ID+"/reply", `{"answers":[["SQLite"]]}`)
		sc.waitText("answered by curl (SQLite)", `"Which database?"="SQLite"`)
		sc.waitGone("Type your own answer")
	})
	t.Run("a question dismissed with curl closes saying so", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("ask: Which cache? | Redis | Memcached")
		sc.waitText("Question: Which cache", "2.   Memcached")
		var waiting []question.Request
		td.call(t, http.MethodGet, "/question", "", http.StatusOK, &waiting)
		if len(waiting) != 1 {
			t.Fatalf("pending questions: %+v", waiting)
		}
		td.answerAs(t, "curl/8.0", "/question/"+waiting[0].ID+"/reject", "")
		sc.waitText("answered by curl (dismissed)")
		sc.waitGone("Type your own answer")
	})
	t.Run("an MCP form declined with curl closes with the action and client", func(t *testing.T) {
		sc := sc.on(t)
		sc.prompt("mcp: everything trigger-elicitation-request {}")
		sc.waitText("Permission: everything_trigger-elicitation-request")
		sc.keys("1")
		sc.waitText("MCP server everything asks")
		var waiting []mcpclient.Elicitation
		td.call(t, http.MethodGet, "/mcp/elicitation", "", http.StatusOK, &waiting)
		if len(waiting) != 1 {
			t.Fatalf("pending elicitations: %+v", waiting)
		}
		td.answerAs(t, "curl/8.0", "/mcp/elicitation/"+waiting[0].ID+"/reply", `{"action":"decline"}`)
		sc.waitText("answered by curl (decline)", "✓ everything_trigger-elicitation-request")
		sc.waitGone("MCP server everything asks")
	})
}

// TestAttachSendsAPromptWithThePickedModel starts on a scripted model (the configured provider is
// the default) and switches to the demo model with the model picker: the next prompt is stored with
// the picked model and never reaches the scripted server.
func TestAttachSendsAPromptWithThePickedModel(t *testing.T) {
	llm := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"scripted model here"}})
	td := startTandem(t, setup{config: scriptedProviderConfig(llm), env: map[string]string{"SCRIPTED_API_KEY": "sk-scripted"}})
	sc := attachIn(t, td.base, testPassword)

	sc.waitText("│ scripted/gpt-scripted │")
	sc.prompt("with the default model")
	sc.waitText("scripted model here")
	sc.keys("C-o")
	sc.waitText("Models", "scripted/gpt-scripted  current", "demo/demo")
	sc.typeText("demo/")
	sc.waitFor("only the demo model listed", func(s string) bool {
		return strings.Contains(s, "▸ demo/demo") && !strings.Contains(s, "scripted/gpt-scripted  current")
	})
	sc.keys("Enter")
	sc.waitText("model: demo/demo", "│ demo/demo │")
	sc.prompt("with the picked model")
	sc.waitText("You said: with the picked model")

	var sessions []session.Session
	td.call(t, http.MethodGet, "/session", "", http.StatusOK, &sessions)
	if len(sessions) != 1 {
		t.Fatalf("sessions: %+v", sessions)
	}
	models := map[string]string{}
	for _, m := range td.messages(t, sessions[0].ID) {
		if m.Info.Role == "user" && m.Info.Model != nil {
			for _, p := range m.Parts {
				if p.Type == "text" && p.Text != nil {
					models[*p.Text] = m.Info.Model.ProviderID + "/" + m.Info.Model.ModelID
				}
			}
		}
	}
	if want := map[string]string{"with the default model": "scripted/gpt-scripted", "with the picked model": "demo/demo"}; !reflect.DeepEqual(models, want) {
		t.Fatalf("the user messages' models: %v, want %v", models, want)
	}
	if reqs := llm.Requests(); len(reqs) != 1 || requestContains(reqs[0], "with the picked model") {
		t.Fatalf("the scripted model saw %d requests; the picked model's prompt must not reach it", len(reqs))
	}
}

// TestAttachAnswersASubagentsApprovalUnderTheParent: the person looks at the session that started a
// task; the subagent's bash request opens there, is answered there, and the parent's turn ends with
// the child's output.
func TestAttachAnswersASubagentsApprovalUnderTheParent(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"task": "allow"}}`})
	sc := attachIn(t, td.base, testPassword)

	sc.prompt("task: general | run: echo child-$((6*7))")
	sc.waitText("Permission: bash", "$ echo child-$((6*7))", "[1] Allow once")
	sc.keys("1")
	sc.waitGone("Permission: bash")
	sc.waitText("child-42")
	var waiting []permissionRequest
	td.call(t, http.MethodGet, "/permission", "", http.StatusOK, &waiting)
	if len(waiting) != 0 {
		t.Fatalf("GET /permission still lists %+v", waiting)
	}
}
