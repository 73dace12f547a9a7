package app

import "context"

// dispose is POST /instance/dispose, as OpenCode's: the configuration is read again and applied
// (a provider added to tandem.json is listed from then on, without a restart), and the directory's
// clients are told to reload what they show. Unlike OpenCode, nothing is torn down: turns, pending
// requests, MCP servers and terminals go on.
func (s services) dispose(ctx context.Context, dir string) error {
	if err := s.runtime.Reload(); err != nil {
		return err
	}
	s.bus.Emit(s.log, dir, "server.instance.disposed", map[string]any{"directory": dir})
	return nil
}

// projectDirectories is GET /project/{projectID}/directories.
func (s services) projectDirectories(ctx context.Context, projectID string) ([]string, error) {
	return s.sessions.Directories(ctx, projectID, s.dir)
}

// Reload reads the server directory's configuration again and applies it: the providers, the
// permission rules and the notification targets.
func (rt *agentRuntime) Reload() error {
	rt.changing.Lock()
	defer rt.changing.Unlock()
	return rt.reload()
}
