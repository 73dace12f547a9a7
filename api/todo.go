package api

// Todo is one item of a session's todo list, as OpenCode's Todo schema has it. The schema has no id
// field, so the todo tools never set ID.
type Todo struct {
	ID       string `json:"id,omitempty"`
	Content  string `json:"content"`
	Status   string `json:"status"`   // pending, in_progress, completed, cancelled
	Priority string `json:"priority"` // high, medium, low
}
