package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Untrusted reports what a project's own configuration asked for and was refused, because the user
// has not trusted that directory (GET /config shows it as "untrusted").
type Untrusted struct {
	Directory string `json:"directory"`
	// File is the first file in Files, for readers of one file.
	File string `json:"file"`
	// Ignored is every JSON pointer refused, of all the files (tandem.jsonc and tandem.json).
	Ignored []string `json:"ignored"`
	// Files is each project file that was (partly) ignored and what was ignored in it.
	Files []UntrustedFile `json:"files"`
}

// UntrustedFile is one project file and what it set that was refused.
type UntrustedFile struct {
	File    string   `json:"file"`
	Ignored []string `json:"ignored"` // JSON pointers into this file
}

// untrustedReport gathers what the untrusted project files set and was refused; nil when nothing was.
func untrustedReport(dir string, layers []layer) *Untrusted {
	var u *Untrusted
	for _, ly := range layers {
		if len(ly.ignored) == 0 {
			continue
		}
		if u == nil {
			u = &Untrusted{Directory: dir, File: ly.name}
		}
		u.Files = append(u.Files, UntrustedFile{File: ly.name, Ignored: ly.ignored})
		for _, p := range ly.ignored {
			if !slices.Contains(u.Ignored, p) {
				u.Ignored = append(u.Ignored, p)
			}
		}
	}
	if u != nil {
		sort.Strings(u.Ignored)
	}
	return u
}

// ignoreUnknownModels drops from the untrusted project files a `model` or `small_model` that the
// configuration's own providers do not offer, and reports it as ignored; it says whether it dropped
// anything.
func (l *Loader) ignoreUnknownModels(layers []layer, cfg Config) bool {
	dropped := false
	for i := range layers {
		ly := &layers[i]
		if !ly.untrusted {
			continue
		}
		for _, key := range []string{"model", "small_model"} {
			model, ok := ly.tree[key].(string)
			if !ok || l.models(cfg, model) {
				continue
			}
			delete(ly.tree, key)
			if ly.shown != nil {
				delete(ly.shown, key)
			}
			ly.ignored = append(ly.ignored, "/"+key)
			sort.Strings(ly.ignored)
			dropped = true
		}
	}
	return dropped
}

// A project file may always tighten: these keys it keeps while untrusted. permission keeps only its
// deny rules; sandbox can only tighten wherever it comes from (sandboxSetting); everything else (providers and their URLs, MCP servers that start processes or contact
// URLs, agents, server settings, ask/allow rules) waits for `tandem trust DIR`.
var untrustedKeys = []string{"$schema", "model", "small_model", "username", "permission", "sandbox"}

// trustList reads the "trust" directories from the user's layers.
func trustList(layers []layer) []string {
	var dirs []string
	for _, ly := range layers {
		list, _ := ly.tree["trust"].([]any)
		for _, v := range list {
			if s, ok := v.(string); ok && filepath.IsAbs(s) {
				dirs = append(dirs, canonical(s))
			}
		}
	}
	return dirs
}

// canonical is p cleaned with its symlinks evaluated where it exists.
func canonical(p string) string {
	p = filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// trusted reports whether dir is, or is inside, one of the trusted directories.
func trusted(dir string, trust []string) bool {
	dir = canonical(dir)
	for _, t := range trust {
		if rel, err := filepath.Rel(t, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// restrict removes from an untrusted project layer everything that could loosen the user's rules,
// start a process or contact a URL, and returns the JSON pointers of what it removed.
func restrict(tree map[string]any) []string {
	var ignored []string
	for key, v := range tree {
		if !slices.Contains(untrustedKeys, key) {
			ignored = append(ignored, "/"+key)
			delete(tree, key)
			continue
		}
		if key != "permission" {
			continue
		}
		switch p := v.(type) {
		case string:
			if p != "deny" {
				ignored = append(ignored, "/permission")
				delete(tree, key)
			}
		case map[string]any:
			for tool, rule := range p {
				if tool == "timeout" {
					continue // how long a request waits loosens nothing: every unanswered request is rejected
				}
				switch r := rule.(type) {
				case string:
					if r != "deny" {
						ignored = append(ignored, "/permission/"+tool)
						delete(p, tool)
					}
				case map[string]any:
					for pattern, action := range r {
						if action != "deny" {
							ignored = append(ignored, "/permission/"+tool+"/"+pattern)
							delete(r, pattern)
						}
					}
				default:
					ignored = append(ignored, "/permission/"+tool)
					delete(p, tool)
				}
			}
		default:
			ignored = append(ignored, "/permission")
			delete(tree, key)
		}
	}
	sort.Strings(ignored)
	return ignored
}

// Trust adds dir to the user's trust list (creating the user's tandem.json when there is none),
// keeping the file's comments and formatting. It returns the file it wrote.
func Trust(env func(string) string, dir string) (string, error) {
	return editTrust(env, dir, true)
}

// Untrust removes dir from the user's trust list.
func Untrust(env func(string) string, dir string) (string, error) {
	return editTrust(env, dir, false)
}

// TrustedDirs lists the user's trusted directories.
func TrustedDirs(env func(string) string) ([]string, error) {
	l := NewLoader("", env)
	layers, err := l.userLayers()
	if err != nil {
		return nil, err
	}
	return trustList(layers), nil
}

// Trusted reports whether the user has trusted dir, or a directory above it (`tandem trust DIR`):
// only then may the project's own files start processes.
func Trusted(env func(string) string, dir string) (bool, error) {
	dirs, err := TrustedDirs(env)
	if err != nil {
		return false, err
	}
	return trusted(dir, dirs), nil
}

func editTrust(env func(string) string, dir string, add bool) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", errs.E(errs.Invalid, "trust needs an absolute directory, got %q", dir)
	}
	dir = canonical(dir)
	if add {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return "", errs.E(errs.Invalid, "%s is not a directory", dir)
		}
	}
	userDir := UserDir(env)
	if userDir == "" {
		return "", errs.E(errs.Invalid, "no user configuration directory: set HOME or XDG_CONFIG_HOME")
	}
	path, raw, err := fileIn(userDir)
	if err != nil {
		return "", err
	}
	ly, err := parseLayer(path, raw, env)
	if err != nil {
		return "", err
	}
	list := trustList([]layer{ly})
	switch {
	case add && slices.Contains(list, dir), !add && !slices.Contains(list, dir):
		return path, nil
	case add:
		list = append(list, dir)
	default:
		list = slices.DeleteFunc(list, func(s string) bool { return s == dir })
	}
	values := make([]any, len(list))
	for i, s := range list {
		values[i] = s
	}
	updated, err := applyMergePatch(path, raw, map[string]any{"trust": values}, nil)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(userDir, 0o700); err != nil {
		return "", err
	}
	return path, writeAtomic(path, updated)
}

// untrustedDocument adds the "untrusted" report to the merged document GET /config serves.
func untrustedDocument(doc []byte, u *Untrusted) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	b, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	m["untrusted"] = b
	return json.Marshal(m)
}
