package api

// Provider and model listings in OpenCode's shapes (components.schemas.Provider and Model of its
// openapi.json).

// ProviderInfo is OpenCode's Provider.
type ProviderInfo struct {
	ID      string               `json:"id"`
	Name    string               `json:"name"`
	Source  string               `json:"source"`
	Env     []string             `json:"env"`
	Options map[string]any       `json:"options"`
	Models  map[string]ModelCard `json:"models"`
}

// ModelCard is OpenCode's Model.
type ModelCard struct {
	ID           string            `json:"id"`
	ProviderID   string            `json:"providerID"`
	API          ModelAPI          `json:"api"`
	Name         string            `json:"name"`
	Family       string            `json:"family,omitempty"`
	Capabilities Capabilities      `json:"capabilities"`
	Cost         CardCost          `json:"cost"`
	Limit        CardLimit         `json:"limit"`
	Status       string            `json:"status"`
	Options      map[string]any    `json:"options"`
	Headers      map[string]string `json:"headers"`
	ReleaseDate  string            `json:"release_date"`
	// Variants are the options each named variant sends, in OpenCode's words.
	Variants map[string]map[string]any `json:"variants,omitempty"`
}

// ModelAPI says how a model is reached.
type ModelAPI struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	NPM string `json:"npm"`
}

// Capabilities is what a model can take and do.
type Capabilities struct {
	Temperature bool       `json:"temperature"`
	Reasoning   bool       `json:"reasoning"`
	Attachment  bool       `json:"attachment"`
	Toolcall    bool       `json:"toolcall"`
	Input       Modalities `json:"input"`
	Output      Modalities `json:"output"`
	Interleaved bool       `json:"interleaved"`
}

// Modalities lists media kinds.
type Modalities struct {
	Text  bool `json:"text"`
	Audio bool `json:"audio"`
	Image bool `json:"image"`
	Video bool `json:"video"`
	PDF   bool `json:"pdf"`
}

// CardCost is in USD per million tokens.
type CardCost struct {
	Input  float64   `json:"input"`
	Output float64   `json:"output"`
	Cache  CacheCost `json:"cache"`
}

// CacheCost prices cache reads and writes.
type CacheCost struct {
	Read  float64 `json:"read"`
	Write float64 `json:"write"`
}

// CardLimit is in tokens.
type CardLimit struct {
	Context int64 `json:"context"`
	Output  int64 `json:"output"`
}

// ProviderList is the body of GET /provider.
type ProviderList struct {
	All       []ProviderInfo    `json:"all"`
	Default   map[string]string `json:"default"`
	Connected []string          `json:"connected"`
}

// ConfigProviderList is the body of GET /config/providers.
type ConfigProviderList struct {
	Providers []ProviderInfo    `json:"providers"`
	Default   map[string]string `json:"default"`
}
