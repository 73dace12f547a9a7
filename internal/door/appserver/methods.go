package appserver

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/infra/provider"
)

// accountRead: tandem has no ChatGPT account; the providers' keys are its own (tandem.json, the
// environment). Codex answers the same way when it runs on an API key.
func (s *server) accountRead(context.Context, json.RawMessage) (any, error) {
	return map[string]any{"account": nil, "requiresOpenaiAuth": false}, nil
}

// rateLimits: tandem tracks no plan limits.
func (s *server) rateLimits(context.Context, json.RawMessage) (any, error) {
	return map[string]any{"rateLimits": map[string]any{"limitId": nil, "limitName": nil, "primary": nil, "secondary": nil, "credits": nil, "planType": nil}}, nil
}

func (s *server) govCloud(context.Context, json.RawMessage) (any, error) {
	return map[string]any{"isGovCloud": false, "shouldWarn": false}, nil
}

// defaultModel is the model a new session uses: the first provider's default, as "provider/model".
func (s *server) defaultModel(ctx context.Context) (provider, model string, err error) {
	list, err := s.c.Providers(ctx)
	if err != nil {
		return "", "", err
	}
	for _, p := range list.Providers {
		if def, ok := list.Default[p.ID]; ok {
			return p.ID, def, nil
		}
	}
	return "", "", nil
}

// configRead reports the configuration a Codex client shows: the model, and tandem's approvals
// (it asks for whatever its rules do not allow, as Codex's on-request does).
func (s *server) configRead(ctx context.Context, _ json.RawMessage) (any, error) {
	prov, model, err := s.defaultModel(ctx)
	if err != nil {
		return nil, err
	}
	cfg := map[string]any{"approval_policy": "on-request", "sandbox_mode": "workspace-write"}
	if model != "" {
		cfg["model"] = prov + "/" + model
		cfg["model_provider"] = prov
	}
	return map[string]any{"config": cfg, "origins": map[string]any{}}, nil
}

func (s *server) configRequirements(context.Context, json.RawMessage) (any, error) {
	return map[string]any{"requirements": nil}, nil
}

// modelList lists every model of tandem's providers as "provider/model".
func (s *server) modelList(ctx context.Context, _ json.RawMessage) (any, error) {
	list, err := s.c.Providers(ctx)
	if err != nil {
		return nil, err
	}
	prov, def, _ := s.defaultModel(ctx)
	data := []map[string]any{}
	for _, p := range list.Providers {
		ids := make([]string, 0, len(p.Models))
		for id := range p.Models {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			name := p.Models[id].Name
			if name == "" {
				name = id
			}
			variants := make([]string, 0, len(p.Models[id].Variants))
			for v := range p.Models[id].Variants {
				variants = append(variants, v)
			}
			sort.Strings(variants)
			efforts := []any{}
			for _, v := range variants {
				efforts = append(efforts, map[string]any{"reasoningEffort": v, "description": "tandem's " + v + " variant of " + name})
			}
			// Codex's reasoning efforts are the model's variants; a model without any still needs a
			// default, which tandem ignores (turn/start applies an effort only when it is a variant).
			effort := "medium"
			if len(variants) > 0 && !slices.Contains(variants, effort) {
				effort = variants[0]
			}
			data = append(data, map[string]any{
				"id": p.ID + "/" + id, "model": p.ID + "/" + id, "displayName": name,
				"description": strings.TrimSpace(p.Name + " (tandem provider " + p.ID + ")"),
				"hidden":      false, "isDefault": p.ID == prov && id == def,
				"defaultReasoningEffort": effort, "supportedReasoningEfforts": efforts,
				"inputModalities": []string{"text"},
			})
		}
	}
	return map[string]any{"data": data, "nextCursor": nil}, nil
}

type cwdsParams struct {
	Cwds []string `json:"cwds"`
}

// hooksList: tandem runs no Codex hooks.
func (s *server) hooksList(_ context.Context, raw json.RawMessage) (any, error) {
	var p cwdsParams
	_ = json.Unmarshal(raw, &p)
	data := []any{}
	for _, c := range p.Cwds {
		data = append(data, map[string]any{"cwd": c, "hooks": []any{}, "warnings": []any{}, "errors": []any{}})
	}
	return map[string]any{"data": data}, nil
}

// skillsList: tandem has no Codex skills (its slash commands are its own).
func (s *server) skillsList(_ context.Context, raw json.RawMessage) (any, error) {
	var p cwdsParams
	_ = json.Unmarshal(raw, &p)
	data := []any{}
	for _, c := range p.Cwds {
		data = append(data, map[string]any{"cwd": c, "skills": []any{}, "errors": []any{}})
	}
	return map[string]any{"data": data}, nil
}

// pluginInstalled: tandem has no Codex plugins.
func (s *server) pluginInstalled(context.Context, json.RawMessage) (any, error) {
	return map[string]any{"marketplaces": []any{}, "marketplaceLoadErrors": []any{}}, nil
}

// collaborationModes: tandem has one way of working per agent; Codex's Plan mode is not served.
func (s *server) collaborationModes(context.Context, json.RawMessage) (any, error) {
	return map[string]any{"data": []any{map[string]any{"name": "Default", "mode": "default", "model": nil, "reasoning_effort": nil}}}, nil
}

// mcpStatus lists tandem's MCP servers (their tools are not listed).
func (s *server) mcpStatus(ctx context.Context, _ json.RawMessage) (any, error) {
	st, err := s.c.MCPStatus(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	sort.Strings(names)
	data := []any{}
	for _, n := range names {
		data = append(data, map[string]any{"name": n, "tools": map[string]any{}, "resources": []any{}, "resourceTemplates": []any{}, "authStatus": "unsupported"})
	}
	return map[string]any{"data": data, "nextCursor": nil}, nil
}

// card is the catalog entry of a model (nil: the default one), when tandem's providers list it.
func (s *server) card(ctx context.Context, m *session.MessageModel) (provider.ModelCard, bool) {
	list, err := s.c.Providers(ctx)
	if err != nil {
		return provider.ModelCard{}, false
	}
	if m == nil {
		for _, p := range list.Providers {
			if def, ok := list.Default[p.ID]; ok {
				m = &session.MessageModel{ProviderID: p.ID, ModelID: def}
				break
			}
		}
	}
	for _, p := range list.Providers {
		if m != nil && p.ID == m.ProviderID {
			c, ok := p.Models[m.ModelID]
			return c, ok
		}
	}
	return provider.ModelCard{}, false
}
