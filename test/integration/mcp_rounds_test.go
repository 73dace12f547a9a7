package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tandem-dev/tandem/internal/door/mcpserver"
)

// A 2026-07-28 client driving the rounds by hand (the go-sdk's automatic retry turned off), so the
// test can act between them as another client or as time passing.
func manualRoundsClient(t *testing.T, td *tandem, timeout time.Duration) *mcp.ClientSession {
	t.Helper()
	return connectMCP(t, td, mcpserver.Deny, timeout, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declares elicitation; never called, since the server may not send requests on 2026-07-28.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("a 2026-07-28 client was sent a server-initiated elicitation")
			return nil, context.Canceled
		},
	}, "2026-07-28")
}

func callRound(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return res
}

// onlyInput returns the one input request of an input-required result, and its ID.
func onlyInput(t *testing.T, res *mcp.CallToolResult) (string, *mcp.ElicitParams) {
	t.Helper()
	if !res.NeedsInput() || len(res.InputRequests) != 1 {
		t.Fatalf("want one input request, got needsInput=%v %v (content %v)", res.NeedsInput(), res.InputRequests, res.StructuredContent)
	}
	for id, in := range res.InputRequests {
		return id, in.(*mcp.ElicitParams)
	}
	return "", nil
}

func TestMCPMultiRoundTripApprovals(t *testing.T) {
	t.Run("the approval comes back as an input request with the pending request's ID, and the answer runs the command", func(t *testing.T) {
		td := startTandem(t, setup{})
		cs := manualRoundsClient(t, td, time.Minute)
		params := &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: echo in-rounds"}}
		first := callRound(t, cs, params)
		id, form := onlyInput(t, first)
		if listed := td.pending(t, ""); len(listed) != 1 || listed[0].ID != id {
			t.Fatalf("GET /permission lists %+v, want the input request %s", listed, id)
		}
		if !strings.Contains(form.Message, "echo in-rounds") || !strings.Contains(form.Message, td.project) {
			t.Fatalf("form message %q", form.Message)
		}
		params.RequestState = first.RequestState
		params.InputResponses = mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}}
		done := callRound(t, cs, params)
		out, _ := done.StructuredContent.(map[string]any)
		if done.NeedsInput() || out["status"] != "completed" {
			t.Fatalf("after the answer: %+v", done)
		}
		if status, detail := lastTool(t, td, out["sessionId"].(string)); status != "completed" || detail != "in-rounds\n" {
			t.Fatalf("tool %s %q", status, detail)
		}
	})

	t.Run("an answer given over REST while the client is away wins over the client's late one", func(t *testing.T) {
		td := startTandem(t, setup{})
		cs := manualRoundsClient(t, td, time.Minute)
		params := &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: echo rest-while-away"}}
		res := callRound(t, cs, params)
		id, _ := onlyInput(t, res)
		td.reply(t, id, "once", "")
		params.RequestState = res.RequestState
		params.InputResponses = mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "reject"}}}
		done := callRound(t, cs, params)
		out, _ := done.StructuredContent.(map[string]any)
		if status, detail := lastTool(t, td, out["sessionId"].(string)); status != "completed" || detail != "rest-while-away\n" {
			t.Fatalf("tool %s %q: the first answer (REST, once) must stand", status, detail)
		}
	})

	t.Run("a client that never comes back has its request rejected after the timeout", func(t *testing.T) {
		td := startTandem(t, setup{})
		cs := manualRoundsClient(t, td, 300*time.Millisecond)
		params := &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: echo abandoned"}}
		onlyInput(t, callRound(t, cs, params))
		var sid string
		deadline := time.Now().Add(waitLimit)
		for {
			sessions := td.statuses(t)
			if len(td.pending(t, "")) == 0 && len(sessions) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the abandoned request still waits: %+v", td.pending(t, ""))
			}
			time.Sleep(20 * time.Millisecond)
		}
		var list []struct {
			ID string `json:"id"`
		}
		td.call(t, "GET", "/session", "", 200, &list)
		sid = list[0].ID
		if status, detail := lastTool(t, td, sid); status != "error" || !strings.Contains(detail, "no answer within") {
			t.Fatalf("tool %s %q", status, detail)
		}
	})

	t.Run("a requestState that was altered is refused with a clear error", func(t *testing.T) {
		td := startTandem(t, setup{})
		cs := manualRoundsClient(t, td, time.Minute)
		params := &mcp.CallToolParams{Name: "tandem", Arguments: map[string]any{"prompt": "run: echo forged"}}
		res := callRound(t, cs, params)
		id, _ := onlyInput(t, res)
		params.RequestState = strings.Replace(res.RequestState, ".", "x.", 1)
		params.InputResponses = mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}}
		forged := callRound(t, cs, params)
		if !forged.IsError || !strings.Contains(forged.Content[0].(*mcp.TextContent).Text, "requestState") {
			t.Fatalf("forged state: %+v", forged)
		}
		if listed := td.pending(t, ""); len(listed) != 1 || listed[0].ID != id {
			t.Fatalf("the forged answer touched the request: %+v", listed)
		}
	})
}
