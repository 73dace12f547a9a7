package api

import (
	"encoding/json"
	"testing"
)

// TestEventPayloadsKeepTheirWireShape pins the JSON of the catalogue's payloads: the events were
// first sent as maps, whose keys encoding/json sorts, and clients (OpenCode's among them) read
// these exact bytes.
func TestEventPayloadsKeepTheirWireShape(t *testing.T) {
	one := 1
	tests := []struct {
		name    string
		payload any
		want    string
	}{
		{"a first connection says nothing more", ServerConnected{}, `{}`},
		{"a connection after lost events asks for a resync", ServerConnected{Resync: true}, `{"resync":true}`},
		{"a heartbeat is an empty object", Heartbeat{}, `{}`},
		{"a disposed instance names its directory", InstanceDisposed{Directory: "/p"}, `{"directory":"/p"}`},
		{"a session event carries the session before its ID", SessionInfo{Info: Session{ID: "ses_1"}, SessionID: "ses_1"},
			`{"info":{"id":"ses_1","slug":"","projectID":"","directory":"","path":"","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"title":"","version":"","time":{"created":0,"updated":0}},"sessionID":"ses_1"}`},
		{"a status change", SessionStatusChanged{SessionID: "ses_1", Status: SessionStatus{Type: "busy"}}, `{"sessionID":"ses_1","status":{"type":"busy"}}`},
		{"a turn's error", SessionError{SessionID: "ses_1", Error: &MessageError{Name: "UnknownError", Data: map[string]any{"message": "x"}}},
			`{"error":{"name":"UnknownError","data":{"message":"x"}},"sessionID":"ses_1"}`},
		{"an empty diff is a list", SessionDiff{SessionID: "ses_1", Diff: []FileDiff{}}, `{"diff":[],"sessionID":"ses_1"}`},
		{"a delta's keys are sorted", PartDelta{SessionID: "s", MessageID: "m", PartID: "p", Field: "text", Delta: "hi", Offset: 2},
			`{"delta":"hi","field":"text","messageID":"m","offset":2,"partID":"p","sessionID":"s"}`},
		{"a removed part", PartRemoved{SessionID: "s", MessageID: "m", PartID: "p"}, `{"messageID":"m","partID":"p","sessionID":"s"}`},
		{"a part update carries its time", PartUpdated{Part: Part{ID: "p", SessionID: "s", MessageID: "m", Type: "text"}, SessionID: "s", Time: 5},
			`{"part":{"id":"p","sessionID":"s","messageID":"m","type":"text"},"sessionID":"s","time":5}`},
		{"a command's run", CommandExecuted{Name: "init", SessionID: "s", Arguments: "", MessageID: "m"},
			`{"arguments":"","messageID":"m","name":"init","sessionID":"s"}`},
		{"a permission's reply names every field, even empty", PermissionReplied{SessionID: "s", RequestID: "per_1", Reply: PermissionOnce, Decision: "once", Cause: "reply"},
			`{"cause":"reply","client":"","decision":"once","reply":"once","requestID":"per_1","sessionID":"s"}`},
		{"a question's answers", QuestionReplied{SessionID: "s", RequestID: "que_1", Answers: [][]string{{"a"}}, Client: "tui"},
			`{"sessionID":"s","requestID":"que_1","answers":[["a"]],"client":"tui"}`},
		{"a timed-out question", QuestionRejected{SessionID: "s", RequestID: "que_1", Cause: QuestionTimedOut},
			`{"sessionID":"s","requestID":"que_1","cause":"timeout"}`},
		{"an elicitation completed with no waiting request", ElicitationCompleted{Server: "x", ElicitationID: "e"}, `{"elicitationId":"e","server":"x"}`},
		{"an MCP status change carries the status inline", MCPStatusChanged{Server: "x", MCPStatus: MCPStatus{Status: "failed", Error: "boom"}},
			`{"server":"x","status":"failed","error":"boom"}`},
		{"a project's server removed", MCPServerRemoved{Server: "x"}, `{"server":"x"}`},
		{"a terminal's exit", PtyExited{ID: "pty_1", ExitCode: 130}, `{"exitCode":130,"id":"pty_1"}`},
		{"a terminal's info", PtyChanged{Info: PtyInfo{ID: "pty_1", Args: []string{}, Status: PtyStatusExited, ExitCode: &one}},
			`{"info":{"id":"pty_1","title":"","command":"","args":[],"cwd":"","status":"exited","pid":0,"exitCode":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestAnEventDecodesIntoItsPayload reads an event the way a client does.
func TestAnEventDecodesIntoItsPayload(t *testing.T) {
	ev := Event{Type: EventPartDelta, Properties: json.RawMessage(`{"delta":"hi","field":"text","messageID":"m","offset":2,"partID":"p","sessionID":"s"}`)}
	var p PartDelta
	if err := ev.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p != (PartDelta{SessionID: "s", MessageID: "m", PartID: "p", Field: "text", Delta: "hi", Offset: 2}) {
		t.Errorf("decoded %+v", p)
	}
	if err := (Event{Type: EventPartDelta, Properties: json.RawMessage(`[1]`)}).Decode(&p); err == nil {
		t.Error("a payload of the wrong shape decoded without an error")
	}
}
