package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

var (
	todoStatuses   = []string{"pending", "in_progress", "completed", "cancelled"}
	todoPriorities = []string{"high", "medium", "low"}
)

const todoSchema = `{
  "type": "object",
  "properties": {
    "content": {"type": "string", "description": "Brief description of the task"},
    "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"], "description": "Current status of the task"},
    "priority": {"type": "string", "enum": ["high", "medium", "low"], "description": "Priority level of the task"}
  },
  "required": ["content", "status", "priority"],
  "additionalProperties": false
}`

// TodoWrite replaces the session's todo list.
type TodoWrite struct{}

type todoWriteInput struct {
	Todos *[]Todo `json:"todos"`
}

func (TodoWrite) Name() string { return "todowrite" }

func (TodoWrite) Description() string {
	return `Replaces the session's todo list, which the person watches to follow your progress.

- Use it for work with three or more steps; skip it for a single trivial task.
- Send the whole list each time. Keep exactly one task in_progress while you work, and mark each task completed as soon as it is done.
- status: pending, in_progress, completed or cancelled. priority: high, medium or low.`
}

func (TodoWrite) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "todos": {"type": "array", "items": ` + todoSchema + `, "description": "The updated todo list"}
  },
  "required": ["todos"],
  "additionalProperties": false
}`)
}

func (TodoWrite) Run(ctx context.Context, call *Call) (Result, error) {
	var in todoWriteInput
	if err := decodeInput("todowrite", call.Input, &in); err != nil {
		return Result{}, err
	}
	if in.Todos == nil {
		return Result{}, invalid("The todowrite tool needs todos (an empty array clears the list).")
	}
	todos := *in.Todos
	var problems []string
	for i := range todos {
		todo := &todos[i]
		todo.ID = ""
		if strings.TrimSpace(todo.Content) == "" {
			problems = append(problems, fmt.Sprintf("todos[%d].content is empty", i))
		}
		if !slices.Contains(todoStatuses, todo.Status) {
			problems = append(problems, fmt.Sprintf("todos[%d].status is %q, want one of %s", i, todo.Status, strings.Join(todoStatuses, ", ")))
		}
		if !slices.Contains(todoPriorities, todo.Priority) {
			problems = append(problems, fmt.Sprintf("todos[%d].priority is %q, want one of %s", i, todo.Priority, strings.Join(todoPriorities, ", ")))
		}
	}
	if len(problems) > 0 {
		return Result{}, invalid("The todo list was not saved: %s.", strings.Join(problems, "; "))
	}
	if call.Todos == nil {
		//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
		return Result{}, fmt.Errorf("This session has no todo list.")
	}
	if err := call.Gate.Check(ctx, Ask{Permission: "todowrite", Patterns: []string{"*"}, Always: []string{"*"}, Metadata: map[string]any{}}); err != nil {
		return Result{}, err
	}
	if err := call.Todos.SetTodos(ctx, call.SessionID, todos); err != nil {
		return Result{}, err
	}
	return todoResult(todos)
}

// TodoRead shows the session's todo list.
type TodoRead struct{}

func (TodoRead) Name() string { return "todoread" }

func (TodoRead) Description() string {
	return "Reads the session's current todo list, to check what is left to do."
}

func (TodoRead) Parameters() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {}, "additionalProperties": false}`)
}

func (TodoRead) Run(ctx context.Context, call *Call) (Result, error) {
	if call.Todos == nil {
		//lint:ignore ST1005 the model reads this sentence as the tool's output, worded as OpenCode words it
		return Result{}, fmt.Errorf("This session has no todo list.")
	}
	if err := call.Gate.Check(ctx, Ask{Permission: "todoread", Patterns: []string{"*"}, Always: []string{"*"}, Metadata: map[string]any{}}); err != nil {
		return Result{}, err
	}
	todos, err := call.Todos.Todos(ctx, call.SessionID)
	if err != nil {
		return Result{}, err
	}
	return todoResult(todos)
}

// todoResult shows the list to the model as JSON and titles it with how many tasks remain open.
func todoResult(todos []Todo) (Result, error) {
	if todos == nil {
		todos = []Todo{}
	}
	text, err := json.MarshalIndent(todos, "", "  ")
	if err != nil {
		return Result{}, err
	}
	open := 0
	for _, t := range todos {
		if t.Status != "completed" && t.Status != "cancelled" {
			open++
		}
	}
	return Result{
		Title:    fmt.Sprintf("%d todos", open),
		Output:   string(text),
		Metadata: map[string]any{"todos": todos},
	}, nil
}
