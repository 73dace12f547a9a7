package session

import (
	"context"
	"encoding/json"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// todoLists owns each session's todo list (the todowrite and todoread tools' state), stored with the
// session's row.
type todoLists struct {
	rows sessionRows
}

// Todos returns a session's todo list (the todoread tool and GET /session/{id}/todo).
func (t todoLists) Todos(ctx context.Context, sessionID string) ([]tool.Todo, error) {
	if _, err := t.rows.Get(ctx, sessionID); err != nil {
		return nil, err
	}
	data, err := t.rows.db.Todos(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	todos := []tool.Todo{}
	if data != nil {
		if err := json.Unmarshal(data, &todos); err != nil {
			return nil, err
		}
	}
	return todos, nil
}

// SetTodos replaces a session's todo list and announces it with todo.updated.
func (t todoLists) SetTodos(ctx context.Context, sessionID string, todos []tool.Todo) error {
	sess, err := t.rows.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	if todos == nil {
		todos = []tool.Todo{}
	}
	data, err := json.Marshal(todos)
	if err != nil {
		return err
	}
	if err := t.rows.db.PutTodos(ctx, sessionID, data); err != nil {
		return err
	}
	t.rows.publish(sess.Directory, api.EventTodoUpdated, api.TodoUpdated{SessionID: sessionID, Todos: todos})
	return nil
}
