package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// summarize is POST /session/{id}/summarize; it requires 200 true.
func (td *tandem) summarize(tb testing.TB, sid, providerID, modelID string) {
	tb.Helper()
	body, _ := json.Marshal(map[string]string{"providerID": providerID, "modelID": modelID})
	var ok bool
	td.call(tb, http.MethodPost, "/session/"+sid+"/summarize", string(body), http.StatusOK, &ok)
	if !ok {
		tb.Fatalf("summarize %s: answered false", sid)
	}
}

// compaction finds the compaction part of a user message.
func compaction(m session.WithParts) (session.Part, bool) {
	for _, p := range m.Parts {
		if p.Type == "compaction" {
			return p, true
		}
	}
	return session.Part{}, false
}

// summaries returns the compaction summaries of a session, oldest first, each checked to answer
// a user message with a compaction part.
func summaries(tb testing.TB, msgs []session.WithParts) []session.WithParts {
	tb.Helper()
	byID := map[string]session.WithParts{}
	var out []session.WithParts
	for _, m := range msgs {
		byID[m.Info.ID] = m
		if m.Info.Role != session.RoleAssistant || m.Info.Summary == nil {
			continue
		}
		if !m.Info.Summary.Compacted || m.Info.Agent != "compaction" || m.Info.Mode != "compaction" {
			tb.Fatalf("assistant %s: summary %+v, agent %q, mode %q", m.Info.ID, m.Info.Summary, m.Info.Agent, m.Info.Mode)
		}
		if _, ok := compaction(byID[m.Info.ParentID]); !ok {
			tb.Fatalf("summary %s answers %s, which has no compaction part", m.Info.ID, m.Info.ParentID)
		}
		out = append(out, m)
	}
	return out
}

func TestSummarizeWithTheDemoModel(t *testing.T) {
	td := startTandem(t, setup{})
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.prompt(t, sid, "alpha task")
	td.prompt(t, sid, "beta task")

	t.Run("summarize writes the demo model's summary of the prompts before it", func(t *testing.T) {
		mark := events.mark()
		td.summarize(t, sid, provider.DemoID, provider.DemoID)
		msgs := td.messages(t, sid)
		got := summaries(t, msgs)
		if len(got) != 1 {
			t.Fatalf("%d summaries, want 1", len(got))
		}
		want := "Summary of the conversation so far:\n- The user asked: alpha task\n- The user asked: beta task"
		if text := textOf(got[0]); text != want {
			t.Fatalf("summary %q, want %q", text, want)
		}
		if got[0].Info.Time.Completed == 0 || got[0].Info.Error != nil || got[0].Info.Finish != "stop" {
			t.Fatalf("summary info %+v", got[0].Info)
		}
		user := msgs[len(msgs)-2]
		part, _ := compaction(user)
		if part.Auto == nil || *part.Auto || user.Info.Role != session.RoleUser {
			t.Fatalf("compaction user message %+v, part %+v: want a user message with auto false", user.Info, part)
		}
		events.waitFor(t, "session.compacted", ofType("session.compacted", sid))
		var compactionPart, summaryMsg bool
		for _, e := range events.since(mark) {
			if p, ok := e.part(); ok && p.Type == "compaction" {
				compactionPart = true
			}
			if m, ok := e.message(); ok && m.Summary != nil && m.Summary.Compacted {
				summaryMsg = true
			}
		}
		if !compactionPart || !summaryMsg {
			t.Fatalf("events: compaction part %v, summary message %v:\n%s", compactionPart, summaryMsg, events.dump(mark))
		}
	})

	t.Run("the summary is served with OpenCode's summary true and compaction part shapes", func(t *testing.T) {
		var raw []map[string]any
		td.call(t, http.MethodGet, "/session/"+sid+"/message", "", http.StatusOK, &raw)
		n := len(raw)
		info := raw[n-1]["info"].(map[string]any)
		if info["summary"] != true {
			t.Fatalf("summary message info.summary = %v, want true", info["summary"])
		}
		part := raw[n-2]["parts"].([]any)[0].(map[string]any)
		if part["type"] != "compaction" || part["auto"] != false {
			t.Fatalf("compaction part %v", part)
		}
	})

	t.Run("a prompt after the summary still works and its history starts from the summary", func(t *testing.T) {
		if got := textOf(td.prompt(t, sid, "gamma task")); got != "You said: gamma task" {
			t.Fatalf("reply %q", got)
		}
		// A second summary sees the first summary and what came after it, never the old prompts:
		// had they been sent, alpha would be listed twice.
		td.summarize(t, sid, provider.DemoID, provider.DemoID)
		got := summaries(t, td.messages(t, sid))
		want := "Summary of the conversation so far:\n- The user asked: alpha task\n- The user asked: beta task\n- The user asked: gamma task"
		if len(got) != 2 || textOf(got[1]) != want {
			t.Fatalf("second summary %q, want %q", textOf(got[len(got)-1]), want)
		}
	})

	t.Run("summarize is refused with 409 while a turn runs", func(t *testing.T) {
		td.promptAsync(t, sid, "slow: one two three four five six seven eight nine ten")
		events.waitFor(t, "the slow turn to be busy", func(e event) bool {
			return e.Type == "session.status" && e.sessionID() == sid && e.status().Type == "busy"
		})
		status, body := td.request(t, http.MethodPost, "/session/"+sid+"/summarize", `{"providerID":"demo","modelID":"demo"}`)
		var eb errorBody
		_ = json.Unmarshal(body, &eb)
		if status != http.StatusConflict || eb.Name != "SessionBusyError" {
			t.Fatalf("summarize while busy: %d %s", status, body)
		}
		td.call(t, http.MethodPost, "/session/"+sid+"/abort", "", http.StatusOK, nil)
	})

	t.Run("summarize names a malformed body and an unknown provider", func(t *testing.T) {
		for _, body := range []string{`{"providerID":"demo"}`, `{"providerID":"nope","modelID":"x"}`} {
			if status, b := td.request(t, http.MethodPost, "/session/"+sid+"/summarize", body); status != http.StatusBadRequest {
				t.Fatalf("summarize %s: %d %s, want 400", body, status, b)
			}
		}
	})
}

func TestSummarizeSendsTheSummaryInsteadOfTheHistory(t *testing.T) {
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"answer-one"}},
		providertest.Turn{Text: []string{"SUMMARY-OF-FIRST"}},
		providertest.Turn{Text: []string{"answer-two"}},
	)
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	td.prompt(t, sid, "first-question")
	td.summarize(t, sid, "openai", "gpt-scripted")
	if got := textOf(td.prompt(t, sid, "second-question")); got != "answer-two" {
		t.Fatalf("reply after the summary %q", got)
	}
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	t.Run("the summary call carries the conversation and the summarization instruction", func(t *testing.T) {
		if !requestContains(reqs[1], "first-question") || !requestContains(reqs[1], "answer-one") || !requestContains(reqs[1], provider.CompactionPrompt) {
			t.Fatalf("summary request %s", reqs[1].Body)
		}
		var body struct {
			Tools []any `json:"tools"`
		}
		_ = reqs[1].Decode(&body)
		if len(body.Tools) != 0 {
			t.Fatalf("the summary call offered %d tools", len(body.Tools))
		}
	})
	t.Run("the next prompt sends the summary and not the messages before it", func(t *testing.T) {
		r := reqs[2]
		for _, want := range []string{"SUMMARY-OF-FIRST", provider.SummaryQuestion, "second-question"} {
			if !requestContains(r, want) {
				t.Fatalf("next request lacks %q: %s", want, r.Body)
			}
		}
		for _, gone := range []string{"first-question", "answer-one", provider.CompactionPrompt} {
			if requestContains(r, gone) {
				t.Fatalf("next request still carries %q: %s", gone, r.Body)
			}
		}
	})
}

func TestAutomaticCompaction(t *testing.T) {
	t.Run("a turn over the model's usable context compacts what came before it first", func(t *testing.T) {
		llm := providertest.NewOpenAI(t,
			providertest.Turn{Text: []string{"answer-one"}},
			providertest.Turn{Text: []string{"AUTO-SUMMARY"}},
			providertest.Turn{Text: []string{"answer-two"}},
			providertest.Turn{Text: []string{"SECOND-SUMMARY"}},
			providertest.Turn{Text: []string{"answer-three"}},
		)
		cfg := `{"provider":{"openai":{"models":{"gpt-scripted":{"limit":{"context":50000,"output":1000}}}}}}`
		td := startTandem(t, setup{env: openAIEnv(llm), config: cfg})
		sid := td.newSession(t)
		td.prompt(t, sid, "first-question")
		// About 60,000 tokens: more than the 49,000 the model can take.
		big := "second-question " + strings.Repeat("padding ", 30000)
		if got := textOf(td.prompt(t, sid, big)); got != "answer-two" {
			t.Fatalf("reply %q", got)
		}
		reqs := llm.Requests()
		if len(reqs) < 3 || !requestContains(reqs[1], provider.CompactionPrompt) || !requestContains(reqs[1], "first-question") {
			t.Fatalf("%d model calls; the second should be the summary of the first prompt", len(reqs))
		}
		if requestContains(reqs[1], "second-question") {
			t.Fatalf("the summary call carries the turn's own prompt, which is kept as it is")
		}
		r := reqs[2]
		if !requestContains(r, "AUTO-SUMMARY") || !requestContains(r, "second-question") || requestContains(r, "first-question") || requestContains(r, "answer-one") {
			t.Fatalf("the turn's call should carry the summary and its own prompt only: %.400s", r.Body)
		}
		msgs := td.messages(t, sid)
		got := summaries(t, msgs)
		if len(got) != 1 || textOf(got[0]) != "AUTO-SUMMARY" {
			t.Fatalf("summaries %+v", got)
		}
		// user, reply, user (big), compaction, summary, reply
		if len(msgs) != 6 {
			t.Fatalf("%d messages, want 6", len(msgs))
		}
		part, _ := compaction(msgs[3])
		if part.Auto == nil || !*part.Auto || part.TailStartID != msgs[2].Info.ID {
			t.Fatalf("compaction part %+v: want auto, keeping the turn's prompt %s", part, msgs[2].Info.ID)
		}
		if textOf(msgs[5]) != "answer-two" || msgs[5].Info.ParentID != msgs[2].Info.ID {
			t.Fatalf("the turn's reply %+v", msgs[5].Info)
		}

		// The kept prompt is still too big: the next turn compacts again, and that summary is
		// written from the stored history, which starts from the first summary and keeps its tail.
		if got := textOf(td.prompt(t, sid, "third-question")); got != "answer-three" {
			t.Fatalf("third reply %q", got)
		}
		reqs = llm.Requests()
		if len(reqs) != 5 {
			t.Fatalf("%d model calls, want 5", len(reqs))
		}
		for _, want := range []string{provider.CompactionPrompt, "AUTO-SUMMARY", "second-question", "answer-two"} {
			if !requestContains(reqs[3], want) {
				t.Fatalf("the second summary call lacks %q", want)
			}
		}
		for _, gone := range []string{"first-question", "answer-one", "third-question"} {
			if requestContains(reqs[3], gone) {
				t.Fatalf("the second summary call carries %q", gone)
			}
		}
		if r := reqs[4]; !requestContains(r, "SECOND-SUMMARY") || !requestContains(r, "third-question") ||
			requestContains(r, "AUTO-SUMMARY") || requestContains(r, "second-question") {
			t.Fatalf("the third turn's call should carry the second summary and its own prompt only: %.400s", r.Body)
		}
	})

	for _, c := range []struct {
		name, config string
		summaries    int
	}{
		{"with the demo model and a small usable context, the second turn compacts the first", `{"compaction":{"reserved":127500}}`, 1},
		{"with compaction.auto false, nothing is compacted", `{"compaction":{"auto":false,"reserved":127500}}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			td := startTandem(t, setup{config: c.config})
			sid := td.newSession(t)
			td.prompt(t, sid, "alpha task")
			if got := textOf(td.prompt(t, sid, "beta task")); got != "You said: beta task" {
				t.Fatalf("reply %q", got)
			}
			got := summaries(t, td.messages(t, sid))
			if len(got) != c.summaries {
				t.Fatalf("%d summaries, want %d", len(got), c.summaries)
			}
			if c.summaries == 1 {
				if want := "Summary of the conversation so far:\n- The user asked: alpha task"; textOf(got[0]) != want {
					t.Fatalf("summary %q, want %q", textOf(got[0]), want)
				}
			}
		})
	}
}

func TestAContextOverflowCompactsAndCallsAgain(t *testing.T) {
	overflow := `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"answer-one"}},
		providertest.Turn{Status: http.StatusBadRequest, Body: overflow},
		providertest.Turn{Text: []string{"OVERFLOW-SUMMARY"}},
		providertest.Turn{Text: []string{"answer-two"}},
	)
	// gpt-scripted has no known limit: only the provider's refusal can start this compaction.
	td := startTandem(t, setup{env: openAIEnv(llm)})
	sid := td.newSession(t)
	td.prompt(t, sid, "first-question")
	if got := textOf(td.prompt(t, sid, "second-question")); got != "answer-two" {
		t.Fatalf("reply %q", got)
	}
	reqs := llm.Requests()
	if len(reqs) != 4 || !requestContains(reqs[2], provider.CompactionPrompt) {
		t.Fatalf("%d model calls; the third should be the summary", len(reqs))
	}
	if r := reqs[3]; !requestContains(r, "OVERFLOW-SUMMARY") || !requestContains(r, "second-question") || requestContains(r, "first-question") {
		t.Fatalf("the call after the summary should carry it and the turn's prompt only: %.400s", r.Body)
	}
	msgs := td.messages(t, sid)
	// user, reply, user, refused step, compaction, summary, reply
	if len(msgs) != 7 {
		t.Fatalf("%d messages, want 7", len(msgs))
	}
	if e := msgs[3].Info.Error; e == nil || e.Name != "ContextOverflowError" {
		t.Fatalf("the refused step's error %+v, want ContextOverflowError", e)
	}
	part, _ := compaction(msgs[4])
	if part.Auto == nil || !*part.Auto || !part.Overflow || part.TailStartID != msgs[2].Info.ID {
		t.Fatalf("compaction part %+v: want auto and overflow, keeping the turn's prompt", part)
	}
	if got := summaries(t, msgs); len(got) != 1 || textOf(got[0]) != "OVERFLOW-SUMMARY" {
		t.Fatalf("summaries %+v", got)
	}
	if textOf(msgs[6]) != "answer-two" || msgs[6].Info.Error != nil {
		t.Fatalf("the turn's reply %+v", msgs[6].Info)
	}
}

func TestAContextOverflowWithAutoCompactionOffFailsTheTurn(t *testing.T) {
	overflow := `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	llm := providertest.NewOpenAI(t,
		providertest.Turn{Text: []string{"answer-one"}},
		providertest.Turn{Status: http.StatusBadRequest, Body: overflow},
	)
	td := startTandem(t, setup{env: openAIEnv(llm), config: `{"compaction":{"auto":false}}`})
	sid := td.newSession(t)
	td.prompt(t, sid, "first-question")
	reply := td.prompt(t, sid, "second-question")
	if e := reply.Info.Error; e == nil || e.Name != "ContextOverflowError" {
		t.Fatalf("reply error %+v, want ContextOverflowError", e)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2: nothing is summarised with compaction.auto false", n)
	}
	if got := summaries(t, td.messages(t, sid)); len(got) != 0 {
		t.Fatalf("%d summaries, want none", len(got))
	}
}
