package session

import (
	"sync"

	"github.com/tandem-dev/tandem/internal/agent/tool"
)

// clientFiles are the sessions whose text files a client reads and writes for them (an editor over
// ACP that declared the file-system capabilities).
type clientFiles struct {
	mu  sync.Mutex
	set map[string]tool.Files
}

// SetFiles routes a session's read, write and edit calls through f until remove is called; when f
// is also a tool.Terminals, bash's commands run in the client's terminals too.
func (c *clientFiles) SetFiles(sessionID string, f tool.Files) (remove func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		c.set = map[string]tool.Files{}
	}
	c.set[sessionID] = f
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.set[sessionID] == f {
			delete(c.set, sessionID)
		}
	}
}

// filesOf is the client view a session's tools use; nil: the disk.
func (c *clientFiles) filesOf(sessionID string) tool.Files {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set[sessionID]
}
