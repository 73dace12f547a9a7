//go:build linux

package integration

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider/providertest"
)

// TestAgentCommandsDoNotInheritTheServersDescriptors starts the real binary with a pipe left open
// as its descriptor 3, as a supervisor or a shell's `exec 3>…` leaves one, and has the agent run
// `echo leaked >&3`, which the judge rightly reads as writing no file: the command must find no
// descriptor 3, and the pipe must receive nothing.
func TestAgentCommandsDoNotInheritTheServersDescriptors(t *testing.T) {
	bin, err := sharedBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	llm := providertest.NewOpenAI(t)
	llm.Add(
		providertest.Turn{ToolCalls: []providertest.ToolCall{{ID: "call_fd", Name: "bash",
			Arguments: `{"command":"echo leaked >&3; echo exit=$?","description":"write to descriptor 3"}`}}},
		providertest.Turn{Text: []string{"Done."}},
	)
	srv := startBinaryServer(t, bin, binaryOptions{env: openAIEnv(llm), extraFiles: []*os.File{w},
		userConfig: `{"permission": {"bash": "allow"}}`})
	w.Close() // the server holds the only write end now
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()

	var sess struct{ ID string }
	srv.do(t, http.MethodPost, "/session", `{"title":"descriptors"}`, &sess)
	srv.do(t, http.MethodPost, "/session/"+sess.ID+"/message", promptBody("Write to descriptor 3."), nil)
	var msgs []session.WithParts
	srv.do(t, http.MethodGet, "/session/"+sess.ID+"/message", "", &msgs)
	tools := toolParts(msgs)
	if len(tools) != 1 || tools[0].State.Status != "completed" || tools[0].State.Output == nil {
		t.Fatalf("tool parts %+v, want the one bash call completed", tools)
	}
	out := *tools[0].State.Output
	if !strings.Contains(out, "exit=1") || !strings.Contains(strings.ToLower(out), "bad file descriptor") {
		t.Errorf("the command's output is %q; want the shell to find no descriptor 3 (exit=1, bad file descriptor)", out)
	}

	// The server's end closes when it exits; whatever reached the pipe is read by then.
	srv.stop()
	select {
	case b := <-got:
		if b != "" {
			t.Fatalf("the server's descriptor 3 received %q from the agent's command", b)
		}
	case <-time.After(waitLimit):
		t.Fatal("the pipe stayed open after the server exited")
	}
}
