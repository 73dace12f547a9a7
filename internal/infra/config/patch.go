package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/tailscale/hujson"

	"github.com/tandem-dev/tandem/internal/base/atomicfile"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Patch deep-merges patch (a JSON object) into the project's file and returns the new merged
// configuration. Objects merge key by key, other values replace, and null removes a key (JSON
// Merge Patch, RFC 7386), so a client can also unset what it set. The file keeps its comments and
// layout except where values change. The result is validated before anything is written, and the
// write is atomic: a failed Patch leaves the file as it was. checks run on the merged result after
// the Loader's own, with the patch as sent (a JSON object), for what only a change is held to.
func (l *Loader) Patch(patch []byte, checks ...func(patch map[string]any, merged Config) error) (Config, error) {
	return l.patch(func(map[string]any) (string, []byte, error) { return fileIn(l.dir) }, patch, checks)
}

// PatchUser is Patch on the user's own file ($XDG_CONFIG_HOME/tandem/tandem.json, created when
// there is none) instead of the project's: what only the user may set, such as a provider's
// baseURL, which an untrusted project's file is refused. The trust list is refused here: it is
// edited by `tandem trust` alone, so that no client of the server trusts a directory.
func (l *Loader) PatchUser(patch []byte, checks ...func(patch map[string]any, merged Config) error) (Config, error) {
	return l.patch(func(obj map[string]any) (string, []byte, error) {
		if _, ok := obj["trust"]; ok {
			return "", nil, errs.E(errs.Invalid, "trust: the trusted directories are changed with `tandem trust DIR`, not through the API")
		}
		dir := UserDir(l.env)
		if dir == "" {
			return "", nil, errs.E(errs.Invalid, "no user configuration directory: set HOME or XDG_CONFIG_HOME")
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", nil, errs.E(errs.Invalid, "creating %s: %v", dir, err)
		}
		return fileIn(dir)
	}, patch, checks)
}

// patch merges a patch into the file target names (given the decoded patch).
func (l *Loader) patch(target func(patch map[string]any) (string, []byte, error), patch []byte, checks []func(patch map[string]any, merged Config) error) (Config, error) {
	var p any
	dec := json.NewDecoder(bytes.NewReader(patch))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return Config{}, errs.E(errs.Invalid, "the configuration patch is not valid JSON: %v", err)
	}
	if dec.More() {
		return Config{}, errs.E(errs.Invalid, "the configuration patch must be one JSON object")
	}
	obj, ok := p.(map[string]any)
	if !ok {
		return Config{}, errs.E(errs.Invalid, "the configuration patch must be a JSON object")
	}
	order, err := orderOf(patch)
	if err != nil {
		return Config{}, errs.E(errs.Invalid, "the configuration patch is not valid JSON: %v", err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()

	path, raw, err := target(obj)
	if err != nil {
		return Config{}, err
	}
	updated, err := applyMergePatch(path, raw, obj, order)
	if err != nil {
		return Config{}, err
	}
	ly, err := parseLayer(path, updated, l.env)
	if err != nil {
		return Config{}, err
	}
	layers, err := l.fileLayers(&ly)
	if err != nil {
		return Config{}, err
	}
	cfg, err := l.merge(layers)
	if err != nil {
		return Config{}, err
	}
	for _, check := range checks {
		if err := check(obj, cfg); err != nil {
			return Config{}, err
		}
	}
	if err := writeAtomic(path, updated); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// fileIn returns the file a patch of dir's configuration writes: its highest-precedence existing
// file, or a new tandem.json.
func fileIn(dir string) (path string, raw []byte, err error) {
	for i := len(fileNames) - 1; i >= 0; i-- {
		path = filepath.Join(dir, fileNames[i])
		raw, err = os.ReadFile(path)
		if err == nil {
			return path, raw, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, errs.E(errs.Invalid, "reading %s: %v", path, err)
		}
	}
	return filepath.Join(dir, "tandem.json"), []byte("{}\n"), nil
}

// applyMergePatch edits the file's syntax tree with RFC 6902 operations derived from the merge
// patch, so that hujson keeps the comments around every value it does not replace. order is the
// patch's member order: new keys are added in it, as rules are read in order.
func applyMergePatch(path string, raw []byte, patch map[string]any, order keyOrder) ([]byte, error) {
	ast, err := hujson.Parse(bytes.Clone(raw))
	if err != nil {
		return nil, syntaxError(path, err)
	}
	std, err := hujson.Standardize(bytes.Clone(raw)) // hujson edits its input in place
	if err != nil {
		return nil, syntaxError(path, err)
	}
	var current any
	dec := json.NewDecoder(bytes.NewReader(std))
	dec.UseNumber()
	if err := dec.Decode(&current); err != nil {
		return nil, fileError(path, 0, 0, err.Error())
	}
	if _, ok := current.(map[string]any); !ok {
		return nil, fileError(path, 1, 1, "the configuration must be a JSON object")
	}
	var ops []map[string]any
	var added []newMember
	ops, err = patchOps(ops, &added, "", current, patch, order)
	if err != nil {
		return nil, errs.E(errs.Invalid, "encoding the configuration patch: %v", err)
	}
	if len(ops) == 0 {
		return raw, nil
	}
	opsJSON, err := json.Marshal(ops)
	if err != nil {
		return nil, errs.E(errs.Invalid, "encoding the configuration patch: %v", err)
	}
	if err := ast.Patch(opsJSON); err != nil {
		return nil, errs.E(errs.Invalid, "patching %s: %v", path, err)
	}
	// Only what changed is rewritten: no reformatting of the user's file. A new key is laid out
	// like the sibling before it.
	for _, m := range added {
		layOutLikeSibling(&ast, m)
	}
	return ast.Pack(), nil
}

// newMember is a key a patch adds to the object at parent (a JSON pointer).
type newMember struct{ parent, key string }

// layOutLikeSibling gives a member the patch added the whitespace of the member before it (its own
// line and indentation, the space after the colon) and keeps a trailing comma the object had.
// Members are laid out in order, so a run of new keys each follows the one before.
func layOutLikeSibling(root *hujson.Value, m newMember) {
	parent := root.Find(m.parent)
	if parent == nil {
		return
	}
	obj, ok := parent.Value.(*hujson.Object)
	if !ok {
		return
	}
	for i := range obj.Members {
		name, ok := obj.Members[i].Name.Value.(hujson.Literal)
		if !ok || name.String() != m.key || i == 0 {
			continue
		}
		sibling, member := obj.Members[i-1], &obj.Members[i]
		before := sibling.Name.BeforeExtra
		if nl := bytes.LastIndexByte(before, '\n'); nl >= 0 && len(bytes.TrimSpace(before[nl:])) == 0 {
			member.Name.BeforeExtra = append(hujson.Extra(nil), before[nl:]...)
		} else if nl < 0 {
			member.Name.BeforeExtra = hujson.Extra(" ") // an object on one line stays on one line
		}
		if len(bytes.TrimSpace(sibling.Value.BeforeExtra)) == 0 {
			member.Value.BeforeExtra = append(hujson.Extra(nil), sibling.Value.BeforeExtra...)
		}
		if sibling.Value.AfterExtra != nil {
			// Non-nil marks a trailing comma when the member is last; new keys pass it along.
			member.Value.AfterExtra = hujson.Extra{}
		}
		return
	}
}

// patchOps turns a merge patch into JSON Patch operations against current, in the patch's order
// (order), and records the keys it adds.
func patchOps(ops []map[string]any, added *[]newMember, prefix string, current any, patch map[string]any, order keyOrder) ([]map[string]any, error) {
	cur, _ := current.(map[string]any)
	keys := make([]string, 0, len(patch))
	for _, k := range order[prefix] {
		if _, ok := patch[k]; ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	rest := make([]string, 0, len(patch)-len(keys))
	for k := range patch {
		if !slices.Contains(keys, k) {
			rest = append(rest, k) // a patch built in code has no order: its keys go in sorted order
		}
	}
	sort.Strings(rest)
	for _, k := range append(keys, rest...) {
		v := patch[k]
		ptr := prefix + "/" + escapePointer(k)
		existing, exists := cur[k]
		switch pv := v.(type) {
		case nil:
			if exists {
				ops = append(ops, map[string]any{"op": "remove", "path": ptr})
			}
		case map[string]any:
			if _, isObj := existing.(map[string]any); isObj {
				var err error
				if ops, err = patchOps(ops, added, ptr, existing, pv, order); err != nil {
					return nil, err
				}
				continue
			}
			value, err := marshalOrdered(dropNulls(pv), order.under(ptr))
			if err != nil {
				return nil, err
			}
			ops = append(ops, map[string]any{"op": "add", "path": ptr, "value": json.RawMessage(value)})
		default:
			ops = append(ops, map[string]any{"op": "add", "path": ptr, "value": v})
		}
		if v != nil && !exists {
			*added = append(*added, newMember{parent: prefix, key: k})
		}
	}
	return ops, nil
}

// dropNulls removes null members from an object that is added whole, as a merge patch would.
func dropNulls(v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(obj))
	for k, child := range obj {
		if child != nil {
			out[k] = dropNulls(child)
		}
	}
	return out
}

// writeAtomic replaces path with data, keeping the file's mode, so a reader never sees half a file
// and a crash never leaves one.
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.Write(path, data, atomicfile.Perm(path, 0o644)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
