package session

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// registryProviders serves a session from a real provider registry, as the server does: prices and
// capabilities come from its model table.
type registryProviders struct{ *provider.Registry }

func (r registryProviders) Cost(providerID, modelID string, u provider.Usage) float64 {
	m, _ := r.Model(providerID, modelID)
	return m.CostOf(u)
}

// wiredService is a session service whose providers are configured by providers (config's
// provider key) and reached over loopback, with the built-in tools and no permission gate. It
// returns the service and a session in a project directory that holds README.md.
func wiredService(t *testing.T, providers map[string]config.ProviderConfig) (*Service, Session) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := provider.NewRegistry(config.Config{Provider: providers}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	s := New(Options{DB: db, Bus: b, Version: "test", Agent: &Agent{Providers: registryProviders{reg}, Tools: tool.Builtins(tool.Options{}).All}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		reg.Close()
		b.Close()
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A titled session: no title call joins the turn's requests.
	sess, err := s.Create(ctx, dir, CreateInput{Title: "wire"})
	if err != nil {
		t.Fatal(err)
	}
	return s, sess
}

func anthropicAt(url string) map[string]config.ProviderConfig {
	return map[string]config.ProviderConfig{"anthropic": {Options: config.ProviderOptions{APIKey: "ant-test", BaseURL: url}}}
}

func prompt(model, text string) PromptInput {
	p, m, _ := config.SplitModel(model)
	return PromptInput{Model: &MessageModel{ProviderID: p, ModelID: m}, Parts: []PartInput{{Type: "text", Text: text}}}
}

// wireBody decodes a request the server received.
func wireBody(t *testing.T, r providertest.Request) map[string]any {
	t.Helper()
	var body map[string]any
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body
}

// breakpoints lists where a Messages request asks for caching: "tools[i]", "system[i]",
// "messages[i].content[j]".
func breakpoints(body map[string]any) []string {
	var out []string
	marked := func(v any) bool { _, ok := v.(map[string]any)["cache_control"]; return ok }
	for i, v := range body["tools"].([]any) {
		if marked(v) {
			out = append(out, "tools["+itoa(i)+"]")
		}
	}
	for i, v := range body["system"].([]any) {
		if marked(v) {
			out = append(out, "system["+itoa(i)+"]")
		}
	}
	for i, m := range body["messages"].([]any) {
		for j, v := range m.(map[string]any)["content"].([]any) {
			if marked(v) {
				out = append(out, "messages["+itoa(i)+"].content["+itoa(j)+"]")
			}
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestAnthropicTurnCachesTheTailAndStoresEachStepsUsage(t *testing.T) {
	recs := providertest.LoadRecordings(t, "testdata/recordings/anthropic-turn")
	replay := providertest.NewReplay(t, recs...)
	s, sess := wiredService(t, anthropicAt(replay.BaseURL))
	ctx := context.Background()

	reply, err := s.Prompt(ctx, sess.ID, prompt("anthropic/claude-sonnet-4-5", "Which docs does the project have?"))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Info.Error != nil {
		t.Fatalf("the turn failed: %+v", reply.Info.Error)
	}

	reqs := replay.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the server saw %d requests, want 3", len(reqs))
	}
	third := wireBody(t, reqs[2])
	tools, msgs := len(third["tools"].([]any)), third["messages"].([]any)
	// user prompt, assistant (text, glob), user (glob's result), assistant (list), user (list's result)
	if len(msgs) != 5 {
		t.Fatalf("the third request has %d messages, want 5", len(msgs))
	}
	want := []string{"tools[" + itoa(tools-1) + "]", "system[" + itoa(len(third["system"].([]any))-1) + "]",
		"messages[2].content[0]", "messages[4].content[0]"}
	if diff := cmp.Diff(want, breakpoints(third)); diff != "" {
		t.Errorf("the third request's breakpoints (-want +got):\n%s", diff)
	}

	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var steps []Message
	for _, wp := range page.Items {
		if wp.Info.Role == RoleAssistant {
			steps = append(steps, wp.Info)
		}
	}
	if len(steps) != 3 {
		t.Fatalf("%d assistant messages, want one per step", len(steps))
	}
	sonnet := provider.ModelInfo{Cost: provider.Cost{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}
	var total Tokens
	var cost float64
	for i, rec := range recs {
		var w struct{ Usage provider.Usage }
		if err := json.Unmarshal(rec.Want, &w); err != nil {
			t.Fatal(err)
		}
		want := tokensOf(w.Usage)
		if diff := cmp.Diff(&want, steps[i].Tokens); diff != "" {
			t.Errorf("step %d's tokens (-recorded +stored):\n%s", i+1, diff)
		}
		if got, want := *steps[i].Cost, sonnet.CostOf(w.Usage); !near(got, want) {
			t.Errorf("step %d cost $%v, want $%v at Claude Sonnet 4.5's prices", i+1, got, want)
		}
		addTokens(&total, want)
		cost += sonnet.CostOf(w.Usage)
	}
	after, err := s.Get(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(total, after.Tokens); diff != "" || !near(after.Cost, cost) {
		t.Errorf("the session's cost $%v (want $%v), tokens (-steps +session):\n%s", after.Cost, cost, diff)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

func TestThinkingTurnSendsTheSignatureBackWithTheToolCall(t *testing.T) {
	recs := providertest.LoadRecordings(t, "testdata/recordings/anthropic-thinking")
	replay := providertest.NewReplay(t, recs...)
	s, sess := wiredService(t, anthropicAt(replay.BaseURL))
	ctx := context.Background()
	in := prompt("anthropic/claude-sonnet-4-5", "Which Markdown files are there? Think first.")
	in.Variant = "high"

	reply, err := s.Prompt(ctx, sess.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Info.Error != nil {
		t.Fatalf("the turn failed: %+v", reply.Info.Error)
	}
	reqs := replay.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the server saw %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if diff := cmp.Diff(map[string]any{"type": "enabled", "budget_tokens": 16000.0}, wireBody(t, r)["thinking"]); diff != "" {
			t.Errorf("request %d's thinking (-want +got):\n%s", i+1, diff)
		}
	}
	assistant := wireBody(t, reqs[1])["messages"].([]any)[1].(map[string]any)
	content := assistant["content"].([]any)
	first := content[0].(map[string]any)
	want := map[string]any{"type": "thinking", "thinking": "The person wants the Markdown files; glob finds them.",
		"signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+BqC4ZB3l0LjXkX5rOIoVqZ3YUUa5pUYhTJQxiXM6k5Ugm2lZmJbE3TYaVv6JCoYWNjyeKMn3iogPBaYMHYe"}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("the second request's assistant turn does not start with the signed thinking (-want +got):\n%s", diff)
	}
	if last := content[len(content)-1].(map[string]any); last["type"] != "tool_use" || last["id"] != "toolu_01GlobCCCCCCCCCCCCCCCCCC" {
		t.Errorf("the thinking's tool call is not in the same turn: %v", content)
	}

	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var reasoning []Part
	for _, wp := range page.Items {
		if wp.Info.Role == RoleAssistant && wp.Info.Variant != "high" {
			t.Errorf("assistant message %s has variant %q, want high", wp.Info.ID, wp.Info.Variant)
		}
		for _, p := range wp.Parts {
			if p.Type == "reasoning" {
				reasoning = append(reasoning, p)
			}
		}
	}
	if len(reasoning) != 1 || *reasoning[0].Text != "The person wants the Markdown files; glob finds them." ||
		reasoning[0].Metadata["anthropic"].(map[string]any)["signature"] != want["signature"] {
		t.Fatalf("reasoning parts: %+v", reasoning)
	}
}

// redPixel is a 1x1 PNG.
var redPixel, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")

func TestImagesReachTheModelAsImageParts(t *testing.T) {
	server := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"A red pixel."}}, providertest.Turn{Text: []string{"The same pixel."}})
	s, sess := wiredService(t, map[string]config.ProviderConfig{
		"openai": {Options: config.ProviderOptions{APIKey: "sk-test", BaseURL: server.BaseURL}}})
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(sess.Directory, "pixel.png"), redPixel, 0o644); err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(redPixel)
	in := prompt("openai/gpt-4.1", "What is in this image?")
	in.Parts = append(in.Parts, PartInput{Type: "file", Mime: "image/png", Filename: "pasted.png", URL: dataURL})
	if _, err := s.Prompt(ctx, sess.ID, in); err != nil {
		t.Fatal(err)
	}
	in = prompt("openai/gpt-4.1", "And this one, from the project?")
	in.Parts = append(in.Parts, PartInput{Type: "file", Mime: "image/png", Filename: "pixel.png",
		URL: "file://" + filepath.ToSlash(filepath.Join(sess.Directory, "pixel.png"))})
	if _, err := s.Prompt(ctx, sess.ID, in); err != nil {
		t.Fatal(err)
	}

	reqs := server.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the server saw %d requests, want 2", len(reqs))
	}
	var users []any
	for _, m := range wireBody(t, reqs[1])["messages"].([]any) {
		if m.(map[string]any)["role"] == "user" {
			users = append(users, m.(map[string]any)["content"])
		}
	}
	image := map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL}}
	want := []any{
		[]any{map[string]any{"type": "text", "text": "What is in this image?"}, image},
		[]any{map[string]any{"type": "text", "text": "And this one, from the project?"}, image},
	}
	if diff := cmp.Diff(want, users); diff != "" {
		t.Errorf("the user messages of the second request (-want +got):\n%s", diff)
	}
	// OpenAI caches a prompt's longest prefix seen before, byte for byte: the second request must
	// start with the whole first one (but its closing "]}").
	first, second := reqs[0].Body, reqs[1].Body
	if !bytes.HasPrefix(second, first[:len(first)-2]) {
		t.Errorf("the second request does not start with the first:\n%s\n%s", first, second)
	}
}

func TestAttachmentsAModelCannotReceiveAreRefused(t *testing.T) {
	server := providertest.NewOpenAI(t)
	s, sess := wiredService(t, map[string]config.ProviderConfig{
		"openai": {Options: config.ProviderOptions{APIKey: "sk-test", BaseURL: server.BaseURL}}})
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "secret.png")
	if err := os.WriteFile(outside, redPixel, 0o644); err != nil {
		t.Fatal(err)
	}
	pixel := "data:image/png;base64," + base64.StdEncoding.EncodeToString(redPixel)
	cases := []struct {
		name, model string
		part        PartInput
		says        string
	}{
		{"an image to a model that takes none", "demo/demo", PartInput{Type: "file", Mime: "image/png", Filename: "p.png", URL: pixel}, "does not take image attachments"},
		{"a PDF to an OpenAI model", "openai/gpt-4.1", PartInput{Type: "file", Mime: "application/pdf", Filename: "a.pdf", URL: "data:application/pdf;base64,JVBERi0xLjQK"}, "PDFs to Anthropic's models only"},
		{"an image outside the project", "openai/gpt-4.1", PartInput{Type: "file", Mime: "image/png", Filename: "secret.png", URL: "file://" + filepath.ToSlash(outside)}, "secret.png"},
		{"an image that is not one", "openai/gpt-4.1", PartInput{Type: "file", Mime: "image/png", Filename: "fake.png", URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("just text"))}, "is not a PNG, JPEG, GIF or WebP image"},
		{"a data: URL that does not decode", "openai/gpt-4.1", PartInput{Type: "file", Mime: "image/png", Filename: "bad.png", URL: "data:image/png;base64,***"}, "does not decode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := prompt(c.model, "look")
			in.Parts = append(in.Parts, c.part)
			_, err := s.Prompt(ctx, sess.ID, in)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
		})
	}
	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 || len(server.Requests()) != 0 {
		t.Errorf("a refused prompt left %d messages and %d requests", len(page.Items), len(server.Requests()))
	}
}

func TestAFailedTurnStillCountsWhatItsFinishedStepsCost(t *testing.T) {
	server := providertest.NewAnthropic(t,
		providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "glob", Arguments: `{"pattern":"*.md"}`}},
			Usage: providertest.Usage{Input: 2000, Output: 50, CacheWrite: 4000}},
		providertest.Turn{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: bad"}}`})
	s, sess := wiredService(t, anthropicAt(server.BaseURL))
	ctx := context.Background()

	reply, err := s.Prompt(ctx, sess.ID, prompt("anthropic/claude-sonnet-4-5", "find the docs"))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Info.Error == nil {
		t.Fatal("the second step's refusal did not fail the turn")
	}
	after, err := s.Get(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Claude Sonnet 4.5: $3 input, $15 output, $3.75 cache write per million tokens.
	if want := (2000*3 + 50*15 + 4000*3.75) / 1e6; !near(after.Cost, want) || after.Tokens.Input != 2000 || after.Tokens.Cache.Write != 4000 {
		t.Fatalf("the session cost $%v with tokens %+v, want $%v for the finished step", after.Cost, after.Tokens, want)
	}
}

func TestPastedFilesAreReadAsTextOrRefused(t *testing.T) {
	server := providertest.NewOpenAI(t, providertest.Turn{Text: []string{"Read it."}})
	s, sess := wiredService(t, map[string]config.ProviderConfig{
		"openai": {Options: config.ProviderOptions{APIKey: "sk-test", BaseURL: server.BaseURL}}})
	ctx := context.Background()

	in := prompt("openai/gpt-4.1", "review this")
	in.Parts = append(in.Parts, PartInput{Type: "file", Mime: "application/zip", Filename: "a.zip",
		URL: "data:application/zip;base64," + base64.StdEncoding.EncodeToString([]byte("PK\x03\x04\x00\x00"))})
	if _, err := s.Prompt(ctx, sess.ID, in); err == nil || !strings.Contains(err.Error(), "parts[1] (a.zip) cannot be sent") {
		t.Fatalf("a pasted binary file: error %v", err)
	}

	in = prompt("openai/gpt-4.1", "review this")
	in.Parts = append(in.Parts, PartInput{Type: "file", Mime: "text/x-go", Filename: "main.go",
		URL: "data:text/x-go;base64," + base64.StdEncoding.EncodeToString([]byte("package main\n"))})
	if _, err := s.Prompt(ctx, sess.ID, in); err != nil {
		t.Fatal(err)
	}
	msgs := wireBody(t, server.Requests()[0])["messages"].([]any)
	got := msgs[len(msgs)-1].(map[string]any)["content"]
	want := "review this\nContents of main.go (attached):\npackage main\n\n[attached file: main.go (text/x-go) (pasted)]"
	if got != want {
		t.Fatalf("the prompt reached the model as %q, want %q", got, want)
	}
}

func TestATurnAbortedInAToolStillCountsTheCallThatAskedForIt(t *testing.T) {
	server := providertest.NewAnthropic(t,
		providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "bash", Arguments: `{"command":"sleep 30","description":"wait"}`}},
			Usage: providertest.Usage{Input: 1000, Output: 40}})
	s, sess := wiredService(t, anthropicAt(server.BaseURL))
	ctx := context.Background()
	if _, err := s.PromptAsync(ctx, sess.ID, prompt("anthropic/claude-sonnet-4-5", "wait a bit")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for running := false; !running; {
		if time.Now().After(deadline) {
			t.Fatal("the bash call never started")
		}
		page, err := s.Messages(ctx, sess.ID, MessagesInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, wp := range page.Items {
			for _, p := range wp.Parts {
				running = running || (p.Type == "tool" && p.State != nil && p.State.Status == "running")
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := s.Abort(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	after, err := s.Get(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := (1000*3 + 40*15) / 1e6 // Claude Sonnet 4.5: $3 input, $15 output per million tokens
	if !near(after.Cost, want) || after.Tokens.Input != 1000 || after.Tokens.Output != 40 {
		t.Fatalf("the session cost $%v with tokens %+v, want $%v", after.Cost, after.Tokens, want)
	}
	page, err := s.Messages(ctx, sess.ID, MessagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	last := page.Items[len(page.Items)-1].Info
	if last.Error == nil || last.Cost == nil || !near(*last.Cost, want) {
		t.Fatalf("the aborted message: error %v, cost %v", last.Error, last.Cost)
	}
}
