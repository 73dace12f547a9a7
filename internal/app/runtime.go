package app

import (
	"strings"
	"sync"

	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/config"
	"github.com/tandem-dev/tandem/internal/infra/keys"
	"github.com/tandem-dev/tandem/internal/infra/provider"
)

// agentRuntime holds what a config change replaces: the provider registry and the permission rules.
// The session loop reads it through the session.Providers interface.
type agentRuntime struct {
	dir   string
	env   func(string) string
	perms *permission.Service

	keys *keys.Store // the API keys stored through PUT /auth/{providerID}
	// notify applies the "notify" targets of a new configuration (set once the dispatcher runs).
	notify func(config.Config)

	// changing serialises what rebuilds the registry (a config patch, a stored key), so that the
	// last registry applied is built from the last change.
	changing sync.Mutex

	mu       sync.Mutex
	loaders  map[string]*config.Loader
	registry *provider.Registry
	agents   []session.AgentConfig // the configuration's "agent" entries
}

func newAgentRuntime(dir string, env func(string) string, perms *permission.Service, keys *keys.Store) (*agentRuntime, error) {
	rt := &agentRuntime{dir: dir, env: env, perms: perms, keys: keys, loaders: map[string]*config.Loader{}}
	cfg, err := rt.Load(dir)
	if err != nil {
		return nil, err
	}
	if err := rt.apply(cfg); err != nil {
		return nil, err
	}
	return rt, nil
}

func (rt *agentRuntime) loader(dir string) *config.Loader {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	l, ok := rt.loaders[dir]
	if !ok {
		l = config.NewLoader(dir, rt.env)
		if rt.keys != nil {
			l.Keys(rt.keys.Keys)
		}
		// An untrusted project may pick among the user's models, not name one that fails every prompt.
		l.Models(func(c config.Config, model string) bool {
			reg, err := provider.NewRegistry(c, rt.env)
			if err != nil {
				return false
			}
			defer reg.Close()
			return reg.Offers(model)
		})
		// A patch that the permission rules or the providers would refuse is never written.
		l.Check(func(c config.Config) error {
			if _, err := permission.ParseConfig(c.Permission); err != nil {
				return err // names the value at fault; the loader reports its file:line:column
			}
			reg, err := provider.NewRegistry(c, rt.env)
			if err != nil {
				return errs.E(errs.Invalid, "%v", err)
			}
			reg.Close()
			return nil
		})
		rt.loaders[dir] = l
	}
	return l
}

// Load reads the configuration seen from dir.
func (rt *agentRuntime) Load(dir string) (config.Config, error) { return rt.loader(dir).Load() }

// Patch writes a patch to dir's project file; for the server's own directory the new providers and
// rules take effect for the next turn.
func (rt *agentRuntime) Patch(dir string, patch []byte) (config.Config, error) {
	return rt.patch(dir, patch, (*config.Loader).Patch)
}

// PatchUser writes a patch to the user's own configuration file (PATCH /global/config): what
// dir sees of the result is returned, and the server's own directory applies it at once.
func (rt *agentRuntime) PatchUser(dir string, patch []byte) (config.Config, error) {
	return rt.patch(dir, patch, (*config.Loader).PatchUser)
}

func (rt *agentRuntime) patch(dir string, patch []byte, write func(*config.Loader, []byte, ...func(map[string]any, config.Config) error) (config.Config, error)) (config.Config, error) {
	rt.changing.Lock()
	defer rt.changing.Unlock()
	cfg, err := write(rt.loader(dir), patch, checkModels)
	if err != nil {
		return config.Config{}, err
	}
	if dir == rt.dir {
		if err := rt.apply(cfg); err != nil {
			return config.Config{}, err
		}
	}
	return cfg, nil
}

func (rt *agentRuntime) apply(cfg config.Config) error {
	pc, err := permission.ParseConfig(cfg.Permission)
	if err != nil {
		return err
	}
	agents, err := session.ParseAgentConfigs(cfg.Agent)
	if err != nil {
		return err
	}
	reg, err := provider.NewRegistry(cfg, rt.env)
	if err != nil {
		return err
	}
	rt.perms.SetConfig(pc)
	if rt.notify != nil {
		rt.notify(cfg)
	}
	rt.mu.Lock()
	old := rt.registry
	rt.registry, rt.agents = reg, agents
	rt.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// SetKey stores providerID's API key (PUT /auth/{providerID}); the provider is connected, with its
// models listed, from the next request on. Only providers the registry knows take a key: a built-in
// one, or one the configuration describes (its baseURL and models).
func (rt *agentRuntime) SetKey(providerID, key string, metadata map[string]string) error {
	if err := keys.CheckProvider(providerID); err != nil {
		return err
	}
	if providerID == provider.DemoID {
		return errs.E(errs.Invalid, "provider %q is tandem's offline demo model and takes no key", providerID)
	}
	if _, known := rt.Registry().Get(providerID); !known {
		ids := []string{}
		for _, p := range rt.Registry().List().All {
			if p.ID != provider.DemoID {
				ids = append(ids, p.ID)
			}
		}
		return errs.E(errs.Invalid, "no provider %q: keys can be stored for %s; describe another one under provider.%s in tandem.json (options.baseURL, models) first",
			providerID, strings.Join(ids, ", "), providerID)
	}
	rt.changing.Lock()
	defer rt.changing.Unlock()
	if err := rt.keys.Set(providerID, key, metadata); err != nil {
		return err
	}
	return rt.reload()
}

// RemoveKey deletes providerID's stored key (DELETE /auth/{providerID}). A key from the
// environment or the configuration files stays in effect.
func (rt *agentRuntime) RemoveKey(providerID string) error {
	rt.changing.Lock()
	defer rt.changing.Unlock()
	had, err := rt.keys.Remove(providerID)
	if err != nil || !had {
		return err
	}
	return rt.reload()
}

// reload rebuilds the registry and rules of the server's directory from its configuration.
func (rt *agentRuntime) reload() error {
	cfg, err := rt.Load(rt.dir)
	if err != nil {
		return err
	}
	return rt.apply(cfg)
}

// Registry is the current provider registry.
func (rt *agentRuntime) Registry() *provider.Registry {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.registry
}

// Get implements session.Providers.
func (rt *agentRuntime) Get(providerID string) (provider.Provider, bool) {
	return rt.Registry().Get(providerID)
}

// Default implements session.Providers.
func (rt *agentRuntime) Default() (string, string) { return rt.Registry().Default() }

// Cost implements session.Providers: what a step cost with the current registry's prices.
func (rt *agentRuntime) Cost(providerID, modelID string, u provider.Usage) float64 {
	m, ok := rt.Registry().Model(providerID, modelID)
	if !ok {
		return 0
	}
	return m.CostOf(u)
}

// Takes implements session.Inputs: which attachments the current registry's models take.
func (rt *agentRuntime) Takes(providerID, modelID, mime string) error {
	return rt.Registry().Takes(providerID, modelID, mime)
}

// Compaction implements session.ContextLimits with the current registry's limits and compaction
// config.
func (rt *agentRuntime) Compaction(providerID, modelID string) (auto bool, usable int64) {
	r := rt.Registry()
	return r.AutoCompaction(), r.Usable(providerID, modelID)
}

// ConfiguredAgents implements session.AgentConfigs: the agents of the current configuration.
func (rt *agentRuntime) ConfiguredAgents() []session.AgentConfig {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.agents
}

// EditTools implements session.EditTools with the current registry's models.
func (rt *agentRuntime) EditTools(providerID, modelID string) string {
	return rt.Registry().EditTools(providerID, modelID)
}

func (rt *agentRuntime) close() {
	if r := rt.Registry(); r != nil {
		r.Close()
	}
}

// checkModels refuses a patch that sets a default model no provider offers, so that a typo never
// becomes the model every new session fails with. Models already in the files are not judged: a
// model a provider stopped listing must not keep the server from starting or other keys from
// being changed.
func checkModels(patch map[string]any, cfg config.Config) error {
	var refs []struct{ key, value string }
	for _, key := range []string{"model", "small_model"} {
		if value, set := patch[key].(string); set {
			refs = append(refs, struct{ key, value string }{key, value})
		}
	}
	if len(refs) == 0 {
		return nil
	}
	reg, err := provider.NewRegistry(cfg, nil)
	if err != nil {
		return errs.E(errs.Invalid, "%v", err)
	}
	defer reg.Close()
	for _, r := range refs {
		if err := reg.CheckModel(r.value); err != nil {
			return errs.Named(errs.Invalid, "ConfigInvalidError", "%s %v", r.key, err)
		}
	}
	return nil
}
