package appserver

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"path/filepath"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/id"
)

type userInput struct {
	Type string `json:"type"`
	Text string `json:"text"`
	URL  string `json:"url"`
	Path string `json:"path"`
	Name string `json:"name"`
}

type turnStartParams struct {
	ThreadID       string      `json:"threadId"`
	Input          []userInput `json:"input"`
	Model          *string     `json:"model"`
	Effort         *string     `json:"effort"`
	ExpectedTurnID string      `json:"expectedTurnId"`
}

// promptParts turns Codex's user input into a tandem prompt: text as text, images and mentioned
// files as file parts.
func promptParts(in []userInput) ([]session.PartInput, []string, error) {
	var parts []session.PartInput
	var texts []string
	for _, u := range in {
		switch u.Type {
		case "text":
			parts = append(parts, session.PartInput{Type: "text", Text: u.Text})
			texts = append(texts, u.Text)
		case "image":
			parts = append(parts, session.PartInput{Type: "file", URL: u.URL, Mime: "image/png", Filename: "image"})
		case "localImage", "mention":
			if !filepath.IsAbs(u.Path) {
				return nil, nil, invalidParams("input: %s needs an absolute path", u.Type)
			}
			m := mime.TypeByExtension(filepath.Ext(u.Path))
			if m == "" {
				m = "text/plain"
			}
			parts = append(parts, session.PartInput{Type: "file", URL: (&url.URL{Scheme: "file", Path: u.Path}).String(), Mime: m, Filename: filepath.Base(u.Path)})
			texts = append(texts, "@"+filepath.Base(u.Path))
		default:
			return nil, nil, invalidParams("input: tandem does not take %q input", u.Type)
		}
	}
	if len(parts) == 0 {
		return nil, nil, invalidParams("input: empty")
	}
	return parts, texts, nil
}

// loaded is a thread of this connection.
func (s *server) loaded(threadID string) (*thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.threads[threadID]
	if !ok {
		return nil, invalidRequest("thread not found: %s (thread/start or thread/resume it first)", threadID)
	}
	return t, nil
}

// turnStart sends a prompt: the turn's ID is the prompt's message ID, so the turns thread/read
// lists later are the same.
func (s *server) turnStart(ctx context.Context, raw json.RawMessage) (any, error) {
	var p turnStartParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("turn/start: %v", err)
	}
	t, err := s.loaded(p.ThreadID)
	if err != nil {
		return nil, err
	}
	parts, texts, err := promptParts(p.Input)
	if err != nil {
		return nil, err
	}
	if p.Model != nil && *p.Model != "" {
		m, err := s.modelRef(ctx, *p.Model)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.model = m // it sticks for the next turns, as in Codex
		t.mu.Unlock()
	}
	t.mu.Lock()
	model := t.model
	t.mu.Unlock()
	// An effort is the model's variant of that name; the context window sizes the TUI's gauge.
	variant, window := "", any(nil)
	if card, ok := s.card(ctx, model); ok {
		if _, has := card.Variants[deref(p.Effort)]; has {
			variant = *p.Effort
		}
		if card.Limit.Context > 0 {
			window = card.Limit.Context
		}
	}
	msgID := s.ids.New(id.Message)
	t.mu.Lock()
	if t.cur != nil {
		t.mu.Unlock()
		return nil, invalidRequest("a turn is already running in thread %s: turn/steer adds to it, turn/interrupt stops it", t.id)
	}
	t.cur = &turnState{id: msgID, started: time.Now()} // claimed: events of this prompt belong to it
	t.window = window
	in := session.PromptInput{MessageID: msgID, Model: t.model, Variant: variant, Parts: parts}
	t.mu.Unlock()
	s.then = func(ctx context.Context) {
		t.mu.Lock()
		t.cur = nil
		t.beginLocked(ctx, msgID, texts)
		t.mu.Unlock()
		if err := t.c.PromptAsync(ctx, t.id, in); err != nil {
			t.mu.Lock()
			if t.cur != nil && t.cur.id == msgID {
				t.cur.err = map[string]any{"message": fmt.Sprintf("tandem refused the prompt: %v", err), "codexErrorInfo": nil, "additionalDetails": nil}
				t.finishLocked(ctx)
			}
			t.mu.Unlock()
		}
	}
	return map[string]any{"turn": map[string]any{"id": msgID, "items": []any{}, "itemsView": "notLoaded", "status": "inProgress",
		"error": nil, "startedAt": nil, "completedAt": nil, "durationMs": nil}}, nil
}

// turnSteer adds input while a turn runs. tandem cannot change a running turn: the input is
// queued as the next prompt, which runs as soon as this turn ends (its own turn then follows).
func (s *server) turnSteer(ctx context.Context, raw json.RawMessage) (any, error) {
	var p turnStartParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("turn/steer: %v", err)
	}
	t, err := s.loaded(p.ThreadID)
	if err != nil {
		return nil, err
	}
	parts, _, err := promptParts(p.Input)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	cur := t.turnID()
	model := t.model
	t.mu.Unlock()
	if cur == "" || (p.ExpectedTurnID != "" && p.ExpectedTurnID != cur) {
		return nil, invalidRequest("no running turn %s to steer in thread %s", p.ExpectedTurnID, t.id)
	}
	if err := t.c.PromptAsync(ctx, t.id, session.PromptInput{Model: model, Parts: parts}); err != nil {
		return nil, err
	}
	return map[string]any{"turnId": cur}, nil
}

type interruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

// turnInterrupt aborts the running turn; its pending requests are withdrawn (resolved) before
// turn/completed says "interrupted".
func (s *server) turnInterrupt(ctx context.Context, raw json.RawMessage) (any, error) {
	var p interruptParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("turn/interrupt: %v", err)
	}
	t, err := s.loaded(p.ThreadID)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	cur := t.turnID()
	t.mu.Unlock()
	if cur == "" || (p.TurnID != "" && p.TurnID != cur) {
		return nil, invalidRequest("no running turn %s in thread %s", p.TurnID, t.id)
	}
	if err := t.interrupt(ctx); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// interrupt marks the running turn interrupted and aborts the session's turn.
func (t *thread) interrupt(ctx context.Context) error {
	t.mu.Lock()
	if t.cur != nil {
		t.cur.interrupted = true
	}
	t.mu.Unlock()
	return t.c.Abort(ctx, t.id)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
