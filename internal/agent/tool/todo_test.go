package tool

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
)

// memoryTodos is a complete in-memory TodoStore.
type memoryTodos struct {
	mu    sync.Mutex
	lists map[string][]Todo
}

func (m *memoryTodos) Todos(_ context.Context, sessionID string) ([]Todo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.lists[sessionID]), nil
}

func (m *memoryTodos) SetTodos(_ context.Context, sessionID string, todos []Todo) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lists == nil {
		m.lists = map[string][]Todo{}
	}
	m.lists[sessionID] = slices.Clone(todos)
	return nil
}

func TestTodoWriteThenRead(t *testing.T) {
	store := &memoryTodos{}
	todos := []map[string]any{
		{"content": "Write the parser", "status": "completed", "priority": "high"},
		{"content": "Test the parser", "status": "in_progress", "priority": "high", "id": "ignored"},
		{"content": "Document it", "status": "pending", "priority": "low"},
	}
	call, gate := newCall(t, projectDir(t), map[string]any{"todos": todos})
	call.Todos = store
	res := mustRun(t, TodoWrite{}, call)
	want := []Todo{
		{Content: "Write the parser", Status: "completed", Priority: "high"},
		{Content: "Test the parser", Status: "in_progress", Priority: "high"},
		{Content: "Document it", Status: "pending", Priority: "low"},
	}
	if got, _ := store.Todos(context.Background(), "ses_test"); !slices.Equal(got, want) {
		t.Fatalf("stored %+v", got)
	}
	if res.Title != "2 todos" {
		t.Fatalf("title = %q", res.Title)
	}
	var shown []Todo
	if err := json.Unmarshal([]byte(res.Output), &shown); err != nil || !slices.Equal(shown, want) {
		t.Fatalf("output = %s (%v)", res.Output, err)
	}
	if strings.Contains(res.Output, `"id"`) {
		t.Fatalf("output carries an id, which OpenCode's Todo schema does not have: %s", res.Output)
	}
	gate.askFor(t, "todowrite")

	call, gate = newCall(t, projectDir(t), "")
	call.Todos = store
	res = mustRun(t, TodoRead{}, call)
	if err := json.Unmarshal([]byte(res.Output), &shown); err != nil || !slices.Equal(shown, want) {
		t.Fatalf("todoread output = %s (%v)", res.Output, err)
	}
	gate.askFor(t, "todoread")
}

func TestTodoWriteErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		store TodoStore
		want  string
	}{
		{"a bad status and priority are named", `{"todos":[{"content":"x","status":"done","priority":"urgent"}]}`, &memoryTodos{}, `todos[0].status is "done", want one of pending, in_progress, completed, cancelled; todos[0].priority is "urgent"`},
		{"empty content is refused", `{"todos":[{"content":" ","status":"pending","priority":"low"}]}`, &memoryTodos{}, "todos[0].content is empty"},
		{"a missing list is refused", `{}`, &memoryTodos{}, "needs todos"},
		{"a session without a store says so", `{"todos":[]}`, nil, "no todo list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, _ := newCall(t, projectDir(t), tt.input)
			call.Todos = tt.store
			_, err := TodoWrite{}.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if m, ok := tt.store.(*memoryTodos); ok && len(m.lists) != 0 {
				t.Fatalf("a refused list was stored: %+v", m.lists)
			}
		})
	}
	t.Run("an empty list clears the todos", func(t *testing.T) {
		store := &memoryTodos{lists: map[string][]Todo{"ses_test": {{Content: "x", Status: "pending", Priority: "low"}}}}
		call, _ := newCall(t, projectDir(t), `{"todos":[]}`)
		call.Todos = store
		res := mustRun(t, TodoWrite{}, call)
		if got, _ := store.Todos(context.Background(), "ses_test"); len(got) != 0 || res.Output != "[]" || res.Title != "0 todos" {
			t.Fatalf("stored %+v, output %q, title %q", got, res.Output, res.Title)
		}
	})
}
