package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tailscale/hujson"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// FileNames are the names a configuration file may have, lowest precedence first: when a
// directory holds both, tandem.json wins key by key.
var fileNames = [...]string{"tandem.jsonc", "tandem.json"}

// envLayer names the environment variables that override the files.
var envLayer = []struct {
	variable string
	pointer  []string
}{
	{"OPENAI_API_KEY", []string{"provider", "openai", "options", "apiKey"}},
	{"OPENAI_BASE_URL", []string{"provider", "openai", "options", "baseURL"}},
	{"ANTHROPIC_API_KEY", []string{"provider", "anthropic", "options", "apiKey"}},
	{"ANTHROPIC_BASE_URL", []string{"provider", "anthropic", "options", "baseURL"}},
	{"TANDEM_MODEL", []string{"model"}},
}

// Loader reads and patches the configuration seen from one project directory. Keep one Loader per
// directory: it serialises Patch so that concurrent PATCH /config requests never lose an update.
type Loader struct {
	dir    string
	env    func(string) string
	mu     sync.Mutex
	checks []func(Config) error
	keys   func() map[string]string
	models func(Config, string) bool
}

// NewLoader returns a Loader for the project in dir. env looks up environment variables
// (os.Getenv in production); it is a parameter so tests and embedders control it.
func NewLoader(dir string, env func(string) string) *Loader {
	if env == nil {
		env = func(string) string { return "" }
	}
	return &Loader{dir: dir, env: env}
}

// Check adds a validation that Load and Patch run on the merged configuration, for the parts
// other packages own (the permission rules, the provider registry). Patch writes nothing when a
// check fails. An error with a Pointer() string method naming the value at fault (a JSON pointer)
// is reported at the file, line and column that set it. Call it before the Loader is shared.
func (l *Loader) Check(fn func(Config) error) {
	l.checks = append(l.checks, fn)
}

// Keys adds the API keys stored through PUT /auth/{providerID} (provider ID to key) as the
// highest layer: a stored key replaces the environment's and the files' key of that provider, as
// the key the user entered last. Keys of providers that are neither built in nor configured are
// left out. Call it before the Loader is shared.
func (l *Loader) Keys(fn func() map[string]string) {
	l.keys = fn
}

// Models adds the test of an untrusted project's `model` and `small_model`: fn reports whether
// "provider/model" is one the configuration (the user's providers) offers. One it does not offer
// is ignored and reported under untrusted, so the user's default applies instead of a model that
// would fail every prompt. Call it before the Loader is shared.
func (l *Loader) Models(fn func(cfg Config, model string) bool) {
	l.models = fn
}

// UserDir is where the user's configuration lives: $XDG_CONFIG_HOME/tandem, by default
// ~/.config/tandem. It is empty when neither variable is set.
func UserDir(env func(string) string) string {
	if x := env("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "tandem")
	}
	if h := env("HOME"); h != "" {
		return filepath.Join(h, ".config", "tandem")
	}
	return ""
}

// Load reads every layer and returns the merged configuration.
func (l *Loader) Load() (Config, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	layers, err := l.fileLayers(nil)
	if err != nil {
		return Config{}, err
	}
	return l.merge(layers)
}

// layer is one source of configuration.
type layer struct {
	name string // a file path, or "environment"
	raw  []byte // the file as written, for positions and for patching
	tree map[string]any
	// order is the member order of the file's objects (nil for layers that are not files).
	order keyOrder
	// shown is tree as GET /config shows it: {env:VAR} as written instead of its value, so a
	// client never reads a secret the file only named. Nil when the file names no variable.
	shown map[string]any
	// untrusted marks a project file of a directory the user has not trusted; ignored lists what
	// it set and was refused (JSON pointers).
	untrusted bool
	ignored   []string
}

// shownTree is the layer as GET /config shows it.
func (ly layer) shownTree() map[string]any {
	if ly.shown != nil {
		return ly.shown
	}
	return ly.tree
}

// fileLayers reads the user's and the project's files. override, when set, replaces the content of
// the file at that path (Patch validates a file before writing it). A project the user has not
// trusted has its layers restricted: see restrict.
func (l *Loader) fileLayers(override *layer) ([]layer, error) {
	layers, err := l.readLayers(UserDir(l.env), override, l.env)
	if err != nil {
		return nil, err
	}
	// A user file that PatchUser is about to create ranks with the user's files, below the project's.
	if override != nil && UserDir(l.env) != "" && filepath.Dir(override.name) == filepath.Clean(UserDir(l.env)) && !containsLayer(layers, override.name) {
		layers = append(layers, *override)
	}
	if l.dir != "" && canonical(l.dir) != canonical(UserDir(l.env)) {
		isTrusted := trusted(l.dir, trustList(layers))
		env := l.env
		if !isTrusted {
			env = func(string) string { return "" } // an untrusted file learns no secret from {env:VAR}
		}
		project, err := l.readLayers(l.dir, override, env)
		if err != nil {
			return nil, err
		}
		for i := range project {
			if !isTrusted {
				project[i].untrusted = true
				project[i].ignored = restrict(project[i].tree)
				if project[i].shown != nil {
					restrict(project[i].shown)
				}
			}
		}
		layers = append(layers, project...)
	}
	if override != nil && !containsLayer(layers, override.name) {
		layers = append(layers, *override)
	}
	return layers, nil
}

// userLayers reads the user's files alone.
func (l *Loader) userLayers() ([]layer, error) {
	return l.readLayers(UserDir(l.env), nil, l.env)
}

// readLayers parses the configuration files of one directory, lowest precedence first.
func (l *Loader) readLayers(dir string, override *layer, env func(string) string) ([]layer, error) {
	var layers []layer
	if dir == "" {
		return nil, nil
	}
	for _, name := range fileNames {
		path := filepath.Join(dir, name)
		if override != nil && override.name == path {
			ly, err := parseLayer(path, override.raw, env)
			if err != nil {
				return nil, err
			}
			layers = append(layers, ly)
			continue
		}
		raw, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, errs.Named(errs.Invalid, "ConfigInvalidError", "reading %s: %v", path, err)
		}
		ly, err := parseLayer(path, raw, env)
		if err != nil {
			return nil, err
		}
		layers = append(layers, ly)
	}
	return layers, nil
}

func containsLayer(layers []layer, name string) bool {
	for _, ly := range layers {
		if ly.name == name {
			return true
		}
	}
	return false
}

// parseLayer parses one JSONC file, substitutes {env:VAR} in its strings and checks that every
// modelled key has the right type, so that errors point into the file that has them.
func parseLayer(path string, raw []byte, env func(string) string) (layer, error) {
	// hujson's tree aliases its input, and Standardize below blanks comments in place.
	ast, err := hujson.Parse(bytes.Clone(raw))
	if err != nil {
		return layer{}, syntaxError(path, err)
	}
	ast.Standardize()
	std := ast.Pack()
	var tree any
	dec := json.NewDecoder(bytes.NewReader(std))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return layer{}, positionError(path, raw, 0, err.Error())
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return layer{}, positionError(path, raw, ast.StartOffset+len(ast.BeforeExtra), "the configuration must be a JSON object")
	}
	var typed Config
	if err := json.Unmarshal(std, &typed); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return layer{}, positionError(path, raw, valueStart(std, int(te.Offset)),
				fmt.Sprintf("%s: expected %s, got %s", te.Field, typeName(te.Type.String()), te.Value))
		}
		return layer{}, positionError(path, raw, 0, err.Error())
	}
	order, err := orderOf(std)
	if err != nil {
		return layer{}, positionError(path, raw, 0, err.Error())
	}
	var shown map[string]any
	if bytes.Contains(std, []byte("{env:")) {
		shown = cloneJSON(obj).(map[string]any)
	}
	substituteEnv(obj, env)
	return layer{name: path, raw: raw, tree: obj, order: order, shown: shown}, nil
}

// typeName turns Go type names into the JSON words a user knows.
func typeName(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case goType == "bool" || goType == "*bool":
		return "true or false"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

// valueStart moves an offset that encoding/json reports at the end of a value back to its start.
func valueStart(std []byte, end int) int {
	if end > len(std) {
		end = len(std)
	}
	i := end
	for i > 0 && std[i-1] != ':' && std[i-1] != '[' && std[i-1] != ',' {
		i--
	}
	for i < end && (std[i] == ' ' || std[i] == '\t' || std[i] == '\n' || std[i] == '\r') {
		i++
	}
	return i
}

var hujsonPosition = regexp.MustCompile(`^hujson: line (\d+), column (\d+): (.*)$`)

func syntaxError(path string, err error) error {
	m := hujsonPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return fileError(path, 0, 0, err.Error())
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	return fileError(path, line, col, m[3])
}

func positionError(path string, raw []byte, offset int, msg string) error {
	line, col := lineColumn(raw, offset)
	return fileError(path, line, col, msg)
}

// fileError is the one error shape for a bad configuration: the message names the place, and the
// data carries it for clients that want to highlight it.
func fileError(path string, line, col int, msg string) error {
	where := path
	if line > 0 {
		where = fmt.Sprintf("%s:%d:%d", path, line, col)
	}
	e := errs.Named(errs.Invalid, "ConfigInvalidError", "%s: %s", where, msg)
	e = e.With("path", path)
	if line > 0 {
		e = e.With("line", line).With("column", col)
	}
	return e
}

func lineColumn(b []byte, offset int) (line, col int) {
	if offset > len(b) {
		offset = len(b)
	}
	before := b[:offset]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = 1 + offset - (bytes.LastIndexByte(before, '\n') + 1)
	return line, col
}

var envReference = regexp.MustCompile(`\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// substituteEnv replaces {env:VAR} inside string values, as OpenCode does. It works on parsed
// strings, never on the file's text, so a value containing quotes cannot break the JSON.
func substituteEnv(v any, env func(string) string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			v[k] = substituteEnv(child, env)
		}
	case []any:
		for i, child := range v {
			v[i] = substituteEnv(child, env)
		}
	case string:
		if strings.Contains(v, "{env:") {
			return envReference.ReplaceAllStringFunc(v, func(ref string) string {
				return env(envReference.FindStringSubmatch(ref)[1])
			})
		}
	}
	return v
}

// environmentLayer turns the environment variables tandem knows into one more layer.
func (l *Loader) environmentLayer() layer {
	tree := map[string]any{}
	for _, e := range envLayer {
		value := l.env(e.variable)
		if value == "" {
			continue
		}
		node := tree
		for _, key := range e.pointer[:len(e.pointer)-1] {
			child, ok := node[key].(map[string]any)
			if !ok {
				child = map[string]any{}
				node[key] = child
			}
			node = child
		}
		node[e.pointer[len(e.pointer)-1]] = value
	}
	return layer{name: "environment", tree: tree}
}

// keysLayer turns the stored API keys into a layer, and says which providers it sets.
func (l *Loader) keysLayer(files []layer) (layer, map[string]bool) {
	ly := layer{name: "stored API keys", tree: map[string]any{}}
	if l.keys == nil {
		return ly, nil
	}
	builtin := map[string]bool{}
	for _, e := range envLayer {
		if e.pointer[0] == "provider" {
			builtin[e.pointer[1]] = true
		}
	}
	configured := func(id string) bool {
		for _, f := range files {
			if providers, ok := f.tree["provider"].(map[string]any); ok {
				if _, ok := providers[id]; ok {
					return true
				}
			}
		}
		return false
	}
	providers := map[string]any{}
	stored := map[string]bool{}
	for id, key := range l.keys() {
		if key == "" || (!builtin[id] && !configured(id)) {
			continue
		}
		providers[id] = map[string]any{"options": map[string]any{"apiKey": key}}
		stored[id] = true
	}
	if len(providers) > 0 {
		ly.tree["provider"] = providers
	}
	return ly, stored
}

// merge deep-merges the layers over each other, adds the environment and the stored keys, and
// validates the result.
func (l *Loader) merge(files []layer) (Config, error) {
	keys, stored := l.keysLayer(files)
	layers := append(files[:len(files):len(files)], l.environmentLayer(), keys)
	merged, shown := map[string]any{}, map[string]any{}
	order := keyOrder{}
	for _, ly := range layers {
		merged = deepMerge(merged, ly.tree).(map[string]any)
		shown = deepMerge(shown, ly.shownTree()).(map[string]any)
		order.overlay(ly.order, ly.tree, "")
	}
	// "trust" is the user's list of trusted directories (tandem trust --list shows it), not
	// configuration of this project.
	delete(merged, "trust")
	delete(shown, "trust")
	// "sandbox" is the user's; the document shows what is in effect.
	sb, err := sandboxSetting(files, UserDir(l.env))
	if err != nil {
		return Config{}, err
	}
	if _, set := merged["sandbox"]; set {
		doc := map[string]any{"mode": string(sb.Mode), "network": sb.Network, "mcp": sb.MCP}
		if len(sb.Writable) > 0 {
			doc["writable"] = sb.Writable
		}
		merged["sandbox"] = doc
		shown["sandbox"] = doc
	}
	// Written in the files' order: permission rules are read in order, and the last match wins.
	doc, err := marshalOrdered(merged, order)
	if err != nil {
		return Config{}, errs.Named(errs.Invalid, "ConfigInvalidError", "encoding the merged configuration: %v", err)
	}
	shownDoc, err := marshalOrdered(shown, order)
	if err != nil {
		return Config{}, errs.Named(errs.Invalid, "ConfigInvalidError", "encoding the merged configuration: %v", err)
	}
	var cfg Config
	if err := json.Unmarshal(doc, &cfg); err != nil {
		// Each file was type-checked alone, so only the environment can get here.
		return Config{}, fileError("environment", 0, 0, err.Error())
	}
	if l.models != nil && l.ignoreUnknownModels(files, cfg) {
		return l.merge(files) // once more without them; each key is dropped at most once
	}
	if pointer, err := cfg.validate(); err != nil {
		return Config{}, locate(layers, pointer, err.Error())
	}
	cfg.Document, cfg.Shown = doc, shownDoc
	cfg.StoredKeys = stored
	cfg.Sandbox = sb
	cfg.Untrusted = untrustedReport(l.dir, files)
	if cfg.Untrusted != nil {
		if cfg.Document, err = untrustedDocument(doc, cfg.Untrusted); err != nil {
			return Config{}, err
		}
		if cfg.Shown, err = untrustedDocument(shownDoc, cfg.Untrusted); err != nil {
			return Config{}, err
		}
	}
	for _, check := range l.checks {
		if err := check(cfg); err != nil {
			// A check that names the value at fault gets its file, line and column reported.
			var at interface{ Pointer() string }
			if errors.As(err, &at) && at.Pointer() != "" {
				return Config{}, locate(layers, at.Pointer(), err.Error())
			}
			return Config{}, errs.Named(errs.Invalid, "ConfigInvalidError", "%v", err)
		}
	}
	return cfg, nil
}

// locate finds the highest-precedence layer that sets pointer and names the place in it.
func locate(layers []layer, pointer, msg string) error {
	for i := len(layers) - 1; i >= 0; i-- {
		ly := layers[i]
		if ly.raw == nil {
			if hasPointer(ly.tree, pointer) {
				return fileError(ly.name, 0, 0, msg)
			}
			continue
		}
		ast, err := hujson.Parse(ly.raw)
		if err != nil {
			continue
		}
		if v := ast.Find(pointer); v != nil {
			return positionError(ly.name, ly.raw, int(v.StartOffset), msg)
		}
	}
	return fileError("configuration", 0, 0, msg)
}

func hasPointer(tree map[string]any, pointer string) bool {
	var node any = tree
	for _, key := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
		obj, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = obj[key]; !ok {
			return false
		}
	}
	return true
}

// deepMerge lays over on top of base: objects merge key by key, everything else replaces.
func deepMerge(base, over any) any {
	b, bok := base.(map[string]any)
	o, ook := over.(map[string]any)
	if !bok || !ook {
		return cloneJSON(over)
	}
	out := make(map[string]any, len(b)+len(o))
	for k, v := range b {
		out[k] = v
	}
	for k, v := range o {
		if existing, ok := out[k]; ok {
			out[k] = deepMerge(existing, v)
		} else {
			out[k] = cloneJSON(v)
		}
	}
	return out
}

func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, child := range v {
			out[k] = cloneJSON(child)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, child := range v {
			out[i] = cloneJSON(child)
		}
		return out
	}
	return v
}
