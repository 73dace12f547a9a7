package acpserver

import (
	"context"

	acp "github.com/coder/acp-go-sdk"

	"tandem/tool"
)

// editorFiles reads and writes a session's text files through the editor (fs/read_text_file,
// fs/write_text_file), so the agent sees unsaved buffers and its changes land in them. Each
// direction is used only when the client declared it; otherwise the tools use the disk.
type editorFiles struct {
	a            *Agent
	sessionID    string
	read, writes bool
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
	if a.files == nil || (!fs.ReadTextFile && !fs.WriteTextFile) {
		return
	}
	if _, done := a.unroute[sessionID]; done {
		return
	}
	a.unroute[sessionID] = a.files(sessionID, &editorFiles{a: a, sessionID: sessionID, read: fs.ReadTextFile, writes: fs.WriteTextFile})
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
