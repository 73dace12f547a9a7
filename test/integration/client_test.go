package integration

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/session"
)

// TestTheGoClientDrivesATurnThroughAnApproval uses client/ against the real router: a session, a
// prompt, the approval it raises answered from the event stream, the answer read back.
func TestTheGoClientDrivesATurnThroughAnApproval(t *testing.T) {
	td := startTandem(t, setup{})
	c := client.New(td.base, testUser, testPassword)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	events := c.Events(ctx)
	if ev, err := events.Next(ctx); err != nil || ev.Type != "server.connected" || ev.ID == "" {
		t.Fatalf("first event: %+v %v", ev, err)
	}
	s, err := c.CreateSession(ctx, session.CreateInput{Title: "from the Go client"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PromptAsync(ctx, s.ID, session.PromptInput{Parts: []session.PartInput{{Type: "text", Text: "run: echo via-client"}}}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := events.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "permission.asked" {
			var req permission.Request
			if err := json.Unmarshal(ev.Properties, &req); err != nil || req.SessionID != s.ID {
				t.Fatalf("permission.asked: %s %v", ev.Properties, err)
			}
			listed, err := c.Permissions(ctx)
			if err != nil || len(listed) != 1 || listed[0].ID != req.ID {
				t.Fatalf("GET /permission: %+v %v", listed, err)
			}
			if err := c.ReplyPermission(ctx, req.ID, permission.Once, ""); err != nil {
				t.Fatal(err)
			}
			var late *client.Error
			if err := c.ReplyPermission(ctx, req.ID, permission.Reject, ""); !errors.As(err, &late) || late.Status != 409 {
				t.Fatalf("a second answer: %v, want a 409 *client.Error", err)
			}
		}
		if ev.Type == "session.idle" {
			break
		}
	}
	msgs, err := c.Messages(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tools := toolParts(msgs); len(tools) != 1 || tools[0].State.Output == nil || *tools[0].State.Output != "via-client\n" {
		t.Fatalf("tool parts: %+v", tools)
	}
	if _, err := client.New(td.base, testUser, "wrong").Session(ctx, s.ID); err == nil {
		t.Fatal("a wrong password was accepted")
	}
}
