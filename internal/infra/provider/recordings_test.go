package provider_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// recorded is what a recording's answer decodes to: the want of its NAME.json.
type recorded struct {
	Text      string
	Reasoning string
	Blocks    []provider.Reasoning // the ReasoningDone events, in order
	ToolCalls []provider.ToolCall
	Finish    string
	Usage     provider.Usage
	Error     *recordedError
}

type recordedError struct {
	Kind       string
	Status     int
	RetryAfter string
	Message    string
}

// decoded gathers a stream's events the way a recording states them.
func decoded(events []provider.Event, err error) recorded {
	var r recorded
	for _, e := range events {
		switch e.Kind {
		case provider.TextDelta:
			r.Text += e.Text
		case provider.ReasoningDelta:
			r.Reasoning += e.Text
		case provider.ReasoningDone:
			r.Blocks = append(r.Blocks, e.Reasoning)
		case provider.ToolCallReady:
			tc := e.ToolCall
			tc.Input = compact(tc.Input)
			r.ToolCalls = append(r.ToolCalls, tc)
		case provider.Finished:
			r.Finish, r.Usage = e.Reason, e.Usage
		}
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		r.Error = &recordedError{Kind: pe.Kind.String(), Status: pe.Status, Message: pe.Message}
		if pe.RetryAfter > 0 {
			r.Error.RetryAfter = pe.RetryAfter.String()
		}
	}
	return r
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// recordedCall is a recording's call, its tool inputs as a model streams them (compact JSON).
func recordedCall(t *testing.T, rec providertest.Recording) provider.Request {
	t.Helper()
	var req provider.Request
	if err := json.Unmarshal(rec.Call, &req); err != nil {
		t.Fatalf("%s: call: %v", rec.Name, err)
	}
	for i := range req.Messages {
		for j := range req.Messages[i].ToolCalls {
			req.Messages[i].ToolCalls[j].Input = compact(req.Messages[i].ToolCalls[j].Input)
		}
	}
	return req
}

// recordedWires are the APIs with recordings, and the client each is replayed to.
var recordedWires = []struct {
	dir      string
	provider func(baseURL string) provider.Provider
}{
	{"anthropic", func(u string) provider.Provider {
		return provider.NewAnthropic(provider.AnthropicOptions{ID: "anthropic", BaseURL: u, APIKey: "ant-test"})
	}},
	{"openai", func(u string) provider.Provider {
		return provider.NewOpenAI(provider.OpenAIOptions{ID: "openai", BaseURL: u, APIKey: "sk-test"})
	}},
	{"responses", func(u string) provider.Provider {
		return provider.NewOpenAI(provider.OpenAIOptions{ID: "openai", BaseURL: u, APIKey: "sk-test",
			Responses: func(string) bool { return true }})
	}},
}

// TestRecordedExchanges replays every recorded exchange (testdata/recordings, see its README): what
// tandem sends for the recording's call must be the recorded request, and the recorded answer must
// decode to the parts, usage or error the recording states.
func TestRecordedExchanges(t *testing.T) {
	for _, w := range recordedWires {
		for _, rec := range providertest.LoadRecordings(t, "testdata/recordings/"+w.dir) {
			t.Run(w.dir+"/"+rec.Name, func(t *testing.T) {
				replay := providertest.NewReplay(t, rec)
				p := w.provider(replay.BaseURL)
				if c, ok := p.(interface{ Close() }); ok {
					t.Cleanup(c.Close)
				}
				events, err := collect(t, p, recordedCall(t, rec))

				reqs := replay.Requests()
				if len(reqs) != 1 {
					t.Fatalf("the server saw %d requests, want 1", len(reqs))
				}
				var sent, want any
				if err := json.Unmarshal(reqs[0].Body, &sent); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(rec.Request.Body, &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, sent); diff != "" {
					t.Errorf("request body (-recorded +sent):\n%s", diff)
				}
				var expect recorded
				if err := json.Unmarshal(rec.Want, &expect); err != nil {
					t.Fatal(err)
				}
				for i := range expect.ToolCalls {
					expect.ToolCalls[i].Input = compact(expect.ToolCalls[i].Input)
				}
				if expect.Error == nil && err != nil {
					t.Fatalf("stream failed: %v", err)
				}
				if diff := cmp.Diff(expect, decoded(events, err), cmp.Transformer("json", func(r json.RawMessage) string { return string(r) })); diff != "" {
					t.Errorf("decoded (-recorded +got):\n%s", diff)
				}
			})
		}
	}
}
