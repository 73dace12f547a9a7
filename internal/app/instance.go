package app

import (
	"context"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/infra/config"
)

// dispose is POST /instance/dispose, as OpenCode's: the configuration is read again and applied
// (a provider added to tandem.json is listed from then on, without a restart), and the directory's
// clients are told to reload what they show. Unlike OpenCode, nothing is torn down: turns, pending
// requests, MCP servers and terminals go on.
func (s services) dispose(ctx context.Context, dir string) error {
	if err := s.runtime.Reload(); err != nil {
		return err
	}
	s.bus.Emit(s.log, dir, api.EventInstanceDisposed, api.InstanceDisposed{Directory: dir})
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

// The configuration's writers as the routes call them: each success tells every client, with
// server.instance.disposed (as OpenCode's config update does), to reload its providers and
// agents, so a provider connected in one browser tab shows in the model picker of every other
// tab and device at once. The user's file and auth.json serve every directory: those events go
// to every stream, with no directory.

func (s services) patchConfig(dir string, patch []byte) (config.Config, error) {
	cfg, err := s.runtime.Patch(dir, patch)
	if err == nil {
		s.bus.Emit(s.log, dir, api.EventInstanceDisposed, api.InstanceDisposed{Directory: dir})
	}
	return cfg, err
}

func (s services) patchUserConfig(dir string, patch []byte) (config.Config, error) {
	cfg, err := s.runtime.PatchUser(dir, patch)
	if err == nil {
		s.configChanged()
	}
	return cfg, err
}

func (s services) setKey(providerID, key string, metadata map[string]string) error {
	err := s.runtime.SetKey(providerID, key, metadata)
	if err == nil {
		s.configChanged()
	}
	return err
}

func (s services) removeKey(providerID string) error {
	err := s.runtime.RemoveKey(providerID)
	if err == nil {
		s.configChanged()
	}
	return err
}

func (s services) configChanged() {
	s.bus.Emit(s.log, "", api.EventInstanceDisposed, api.InstanceDisposed{})
}
