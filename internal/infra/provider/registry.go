package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/infra/config"
)

// protocol is the wire protocol a provider speaks.
type protocol int

const (
	protoOpenAI protocol = iota
	protoAnthropic
	protoDemo
	protoUnsupported
)

// npm packages as OpenCode names the adapters; Model.api.npm reports them.
const (
	npmOpenAI           = "@ai-sdk/openai"
	npmOpenAICompatible = "@ai-sdk/openai-compatible"
	npmAnthropic        = "@ai-sdk/anthropic"
)

// builtin describes the providers tandem knows without configuration.
var builtins = map[string]struct {
	name, npm, baseURL, keyVar, urlVar string
	proto                              protocol
}{
	"openai":    {"OpenAI", npmOpenAI, OpenAIBaseURL, "OPENAI_API_KEY", "OPENAI_BASE_URL", protoOpenAI},
	"anthropic": {"Anthropic", npmAnthropic, AnthropicBaseURL, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", protoAnthropic},
}

// Registry holds the providers built from the configuration and answers the provider routes.
type Registry struct {
	entries  map[string]*entry
	order    []string // listing order: built-ins, then configured providers by ID, then demo
	provider string   // default provider
	model    string   // default model
	demo     bool

	compaction config.Compaction
}

type entry struct {
	id, name  string
	source    string // OpenCode's Provider.source: "env" | "config" | "custom"
	env       []string
	npm       string
	baseURL   string
	connected bool
	provider  Provider
	models    []ModelInfo
	apiIDs    map[string]string // model key -> ID sent to the API, when they differ
	// elsewhere: a built-in provider pointed at another server (OPENAI_BASE_URL at Ollama, say),
	// whose models the built-in table does not describe.
	elsewhere bool
}

// NewRegistry builds every provider the configuration describes. env is only consulted to tell
// which settings came from the environment (OpenCode's source "env"); the values themselves are
// already merged into cfg.
func NewRegistry(cfg config.Config, env func(string) string) (*Registry, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Registry{entries: map[string]*entry{}, compaction: cfg.Compaction}
	ids := make([]string, 0, len(cfg.Provider))
	for id := range cfg.Provider {
		if _, ok := builtins[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range append([]string{"openai", "anthropic"}, ids...) {
		r.entries[id] = buildEntry(id, cfg.Provider[id], env, cfg.StoredKeys[id])
		r.order = append(r.order, id)
	}
	demo := &entry{id: DemoID, name: "Demo (offline)", source: "custom", connected: true,
		models: []ModelInfo{demoModel}, env: []string{}}
	demo.provider = configured{Provider: NewDemo(), entry: demo} // it has no variants either
	r.entries[DemoID] = demo
	r.order = append(r.order, DemoID)

	r.provider, r.model = r.pickDefault(cfg.Model)
	return r, nil
}

// buildEntry builds one provider; stored says its key is one the user stored (PUT /auth/{id}).
func buildEntry(id string, pc config.ProviderConfig, env func(string) string, stored bool) *entry {
	b, isBuiltin := builtins[id]
	e := &entry{id: id, name: pc.Name, env: []string{}, apiIDs: map[string]string{}}
	proto := protoOpenAI
	switch {
	case isBuiltin:
		proto = b.proto
		e.npm = b.npm
		e.env = []string{b.keyVar}
		if e.name == "" {
			e.name = b.name
		}
	case pc.NPM == npmAnthropic:
		proto, e.npm = protoAnthropic, npmAnthropic
	case pc.NPM == "" || pc.NPM == npmOpenAICompatible || pc.NPM == npmOpenAI:
		e.npm = npmOpenAICompatible
		if pc.NPM == npmOpenAI {
			e.npm = npmOpenAI
		}
	default:
		proto, e.npm = protoUnsupported, pc.NPM
	}
	if e.name == "" {
		e.name = id
	}
	e.env = append(e.env, pc.Env...)

	base := strings.TrimRight(pc.Options.BaseURL, "/") // config validation checked it
	e.baseURL = base
	if e.baseURL == "" && isBuiltin {
		e.baseURL = b.baseURL
	}
	customURL := base != "" && (!isBuiltin || base != strings.TrimRight(b.baseURL, "/"))
	key := pc.Options.APIKey
	// A configured provider that names the variables its key is read from (OpenCode's env) needs
	// a key, even at its own URL (OpenRouter, say); the first one set is the key.
	needsKey := !isBuiltin && len(pc.Env) > 0
	for _, v := range pc.Env {
		if key != "" {
			break
		}
		key = env(v)
	}
	switch {
	case stored:
		e.source = "api" // OpenCode's source for a key stored through /auth
	case isBuiltin && (env(b.keyVar) != "" || env(b.urlVar) != ""):
		e.source = "env"
	case isBuiltin && key == "" && base == "":
		e.source = "custom" // known to tandem, not configured
	default:
		e.source = "config"
	}
	e.connected = key != "" || (proto == protoOpenAI && customURL && !needsKey)

	e.models = modelsFor(id, pc, proto == protoAnthropic)
	e.elsewhere = isBuiltin && customURL
	for key, mc := range pc.Models {
		if mc.ID != "" && mc.ID != key {
			e.apiIDs[key] = mc.ID
		}
	}

	idle := DefaultIdleTimeout
	timeout := pc.Options.Timeout
	if pc.Options.ChunkTimeout.Set {
		timeout = pc.Options.ChunkTimeout
	}
	if d, ok := timeout.Duration(DefaultIdleTimeout); ok {
		idle = d
	} else {
		idle = -1
	}

	switch {
	case proto == protoUnsupported:
		e.connected = false
		e.provider = unavailable{id: id, kind: ErrBadRequest,
			message: fmt.Sprintf("the adapter %q is not supported; tandem speaks OpenAI-compatible Chat Completions (npm %q) and Anthropic (npm %q)", pc.NPM, npmOpenAICompatible, npmAnthropic)}
	case !e.connected:
		what := fmt.Sprintf("an API key: store one (PUT /auth/%s) or set provider.%s.options.apiKey", id, id)
		switch {
		case isBuiltin:
			what = fmt.Sprintf("an API key: store one (PUT /auth/%s), set %s or provider.%s.options.apiKey", id, b.keyVar, id)
		case needsKey:
			what = fmt.Sprintf("an API key: store one (PUT /auth/%s), set %s or provider.%s.options.apiKey", id, strings.Join(pc.Env, " or "), id)
		case proto == protoOpenAI:
			what = "options.baseURL, options.apiKey or a stored key (PUT /auth/" + id + ")"
		}
		e.provider = unavailable{id: id, kind: ErrAuth, message: fmt.Sprintf("provider %s is not configured: it needs %s", id, what)}
	case proto == protoAnthropic:
		e.provider = NewAnthropic(AnthropicOptions{ID: id, BaseURL: base, APIKey: key, Headers: pc.Options.Headers, IdleTimeout: idle,
			MaxTokens: func(model string) int {
				m, _ := e.byAPIID(model)
				return int(m.Output)
			}})
	default:
		e.provider = NewOpenAI(OpenAIOptions{ID: id, BaseURL: base, APIKey: key, Headers: pc.Options.Headers, IdleTimeout: idle,
			LegacyMaxTokens: customURL,
			Responses: func(model string) bool {
				m, _ := e.byAPIID(model)
				return m.Options.Responses
			}})
	}
	e.provider = configured{Provider: e.provider, entry: e}
	return e
}

// byAPIID finds a model by the ID the API knows it by.
func (e *entry) byAPIID(apiID string) (ModelInfo, bool) {
	for _, m := range e.models {
		if m.ID == apiID || e.apiIDs[m.ID] == apiID {
			return m, true
		}
	}
	return ModelInfo{}, false
}

// modelsFor merges the built-in table with the configuration's models; configured fields win.
// anthropic says the provider speaks the Messages API, the one tandem sends PDFs to.
func modelsFor(id string, pc config.ProviderConfig, anthropic bool) []ModelInfo {
	var models []ModelInfo
	index := map[string]int{}
	for _, m := range knownModels[id] {
		m.ProviderID = id
		index[m.ID] = len(models)
		models = append(models, m)
	}
	keys := make([]string, 0, len(pc.Models))
	for k := range pc.Models {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mc := pc.Models[k]
		m := ModelInfo{ID: k, ProviderID: id, Name: k, ToolCall: true, Temperature: true}
		i, known := index[k]
		if known {
			m = models[i]
		}
		if mc.Name != "" {
			m.Name = mc.Name
		}
		if mc.Family != "" {
			m.Family = mc.Family
		}
		if mc.ReleaseDate != "" {
			m.ReleaseDate = mc.ReleaseDate
		}
		setBool(&m.Reasoning, mc.Reasoning)
		setBool(&m.ToolCall, mc.ToolCall)
		setBool(&m.Temperature, mc.Temperature)
		if a := mc.Attachment; a != nil {
			// OpenCode's attachment flag: the model takes images (and, on Anthropic, PDFs).
			m.Image, m.PDF = *a, *a && anthropic
		}
		if md := mc.Modalities; md != nil {
			m.Image = slices.Contains(md.Input, "image")
			m.PDF = anthropic && slices.Contains(md.Input, "pdf")
		}
		if o := mc.Options; o != nil {
			m.Options = modelOptions(m.Options, *o)
		}
		if m.Reasoning && m.Variants == nil {
			// A reasoning model gets OpenCode's variants for its protocol, as the built-in ones do.
			m.Variants = openaiVariants
			if anthropic {
				m.Variants = anthropicVariants
			}
		}
		if len(mc.Variants) > 0 {
			variants := maps.Clone(m.Variants)
			if variants == nil {
				variants = map[string]ModelOptions{}
			}
			for name, v := range mc.Variants {
				if v.Disabled {
					delete(variants, name)
					continue
				}
				variants[name] = modelOptions(variants[name], v)
			}
			m.Variants = variants
		}
		if mc.Cost != nil {
			m.Cost = Cost{Input: mc.Cost.Input, Output: mc.Cost.Output, CacheRead: mc.Cost.CacheRead, CacheWrite: mc.Cost.CacheWrite}
		}
		if mc.Limit != nil {
			m.Context, m.Input, m.Output = mc.Limit.Context, mc.Limit.Input, mc.Limit.Output
		}
		switch {
		case mc.Patch == nil:
		case *mc.Patch:
			m.EditTools = EditToolsPatch
		default:
			m.EditTools = EditToolsEdit
		}
		if known {
			models[i] = m
		} else {
			models = append(models, m)
		}
	}
	return models
}

// modelOptions applies configured options over a model's own.
func modelOptions(base ModelOptions, o config.ModelOptions) ModelOptions {
	switch o.API {
	case "responses":
		base.Responses = true
	case "chat":
		base.Responses = false
	}
	if o.ParallelToolCalls != nil {
		base.ParallelToolCalls = o.ParallelToolCalls
	}
	if o.ReasoningEffort != "" || o.ReasoningSummary != "" || o.Thinking != nil {
		r := ReasoningOptions{}
		if base.Reasoning != nil {
			r = *base.Reasoning
		}
		if o.ReasoningEffort != "" {
			r.Effort = o.ReasoningEffort
		}
		if o.ReasoningSummary != "" {
			r.Summary = o.ReasoningSummary
		}
		if t := o.Thinking; t != nil {
			r.BudgetTokens = 0
			if t.Type == "enabled" {
				r.BudgetTokens = t.BudgetTokens
			}
		}
		base.Reasoning = &r
	}
	return base
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func (r *Registry) pickDefault(configured string) (providerID, modelID string) {
	if p, m, ok := config.SplitModel(configured); ok {
		return p, m
	}
	for _, id := range r.order {
		e := r.entries[id]
		if id == DemoID || !e.connected || len(e.models) == 0 {
			continue
		}
		return id, e.models[0].ID
	}
	r.demo = true
	return DemoID, DemoID
}

// Offers reports whether "provider/model" can be prompted as configured: its provider is known
// and connected, and lists the model (a provider that lists none, a local server, takes any).
func (r *Registry) Offers(model string) bool {
	p, m, ok := config.SplitModel(model)
	if !ok {
		return false
	}
	e, ok := r.entries[p]
	if !ok || !e.connected {
		return false
	}
	if len(e.models) == 0 {
		return true
	}
	for _, info := range e.models {
		if info.ID == m {
			return true
		}
	}
	return false
}

// Get returns the provider with that ID. A known but unconfigured provider is returned too: its
// Stream fails at once with an ErrAuth that says what to configure.
func (r *Registry) Get(providerID string) (Provider, bool) {
	e, ok := r.entries[providerID]
	if !ok {
		return nil, false
	}
	return e.provider, true
}

// Default is the model a session uses when it names none: config `model`, else the first
// connected provider's first model, else the demo model.
func (r *Registry) Default() (providerID, modelID string) { return r.provider, r.model }

// Demo reports that the demo model is the default because nothing else is configured, so that
// clients can say so.
func (r *Registry) Demo() bool { return r.demo }

// Model describes a model. ok is false for a model that is neither built in nor configured; such a
// model can still be called (an Ollama model pulled yesterday), with unknown limits and no price.
func (r *Registry) Model(providerID, modelID string) (ModelInfo, bool) {
	e, ok := r.entries[providerID]
	if !ok {
		return ModelInfo{}, false
	}
	for _, m := range e.models {
		if m.ID == modelID {
			return m, true
		}
	}
	return ModelInfo{}, false
}

// EditTools says which file-changing tools a model is offered (EditToolsPatch, EditToolsEdit or
// EditToolsAll): the model's configuration (patch: true or false) or, without one, OpenCode's
// rule for its ID. A model the registry does not know gets the rule too.
func (r *Registry) EditTools(providerID, modelID string) string {
	if m, ok := r.Model(providerID, modelID); ok && m.EditTools != "" {
		return m.EditTools
	}
	return DefaultEditTools(modelID)
}

// AutoCompaction reports whether turns compact the conversation by themselves when it nears or
// exceeds the model's context window (config compaction.auto, on unless false).
func (r *Registry) AutoCompaction() bool {
	return r.compaction.Auto == nil || *r.compaction.Auto
}

// compactionBuffer is the most of a context window kept free for the answer by default.
const compactionBuffer = 20000

// Usable is how many input tokens a call to the model may carry before the conversation is
// compacted first, as OpenCode reckons it: the input limit (else the context window) less what is
// reserved for the answer (config compaction.reserved, else min(20000, the output limit)). It is 0
// when the model's window is unknown or compaction.auto is false: never compact automatically.
func (r *Registry) Usable(providerID, modelID string) int64 {
	if a := r.compaction.Auto; a != nil && !*a {
		return 0
	}
	m, ok := r.Model(providerID, modelID)
	if !ok || m.Context <= 0 {
		return 0
	}
	window := m.Context
	if m.Input > 0 {
		window = m.Input
	}
	reserved := min(int64(compactionBuffer), m.Output)
	if r.compaction.Reserved != nil {
		reserved = *r.compaction.Reserved
	}
	return max(window-reserved, 1)
}

// CheckModel says why ref ("provider/model") cannot be chosen as a default model, or nil. The
// provider must be built in, configured or the demo; the model must be one it lists, unless it
// lists none (a local server whose models are not configured) or it is a built-in provider at
// another server's URL (Ollama as "openai"): tandem's table of OpenAI's models says nothing of
// what that server has.
func (r *Registry) CheckModel(ref string) error {
	providerID, modelID, ok := config.SplitModel(ref)
	if !ok {
		return fmt.Errorf("%q must look like \"provider/model\"", ref)
	}
	e, ok := r.entries[providerID]
	if !ok {
		return fmt.Errorf("%q: there is no provider %q (known: %s); configure provider.%s first", ref, providerID, strings.Join(r.order, ", "), providerID)
	}
	if len(e.models) == 0 || e.elsewhere {
		return nil
	}
	ids := make([]string, 0, len(e.models))
	for _, m := range e.models {
		if m.ID == modelID {
			return nil
		}
		ids = append(ids, m.ID)
	}
	return fmt.Errorf("%q: provider %s has no model %q (it lists %s); add it under provider.%s.models to use it",
		ref, providerID, modelID, strings.Join(ids, ", "), providerID)
}

// Close releases the providers' idle connections.
func (r *Registry) Close() {
	for _, e := range r.entries {
		p := e.provider
		if a, ok := p.(configured); ok {
			p = a.Provider
		}
		if c, ok := p.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// unavailable stands in for a provider that cannot run, and says why on every call.
type unavailable struct {
	id      string
	kind    ErrorKind
	message string
}

func (u unavailable) ID() string { return u.id }

func (u unavailable) Stream(ctx context.Context, _ Request, _ func(Event) error) error {
	if err := ctx.Err(); err != nil {
		return ctxError(ctx)
	}
	return &Error{Kind: u.kind, Provider: u.id, Message: u.message}
}

// configured applies a model's configuration to each call: its options (or the variant the call
// names) and the ID the API knows it by.
type configured struct {
	Provider
	entry *entry
}

func (c configured) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	if m, ok := c.entry.model(req.Model); ok {
		o := m.Options
		if req.Variant != "" {
			v, ok := m.Variants[req.Variant]
			if !ok {
				return &Error{Kind: ErrBadRequest, Provider: c.entry.id,
					Message: fmt.Sprintf("model %s has no variant %q (it has: %s)", m.ID, req.Variant, variantNames(m))}
			}
			if v.Reasoning != nil {
				// The variant's thinking budget (none: off) and effort win; a summary it does not
				// set stays the model's.
				r := *v.Reasoning
				if o.Reasoning != nil && r.Summary == "" {
					r.Summary = o.Reasoning.Summary
				}
				o.Reasoning = &r
			}
			if v.ParallelToolCalls != nil {
				o.ParallelToolCalls = v.ParallelToolCalls
			}
		}
		if req.Reasoning == nil {
			req.Reasoning = o.Reasoning
		}
		if req.ParallelToolCalls == nil {
			req.ParallelToolCalls = o.ParallelToolCalls
		}
	}
	if id, ok := c.entry.apiIDs[req.Model]; ok {
		req.Model = id
	}
	return c.Provider.Stream(ctx, req, emit)
}

func variantNames(m ModelInfo) string {
	names := slices.Sorted(maps.Keys(m.Variants))
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// model finds a model by its key.
func (e *entry) model(id string) (ModelInfo, bool) {
	for _, m := range e.models {
		if m.ID == id {
			return m, true
		}
	}
	return ModelInfo{}, false
}

// Takes says why a model cannot be sent an attachment of a media type as content, or nil when it
// can. Only images and PDFs are sent as content; a model tandem does not know takes none.
func (r *Registry) Takes(providerID, modelID, mime string) error {
	m, ok := r.Model(providerID, modelID)
	switch {
	case IsImage(mime) && ok && m.Image, mime == PDF && ok && m.PDF:
		return nil
	case !IsImage(mime) && mime != PDF:
		return fmt.Errorf("tandem sends images (%s) and PDFs to models, not %s", strings.Join(ImageTypes, ", "), mime)
	case !ok:
		return fmt.Errorf("model %s/%s is not described in the configuration, so tandem does not send it attachments; if it takes images, set provider.%s.models.%s.attachment to true", providerID, modelID, providerID, modelID)
	case mime == PDF && m.Image:
		return fmt.Errorf("model %s/%s takes images but not PDFs: tandem sends PDFs to Anthropic's models only", providerID, modelID)
	}
	return fmt.Errorf("model %s/%s does not take %s attachments (its capabilities say so); pick a model that does, or set provider.%s.models.%s.attachment to true if it does", providerID, modelID, kindOfMime(mime), providerID, modelID)
}

func kindOfMime(mime string) string {
	if mime == PDF {
		return "PDF"
	}
	return "image"
}

// Listings in OpenCode's shapes (components.schemas.Provider and Model of its openapi.json).

// The listings' types are the wire types of package api.
type (
	ProviderInfo       = api.ProviderInfo
	ModelCard          = api.ModelCard
	ModelAPI           = api.ModelAPI
	Capabilities       = api.Capabilities
	Modalities         = api.Modalities
	CardCost           = api.CardCost
	CacheCost          = api.CacheCost
	CardLimit          = api.CardLimit
	ProviderList       = api.ProviderList
	ConfigProviderList = api.ConfigProviderList
)

// AuthMethod is OpenCode's ProviderAuthMethod.
type AuthMethod struct {
	Type  string `json:"type"`
	Label string `json:"label"`
}

// List answers GET /provider: every provider tandem knows, and which are usable.
func (r *Registry) List() ProviderList {
	out := ProviderList{All: []ProviderInfo{}, Default: r.defaults(), Connected: []string{}}
	for _, id := range r.order {
		e := r.entries[id]
		out.All = append(out.All, e.info())
		if e.connected {
			out.Connected = append(out.Connected, id)
		}
	}
	return out
}

// ConfigProviders answers GET /config/providers: the usable providers only, the one holding the
// overall default model first. `default` maps every provider to its own default model, so the order
// is how a client tells which model a session without one runs on.
func (r *Registry) ConfigProviders() ConfigProviderList {
	out := ConfigProviderList{Providers: []ProviderInfo{}, Default: r.defaults()}
	if e, ok := r.entries[r.provider]; ok && e.connected {
		out.Providers = append(out.Providers, e.info())
	}
	for _, id := range r.order {
		if e := r.entries[id]; e.connected && id != r.provider {
			out.Providers = append(out.Providers, e.info())
		}
	}
	return out
}

// AuthMethods answers GET /provider/auth: every provider but the demo takes an API key.
func (r *Registry) AuthMethods() map[string][]AuthMethod {
	out := map[string][]AuthMethod{}
	for _, id := range r.order {
		if id != DemoID {
			out[id] = []AuthMethod{{Type: "api", Label: "API key"}}
		}
	}
	return out
}

// defaults maps each usable provider to its default model; the overall default wins for its
// provider.
func (r *Registry) defaults() map[string]string {
	out := map[string]string{}
	for _, id := range r.order {
		e := r.entries[id]
		if e.connected && len(e.models) > 0 {
			out[id] = e.models[0].ID
		}
	}
	out[r.provider] = r.model
	return out
}

func (e *entry) info() ProviderInfo {
	p := ProviderInfo{ID: e.id, Name: e.name, Source: e.source, Env: slices.Clone(e.env),
		Options: map[string]any{}, Models: map[string]ModelCard{}}
	if e.baseURL != "" {
		p.Options["baseURL"] = e.baseURL
	}
	for _, m := range e.models {
		p.Models[m.ID] = e.card(m)
	}
	return p
}

func (e *entry) card(m ModelInfo) ModelCard {
	apiID := m.ID
	if id, ok := e.apiIDs[m.ID]; ok {
		apiID = id
	}
	return ModelCard{
		ID: m.ID, ProviderID: e.id, Name: m.Name, Family: m.Family,
		API: ModelAPI{ID: apiID, URL: e.baseURL, NPM: e.npm},
		Capabilities: Capabilities{
			Temperature: m.Temperature, Reasoning: m.Reasoning, Attachment: m.Attachment(), Toolcall: m.ToolCall,
			Input:  Modalities{Text: true, Image: m.Image, PDF: m.PDF},
			Output: Modalities{Text: true},
		},
		Cost:        CardCost{Input: m.Cost.Input, Output: m.Cost.Output, Cache: CacheCost{Read: m.Cost.CacheRead, Write: m.Cost.CacheWrite}},
		Limit:       CardLimit{Context: m.Context, Output: m.Output},
		Status:      "active",
		Options:     map[string]any{},
		Headers:     map[string]string{},
		ReleaseDate: m.ReleaseDate,
		Variants:    variantCards(m.Variants),
	}
}

// variantCards writes variants as OpenCode's options: thinking {type, budgetTokens},
// reasoningEffort, reasoningSummary, parallelToolCalls.
func variantCards(variants map[string]ModelOptions) map[string]map[string]any {
	if len(variants) == 0 {
		return nil
	}
	out := map[string]map[string]any{}
	for name, v := range variants {
		o := map[string]any{}
		if r := v.Reasoning; r != nil {
			if r.BudgetTokens > 0 {
				o["thinking"] = map[string]any{"type": "enabled", "budgetTokens": r.BudgetTokens}
			}
			if r.Effort != "" {
				o["reasoningEffort"] = r.Effort
			}
			if r.Summary != "" {
				o["reasoningSummary"] = r.Summary
			}
		}
		if v.ParallelToolCalls != nil {
			o["parallelToolCalls"] = *v.ParallelToolCalls
		}
		out[name] = o
	}
	return out
}
