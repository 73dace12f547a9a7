package session

import (
	"bytes"
	"encoding/json"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/config"
)

// The session's documents are the wire types of package api; the session names them as it always
// has.
type (
	Session        = api.Session
	Summary        = api.SessionSummary
	Share          = api.SessionShare
	SessionModel   = api.SessionModel
	SessionTime    = api.SessionTime
	Revert         = api.SessionRevert
	Tokens         = api.Tokens
	TokensCache    = api.TokensCache
	FileDiff       = api.FileDiff
	Role           = api.Role
	Message        = api.Message
	MessageTime    = api.MessageTime
	MessageModel   = api.MessageModel
	MessageSummary = api.MessageSummary
	MessagePath    = api.MessagePath
	MessageError   = api.MessageError
	Part           = api.Part
	PartTime       = api.PartTime
	ToolState      = api.ToolState
	WithParts      = api.MessageWithParts
	Status         = api.SessionStatus
)

// The two message roles.
const (
	RoleUser      = api.RoleUser
	RoleAssistant = api.RoleAssistant
)

// legacySummary is a summary as tandem stored it before it sent patches: each file with its text
// before and after the change instead of a patch.
type legacySummary struct {
	Summary *struct {
		Diffs []struct {
			Before *string `json:"before"`
			After  *string `json:"after"`
		} `json:"diffs"`
	} `json:"summary"`
}

// fillLegacyPatches makes the patches of diffs, the summary decoded from the stored document data,
// that were stored in the {before, after} shape.
func fillLegacyPatches(data []byte, diffs []FileDiff) {
	if len(diffs) == 0 || !bytes.Contains(data, []byte(`"before"`)) {
		return
	}
	var old legacySummary
	if json.Unmarshal(data, &old) != nil || old.Summary == nil || len(old.Summary.Diffs) != len(diffs) {
		return
	}
	for i, o := range old.Summary.Diffs {
		if diffs[i].Patch == "" && (o.Before != nil || o.After != nil) {
			d := diffs[i]
			diffs[i] = fileChange{File: d.File, Before: deref(o.Before), After: deref(o.After), Status: d.Status}.diff("")
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ParseModel reads a "provider/model" choice for a prompt; "" chooses nothing (the session's model).
func ParseModel(s string) (*MessageModel, error) {
	if s == "" {
		return nil, nil
	}
	prov, model, ok := config.SplitModel(s)
	if !ok {
		return nil, errs.E(errs.Invalid, "expected provider/model, got %q", s)
	}
	return &MessageModel{ProviderID: prov, ModelID: model}, nil
}

// summarizes reports that m is a finished compaction summary: from it on, the conversation before
// it is sent as this summary.
func summarizes(m Message) bool {
	return m.Role == RoleAssistant && m.Summary != nil && m.Summary.Compacted && m.Error == nil && m.Time.Completed != 0
}
