package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wire is one protocol under test: a scripted server and a real provider client pointed at it.
type wire struct {
	name     string
	server   func(t testing.TB, turns ...providertest.Turn) *providertest.Server
	provider func(t testing.TB, s *providertest.Server, idle time.Duration) provider.Provider
}

var wires = []wire{
	{
		name:   "openai",
		server: providertest.NewOpenAI,
		provider: func(t testing.TB, s *providertest.Server, idle time.Duration) provider.Provider {
			p := provider.NewOpenAI(provider.OpenAIOptions{ID: "openai", BaseURL: s.BaseURL, APIKey: "sk-test",
				Headers: map[string]string{"X-Extra": "yes"}, IdleTimeout: idle})
			t.Cleanup(p.Close)
			return p
		},
	},
	{
		name:   "anthropic",
		server: providertest.NewAnthropic,
		provider: func(t testing.TB, s *providertest.Server, idle time.Duration) provider.Provider {
			p := provider.NewAnthropic(provider.AnthropicOptions{ID: "anthropic", BaseURL: s.BaseURL, APIKey: "ant-test",
				Headers: map[string]string{"X-Extra": "yes"}, IdleTimeout: idle})
			t.Cleanup(p.Close)
			return p
		},
	},
}

// collect runs one call and returns every event.
func collect(t *testing.T, p provider.Provider, req provider.Request) ([]provider.Event, error) {
	t.Helper()
	var events []provider.Event
	err := p.Stream(context.Background(), req, func(e provider.Event) error {
		events = append(events, e)
		return nil
	})
	return events, err
}

var simpleRequest = provider.Request{
	Model:    "m1",
	System:   []string{"You are terse."},
	Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}},
}

func TestStreamsTextToolCallsAndUsage(t *testing.T) {
	tests := []struct {
		name string
		turn providertest.Turn
		want []provider.Event
	}{
		{
			name: "plain text arrives as deltas in order and finishes with stop",
			turn: providertest.Turn{Text: []string{"Hel", "lo, ", "world"}, Usage: providertest.Usage{Input: 12, Output: 3}},
			want: []provider.Event{
				{Kind: provider.TextDelta, Text: "Hel"},
				{Kind: provider.TextDelta, Text: "lo, "},
				{Kind: provider.TextDelta, Text: "world"},
				{Kind: provider.Finished, Reason: "stop", Usage: provider.Usage{Input: 12, Output: 3}},
			},
		},
		{
			name: "several tool calls with fragmented arguments are reassembled",
			turn: providertest.Turn{
				Text: []string{"Let me look."},
				ToolCalls: []providertest.ToolCall{
					{ID: "call_1", Name: "bash", Arguments: `{"command":"ls -la /tmp","description":"List files"}`},
					{ID: "call_2", Name: "read", Arguments: `{"filePath":"README.md"}`},
				},
				Usage: providertest.Usage{Input: 30, Output: 20},
			},
			want: []provider.Event{
				{Kind: provider.TextDelta, Text: "Let me look."},
				{Kind: provider.ToolCallReady, ToolCall: provider.ToolCall{ID: "call_1", Name: "bash", Input: json.RawMessage(`{"command":"ls -la /tmp","description":"List files"}`)}},
				{Kind: provider.ToolCallReady, ToolCall: provider.ToolCall{ID: "call_2", Name: "read", Input: json.RawMessage(`{"filePath":"README.md"}`)}},
				{Kind: provider.Finished, Reason: "tool-calls", Usage: provider.Usage{Input: 30, Output: 20}},
			},
		},
		{
			name: "a tool call without arguments gets an empty object",
			turn: providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_9", Name: "todoread"}}},
			want: []provider.Event{
				{Kind: provider.ToolCallReady, ToolCall: provider.ToolCall{ID: "call_9", Name: "todoread", Input: json.RawMessage(`{}`)}},
				{Kind: provider.Finished, Reason: "tool-calls"},
			},
		},
		{
			name: "reasoning, cache reads and writes are reported apart",
			turn: providertest.Turn{
				Reasoning: []string{"Think", "ing."}, Text: []string{"Done."},
				Usage: providertest.Usage{Input: 100, Output: 7, Reasoning: 40, CacheRead: 900},
			},
			want: []provider.Event{
				{Kind: provider.ReasoningDelta, Text: "Think"},
				{Kind: provider.ReasoningDelta, Text: "ing."},
				{Kind: provider.TextDelta, Text: "Done."},
				{Kind: provider.Finished, Reason: "stop", Usage: provider.Usage{Input: 100, Output: 7, Reasoning: 40, CacheRead: 900}},
			},
		},
		{
			name: "hitting the output limit finishes with length",
			turn: providertest.Turn{Text: []string{"cut"}, Finish: "length"},
			want: []provider.Event{
				{Kind: provider.TextDelta, Text: "cut"},
				{Kind: provider.Finished, Reason: "length"},
			},
		},
	}
	for _, w := range wires {
		for _, tt := range tests {
			t.Run(w.name+": "+tt.name, func(t *testing.T) {
				turn := tt.turn
				if w.name == "anthropic" && turn.Finish == "length" {
					turn.Finish = "max_tokens"
				}
				s := w.server(t, turn)
				got, err := collect(t, w.provider(t, s, 0), simpleRequest)
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				want := tt.want
				if w.name == "anthropic" && len(turn.Reasoning) > 0 {
					// Anthropic signs each thinking block; the signature ends it.
					n := len(turn.Reasoning)
					want = append(append(slices.Clone(want[:n]), provider.Event{Kind: provider.ReasoningDone,
						Reasoning: provider.Reasoning{Signature: providertest.Signature}}), want[n:]...)
				}
				if diff := cmp.Diff(want, got, cmp.Transformer("json", func(r json.RawMessage) string { return string(r) })); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestAnthropicCacheWritesAreCounted(t *testing.T) {
	s := providertest.NewAnthropic(t, providertest.Turn{Text: []string{"ok"}, Usage: providertest.Usage{Input: 5, Output: 1, CacheWrite: 2048, CacheRead: 10}})
	events, err := collect(t, wires[1].provider(t, s, 0), simpleRequest)
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Usage{Input: 5, Output: 1, CacheRead: 10, CacheWrite: 2048}
	if got := events[len(events)-1].Usage; got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
}

func TestOpenAIToolCallQuirksOfOtherServers(t *testing.T) {
	calls := []providertest.ToolCall{
		{ID: "call_a", Name: "read", Arguments: `{"filePath":"a.go"}`},
		{ID: "call_b", Name: "read", Arguments: `{"filePath":"b.go"}`},
	}
	tests := []struct {
		name string
		turn providertest.Turn
	}{
		{"whole calls at index 0 in separate chunks, finishing with stop (Ollama)", providertest.Turn{ToolCalls: calls, WholeToolCalls: true}},
		{"whole calls at index -1", providertest.Turn{ToolCalls: calls, WholeToolCalls: true, WholeToolCallIndex: -1}},
		{"whole calls without IDs", providertest.Turn{ToolCalls: []providertest.ToolCall{{Name: "read", Arguments: `{"filePath":"a.go"}`}, {Name: "read", Arguments: `{"filePath":"b.go"}`}}, WholeToolCalls: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := providertest.NewOpenAI(t, tt.turn)
			events, err := collect(t, wires[0].provider(t, s, 0), simpleRequest)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range events {
				if e.Kind == provider.ToolCallReady {
					got = append(got, e.ToolCall.ID+" "+e.ToolCall.Name+" "+string(e.ToolCall.Input))
				}
			}
			idA, idB := "call_a", "call_b"
			if tt.turn.ToolCalls[0].ID == "" {
				idA, idB = "call_0", "call_1"
			}
			want := []string{idA + ` read {"filePath":"a.go"}`, idB + ` read {"filePath":"b.go"}`}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if last := events[len(events)-1]; last.Kind != provider.Finished || last.Reason != "tool-calls" {
				t.Errorf("last event %+v, want Finished tool-calls", last)
			}
		})
	}
}

func TestErrorsAreClassified(t *testing.T) {
	tests := []struct {
		name       string
		turn       providertest.Turn
		kind       provider.ErrorKind
		status     int
		retryAfter time.Duration
		retryable  bool
		payload    string // name in OpenCode's error union
	}{
		{"401 is an auth error", providertest.Turn{Status: 401}, provider.ErrAuth, 401, 0, false, "ProviderAuthError"},
		{"429 with Retry-After is a rate limit with a delay", providertest.Turn{Status: 429, Header: map[string]string{"Retry-After": "7"}}, provider.ErrRateLimit, 429, 7 * time.Second, true, "APIError"},
		{"500 is a server error", providertest.Turn{Status: 500}, provider.ErrServer, 500, 0, true, "APIError"},
		{"502 with an HTML body is a server error", providertest.Turn{Status: 502, Body: "<html>Bad Gateway</html>"}, provider.ErrServer, 502, 0, true, "APIError"},
		{"400 saying the prompt is too long is a context overflow",
			providertest.Turn{Status: 400, Body: `{"error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`},
			provider.ErrContextOverflow, 400, 0, false, "ContextOverflowError"},
		{"another 400 is a bad request", providertest.Turn{Status: 400}, provider.ErrBadRequest, 400, 0, false, "APIError"},
		{"a response cut off before it finished is a network error", providertest.Turn{Text: []string{"partial"}, Truncate: true}, provider.ErrNetwork, 0, 0, true, "APIError"},
		{"an error event inside the stream is classified by its type", providertest.Turn{Text: []string{"partial"}, StreamError: "overloaded_error"}, provider.ErrServer, 0, 0, true, "APIError"},
	}
	for _, w := range wires {
		for _, tt := range tests {
			t.Run(w.name+": "+tt.name, func(t *testing.T) {
				s := w.server(t, tt.turn)
				_, err := collect(t, w.provider(t, s, 0), simpleRequest)
				var perr *provider.Error
				if !errors.As(err, &perr) {
					t.Fatalf("err = %v (%T), want *provider.Error", err, err)
				}
				if perr.Kind != tt.kind || perr.Status != tt.status || perr.RetryAfter != tt.retryAfter || perr.Retryable() != tt.retryable {
					t.Errorf("got kind %v status %d retryAfter %v retryable %v, want %v %d %v %v (%v)",
						perr.Kind, perr.Status, perr.RetryAfter, perr.Retryable(), tt.kind, tt.status, tt.retryAfter, tt.retryable, err)
				}
				if perr.Provider != w.name || perr.Message == "" {
					t.Errorf("provider %q message %q", perr.Provider, perr.Message)
				}
				if got := perr.Payload()["name"]; got != tt.payload {
					t.Errorf("payload name %v, want %s", got, tt.payload)
				}
				if n := len(s.Requests()); n != 1 {
					t.Errorf("the server saw %d requests; the SDK must not retry on its own", n)
				}
			})
		}
	}
}

func TestConnectionRefusedIsANetworkError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	providers := map[string]provider.Provider{
		"openai":    provider.NewOpenAI(provider.OpenAIOptions{ID: "openai", BaseURL: "http://" + addr + "/v1"}),
		"anthropic": provider.NewAnthropic(provider.AnthropicOptions{ID: "anthropic", BaseURL: "http://" + addr, APIKey: "k"}),
	}
	for name, p := range providers {
		t.Run(name, func(t *testing.T) {
			_, err := collect(t, p, simpleRequest)
			var perr *provider.Error
			if !errors.As(err, &perr) || perr.Kind != provider.ErrNetwork || !perr.Retryable() {
				t.Fatalf("err = %v, want a retryable ErrNetwork", err)
			}
		})
	}
}

func TestAHungProviderTimesOut(t *testing.T) {
	const idle = 150 * time.Millisecond
	tests := []struct {
		name     string
		turn     providertest.Turn
		wantText string
	}{
		{"silent after the headers", providertest.Turn{Hang: true}, ""},
		{"silent in the middle of an answer", providertest.Turn{Text: []string{"Starting"}, Hang: true}, "Starting"},
	}
	for _, w := range wires {
		for _, tt := range tests {
			t.Run(w.name+": "+tt.name, func(t *testing.T) {
				s := w.server(t, tt.turn)
				events, err := collect(t, w.provider(t, s, idle), simpleRequest)
				var perr *provider.Error
				if !errors.As(err, &perr) || perr.Kind != provider.ErrTimeout || !perr.Retryable() {
					t.Fatalf("err = %v, want a retryable ErrTimeout", err)
				}
				var text string
				for _, e := range events {
					if e.Kind == provider.Finished {
						t.Errorf("a timed-out stream must not finish")
					}
					text += e.Text
				}
				if text != tt.wantText {
					t.Errorf("text before the timeout = %q, want %q", text, tt.wantText)
				}
			})
		}
	}
}

func TestCancellingTheContextStopsTheStream(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			s := w.server(t, providertest.Turn{Text: []string{"first"}, Hang: true})
			// The idle timeout is far away: only the cancellation can end this call.
			p := w.provider(t, s, 10*time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := p.Stream(ctx, simpleRequest, func(e provider.Event) error {
				if e.Kind == provider.TextDelta {
					cancel()
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
	}
}

func TestAnErrorFromEmitStopsTheStream(t *testing.T) {
	stop := errors.New("the loop gave up")
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			s := w.server(t, providertest.Turn{Text: []string{"one", "two", "three"}})
			calls := 0
			err := w.provider(t, s, 0).Stream(context.Background(), simpleRequest, func(provider.Event) error {
				calls++
				return stop
			})
			if !errors.Is(err, stop) || calls != 1 {
				t.Fatalf("err = %v after %d events, want the emit error after 1", err, calls)
			}
		})
	}
}

func TestAnAnswerThatIsNotAStreamSaysSo(t *testing.T) {
	tests := []struct {
		name, body string
		kind       provider.ErrorKind
		message    string
	}{
		{"a whole completion instead of a stream", `{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`,
			provider.ErrOther, "instead of a stream of events"},
		{"an error document on a 200", `{"error":{"type":"invalid_request_error","message":"stream is not supported by this deployment"}}`,
			provider.ErrOther, "stream is not supported by this deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = io.WriteString(w, tt.body)
			}))
			defer s.Close()
			openai := provider.NewOpenAI(provider.OpenAIOptions{ID: "openai", BaseURL: s.URL})
			defer openai.Close()
			anthropic := provider.NewAnthropic(provider.AnthropicOptions{ID: "anthropic", BaseURL: s.URL, APIKey: "k"})
			defer anthropic.Close()
			for name, p := range map[string]provider.Provider{"openai": openai, "anthropic": anthropic} {
				_, err := collect(t, p, simpleRequest)
				var perr *provider.Error
				if !errors.As(err, &perr) || perr.Kind != tt.kind || !strings.Contains(perr.Message, tt.message) {
					t.Errorf("%s: err = %v, want kind %v saying %q", name, err, tt.kind, tt.message)
				}
			}
		})
	}
}
