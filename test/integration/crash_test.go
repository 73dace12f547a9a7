//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func (s *liveServer) get(path string, out any) {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(s.t.Context(), http.MethodGet, s.url+path, nil)
	req.SetBasicAuth("tandem", s.pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		s.t.Fatal(err)
	}
}

// sseEvent is one /event frame's payload.
type sseEvent struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// events connects an SSE client to /event and delivers its frames until the test ends.
func (s *liveServer) events() <-chan sseEvent {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(s.t.Context(), http.MethodGet, s.url+"/event", nil)
	req.SetBasicAuth("tandem", s.pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	out := make(chan sseEvent, 1024)
	connected := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		first := true
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev sseEvent
			if json.Unmarshal([]byte(data), &ev) != nil {
				continue
			}
			if first {
				close(connected)
				first = false
			}
			select {
			case out <- ev:
			default: // the test stopped reading
			}
		}
	}()
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		s.t.Fatal("no server.connected within 10s")
	}
	return out
}

type pendingPermission struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Metadata  struct {
		Command string `json:"command"`
	} `json:"metadata"`
}

func TestAnApprovalPendingAtACrashResumesItsTurnAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := builtBinary(t)
	data, project := t.TempDir(), t.TempDir()
	srv := startBinary(t, bin, data, project)
	var sess struct {
		ID string `json:"id"`
	}
	srv.post("/session", map[string]any{}, &sess)
	srv.post("/session/"+sess.ID+"/prompt_async", map[string]any{"parts": []map[string]string{{"type": "text", "text": "run: echo resumed-ok"}}}, nil)
	var asked []pendingPermission
	for deadline := time.Now().Add(20 * time.Second); len(asked) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no permission request within 20s")
		}
		srv.get("/permission", &asked)
		time.Sleep(20 * time.Millisecond)
	}
	sleeps := srv.runSleeps() // another session runs sleep 30 (and a setsid sleep) at the moment of the crash
	t.Cleanup(func() { killAll(sleeps) })

	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, "after SIGKILL", sleeps)
	restarted := startBinary(t, bin, data, project)

	var listed []pendingPermission
	restarted.get("/permission", &listed)
	if len(listed) != 1 || listed[0].ID != asked[0].ID || listed[0].SessionID != sess.ID || listed[0].Metadata.Command != "echo resumed-ok" {
		t.Fatalf("after the restart GET /permission lists %+v, want the request %s of %s", listed, asked[0].ID, sess.ID)
	}
	var status map[string]struct {
		Type string `json:"type"`
	}
	restarted.get("/session/status", &status)
	if status[sess.ID].Type != "busy" {
		t.Fatalf("the resumed session's status is %+v, want busy", status)
	}
	stream := restarted.events()
	// A client attached before the crash reconnects without a cursor the new process knows: it is
	// told to reload its state (OpenCode's clients do on server.instance.disposed).
	for _, want := range []string{"server.connected", "server.instance.disposed"} {
		select {
		case ev := <-stream:
			if ev.Type != want {
				t.Fatalf("the restarted server's stream sent %s, want %s", ev.Type, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10s", want)
		}
	}
	var ok bool
	restarted.post("/permission/"+asked[0].ID+"/reply", map[string]string{"reply": "once"}, &ok)

	sawReplied, sawCompleted := false, false
	for idle := false; !idle; {
		select {
		case ev := <-stream:
			var p struct {
				SessionID string `json:"sessionID"`
				RequestID string `json:"requestID"`
				Part      struct {
					Type  string `json:"type"`
					State struct {
						Status string `json:"status"`
						Output string `json:"output"`
					} `json:"state"`
				} `json:"part"`
			}
			_ = json.Unmarshal(ev.Properties, &p)
			switch {
			case ev.Type == "permission.replied" && p.RequestID == asked[0].ID:
				sawReplied = true
			case ev.Type == "message.part.updated" && p.Part.Type == "tool" && p.Part.State.Status == "completed":
				sawCompleted = strings.Contains(p.Part.State.Output, "resumed-ok")
			case ev.Type == "session.idle" && p.SessionID == sess.ID:
				idle = true
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the resumed turn did not end within 20s")
		}
	}
	if !sawReplied || !sawCompleted {
		t.Fatalf("the SSE client saw permission.replied %v, the tool completed %v", sawReplied, sawCompleted)
	}
	var msgs []struct {
		Info struct {
			Role  string `json:"role"`
			Error any    `json:"error"`
		} `json:"info"`
		Parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"parts"`
	}
	restarted.get("/session/"+sess.ID+"/message", &msgs)
	last := msgs[len(msgs)-1]
	var answer string
	for _, p := range last.Parts {
		if p.Type == "text" {
			answer += p.Text
		}
	}
	if last.Info.Role != "assistant" || last.Info.Error != nil || !strings.Contains(answer, "resumed-ok") {
		t.Fatalf("the turn ended with %+v, want the model's answer reporting the output", last)
	}
	restarted.get("/permission", &listed)
	if len(listed) != 0 {
		t.Fatalf("still pending after the answer: %+v", listed)
	}
}
