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
func (s *Service) SetFiles(sessionID string, f tool.Files) (remove func()) {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	if s.files.set == nil {
		s.files.set = map[string]tool.Files{}
	}
	s.files.set[sessionID] = f
	return func() {
		s.files.mu.Lock()
		defer s.files.mu.Unlock()
		if s.files.set[sessionID] == f {
			delete(s.files.set, sessionID)
		}
	}
}

// filesOf is the client view a session's tools use; nil: the disk.
func (s *Service) filesOf(sessionID string) tool.Files {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return s.files.set[sessionID]
}
