package api

// QuestionOption is one choice offered for a question.
type QuestionOption struct {
	Label       string `json:"label" required:"true"`
	Description string `json:"description" required:"true"`
}

// QuestionInfo is one question. Custom is a pointer because OpenCode's default for an omitted
// custom is true: only an explicit false restricts the answers to the option labels.
type QuestionInfo struct {
	Question string           `json:"question" required:"true"`
	Header   string           `json:"header" required:"true"`
	Options  []QuestionOption `json:"options" required:"true" nullable:"false"`
	Multiple bool             `json:"multiple,omitempty"`
	Custom   *bool            `json:"custom,omitempty" nullable:"false"`
}

// AllowsCustom reports whether an answer may be text that is not one of the option labels.
func (q QuestionInfo) AllowsCustom() bool { return q.Custom == nil || *q.Custom }

// QuestionToolRef names the tool call that asked, so clients can show the question inside that
// tool part.
type QuestionToolRef struct {
	MessageID string `json:"messageID" required:"true"`
	CallID    string `json:"callID" required:"true"`
}

// QuestionRequest is one pending question set, as GET /question lists it and question.asked
// carries it.
type QuestionRequest struct {
	ID        string           `json:"id" required:"true" pattern:"^que"`
	SessionID string           `json:"sessionID" required:"true" pattern:"^ses"`
	Questions []QuestionInfo   `json:"questions" required:"true" nullable:"false"`
	Tool      *QuestionToolRef `json:"tool,omitempty"`
	// ParentSessionID and RootSessionID name the sessions a subagent's session descends from, so a
	// person looking at them sees its questions (tandem extension).
	ParentSessionID string `json:"parentSessionID,omitempty"`
	RootSessionID   string `json:"rootSessionID,omitempty"`
}
