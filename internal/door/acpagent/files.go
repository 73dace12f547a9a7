package acpagent

import (
	"context"
	"fmt"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tandem-dev/tandem/internal/agent/shelljudge"
	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// editorFiles reads and writes a session's text files through the editor (fs/read_text_file,
// fs/write_text_file), so the agent sees unsaved buffers and its changes land in them, and runs
// bash's commands in the editor's terminals. Each is used only when the client declared it;
// otherwise tandem's tools use the disk and run the commands themselves.
type editorFiles struct {
	a            *Agent
	sessionID    string
	read, writes bool
	terminal     bool
}

var _ tool.Files = (*editorFiles)(nil)

func (f *editorFiles) ReadText(ctx context.Context, path string) (string, bool, error) {
	if !f.read {
		return "", false, nil
	}
	res, err := f.a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: acp.SessionId(f.sessionID), Path: path})
	if err != nil {
		return "", false, err
	}
	return res.Content, true, nil
}

func (f *editorFiles) WriteText(ctx context.Context, path, content string) (bool, error) {
	if !f.writes {
		return false, nil
	}
	if _, err := f.a.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: acp.SessionId(f.sessionID), Path: path, Content: content}); err != nil {
		return false, err
	}
	return true, nil
}

// useEditorFiles routes a session's file tools through the editor when it declared the
// capabilities and tandem runs in this process (Options.Files).
func (a *Agent) useEditorFiles(sessionID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fs := a.caps.Fs
	if a.files == nil || (!fs.ReadTextFile && !fs.WriteTextFile && !a.caps.Terminal) {
		return
	}
	if _, done := a.unroute[sessionID]; done {
		return
	}
	a.unroute[sessionID] = a.files(sessionID, &editorFiles{a: a, sessionID: sessionID, read: fs.ReadTextFile, writes: fs.WriteTextFile, terminal: a.caps.Terminal})
}

// stopEditorFiles gives the sessions' files back to the disk when the connection ends.
func (a *Agent) stopEditorFiles() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, remove := range a.unroute {
		remove()
		delete(a.unroute, id)
	}
}

var _ tool.Terminals = (*editorFiles)(nil)

// RunInTerminal runs a command in the editor's terminal (terminal/create, wait_for_exit, output,
// release), killing it at the timeout or when the turn is aborted.
func (f *editorFiles) RunInTerminal(ctx context.Context, shell shelljudge.Shell, command, cwd string, timeout time.Duration, outputLimit int, started func(string)) (tool.TerminalResult, bool, error) {
	if !f.terminal {
		return tool.TerminalResult{}, false, nil
	}
	sid := acp.SessionId(f.sessionID)
	// Requests to the editor outlive an abort: the terminal is still killed, read and released.
	bg := context.WithoutCancel(ctx)
	limit := outputLimit
	// The editor's environment cannot be filtered from here; the variables that make a shell source
	// a file before the command are set empty, which disables them.
	created, err := f.a.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: sid, Command: shell.Path, Args: shell.Args(command),
		Env: []acp.EnvVariable{{Name: "BASH_ENV", Value: ""}, {Name: "ENV", Value: ""}}, Cwd: &cwd, OutputByteLimit: &limit})
	if err != nil {
		return tool.TerminalResult{}, true, fmt.Errorf("the editor could not start a terminal: %w", err)
	}
	id := created.TerminalId
	defer func() {
		if _, err := f.a.conn.ReleaseTerminal(bg, acp.ReleaseTerminalRequest{SessionId: sid, TerminalId: id}); err != nil {
			f.a.log.Debug("acp: terminal/release", "terminal", id, "err", err)
		}
	}()
	started(id)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res tool.TerminalResult
	if _, err := f.a.conn.WaitForTerminalExit(wctx, acp.WaitForTerminalExitRequest{SessionId: sid, TerminalId: id}); err != nil {
		res.TimedOut = ctx.Err() == nil && wctx.Err() != nil
		if _, kerr := f.a.conn.KillTerminal(bg, acp.KillTerminalRequest{SessionId: sid, TerminalId: id}); kerr != nil {
			f.a.log.Debug("acp: terminal/kill", "terminal", id, "err", kerr)
		}
		if wctx.Err() == nil {
			return res, true, fmt.Errorf("waiting for the editor's terminal: %w", err)
		}
	}
	out, err := f.a.conn.TerminalOutput(bg, acp.TerminalOutputRequest{SessionId: sid, TerminalId: id})
	if err != nil {
		return res, true, fmt.Errorf("reading the editor's terminal: %w", err)
	}
	res.Output, res.Truncated = out.Output, out.Truncated
	if st := out.ExitStatus; st != nil {
		res.ExitCode = st.ExitCode
		if st.Signal != nil {
			res.Signal = *st.Signal
		}
	}
	return res, true, nil
}
