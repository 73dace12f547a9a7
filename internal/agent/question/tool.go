package question

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Tool returns the agent's question tool, which asks through this Service.
func (s *Service) Tool() tool.Tool { return questionTool{s} }

type questionTool struct{ svc *Service }

func (questionTool) Name() string { return "question" }

func (questionTool) Description() string {
	return "Ask the user one or more questions and wait for the answers. Use it when a choice is " +
		"genuinely the user's to make (preferences, ambiguous requirements, trade-offs) rather than " +
		"guessing. Each question has a full question text, a short header (at most 30 characters) and " +
		"2-4 concrete options with a label (1-5 words) and a description. Set multiple to let the user " +
		"pick several options. The user may also type an answer of their own. The answers come back as " +
		"text; if the user dismisses the questions the turn ends."
}

var questionParameters = json.RawMessage(`{
  "type": "object",
  "properties": {
    "questions": {
      "type": "array",
      "description": "Questions to ask",
      "minItems": 1,
      "items": {
        "type": "object",
        "properties": {
          "question": {"type": "string", "description": "Complete question"},
          "header": {"type": "string", "description": "Very short label (max 30 chars)"},
          "options": {
            "type": "array",
            "description": "Available choices",
            "items": {
              "type": "object",
              "properties": {
                "label": {"type": "string", "description": "Display text (1-5 words, concise)"},
                "description": {"type": "string", "description": "Explanation of choice"}
              },
              "required": ["label", "description"]
            }
          },
          "multiple": {"type": "boolean", "description": "Allow selecting multiple choices"},
          "custom": {"type": "boolean", "description": "Allow typing a custom answer (default: true)"}
        },
        "required": ["question", "header", "options"]
      }
    }
  },
  "required": ["questions"]
}`)

func (questionTool) Parameters() json.RawMessage { return questionParameters }

func (t questionTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in struct {
		Questions []Info `json:"questions"`
	}
	raw := bytes.TrimSpace(call.Input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return tool.Result{}, errs.E(errs.Invalid, "The question tool was called with invalid arguments: %v. Please rewrite the input so it satisfies the expected schema.", err)
	}
	req := Request{QuestionRequest: api.QuestionRequest{SessionID: call.SessionID, Questions: in.Questions,
		ParentSessionID: call.ParentSessionID, RootSessionID: call.RootSessionID}, Directory: call.Dir}
	if call.ID != "" {
		req.Tool = &ToolRef{MessageID: call.MessageID, CallID: call.ID}
	}
	answers, err := t.svc.Ask(ctx, req)
	if err != nil {
		return tool.Result{}, err
	}
	n := len(in.Questions)
	title := fmt.Sprintf("Asked %d question", n)
	if n > 1 {
		title += "s"
	}
	return tool.Result{
		Title:    title,
		Output:   Summary(in.Questions, answers),
		Metadata: map[string]any{"answers": answers},
	}, nil
}
