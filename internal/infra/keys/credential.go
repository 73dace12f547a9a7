// Package keys keeps the API keys a user stored through PUT /auth/{providerID}: one JSON file,
// readable by its owner only (0600), in OpenCode's auth.json shape ({"openai": {"type": "api",
// "key": "..."}}). Every change replaces the file atomically (a temporary file, then a rename), so
// a crash leaves either the old keys or the new ones. Keys never appear in errors or logs.
package keys

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"unicode"

	"github.com/tandem-dev/tandem/internal/base/atomicfile"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// FileName is the file's name in the data directory.
const FileName = "auth.json"

// maxKey bounds a key's length; real keys are a few hundred bytes at most.
const maxKey = 4096

// validProvider is what a provider ID may look like (it becomes a config key and a path segment).
var validProvider = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// entry is one stored credential, as OpenCode writes it.
type entry struct {
	Type     string            `json:"type"`
	Key      string            `json:"key"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Store holds the stored keys in memory and on disk.
type Store struct {
	path string

	mu sync.Mutex
	// keys are the file's entries as written: an entry tandem does not use (an OpenCode OAuth
	// credential in a copied auth.json) is kept as it is.
	keys map[string]json.RawMessage
}

// Open reads the keys stored at path; a missing file is no keys. A file that others may read has
// its mode tightened to 0600.
func Open(path string) (*Store, error) {
	s := &Store{path: path, keys: map[string]json.RawMessage{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	if err := json.Unmarshal(raw, &s.keys); err != nil {
		// The message never quotes the file: it holds secrets.
		return nil, fmt.Errorf("credential: %s is not a JSON object of stored keys; fix or remove it", path)
	}
	if s.keys == nil {
		s.keys = map[string]json.RawMessage{}
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("credential: %s is readable by others and its mode cannot be changed: %w", path, err)
		}
	}
	return s, nil
}

// Path is the file the keys are stored in.
func (s *Store) Path() string { return s.path }

// CheckProvider refuses a provider ID that cannot name a stored key.
func CheckProvider(providerID string) error {
	if !validProvider.MatchString(providerID) {
		return errs.E(errs.Invalid, "providerID: letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit), got %q", providerID)
	}
	return nil
}

// checkKey refuses a key that cannot be sent in an HTTP header. The key itself is never quoted.
func checkKey(key string) error {
	switch {
	case key == "":
		return errs.E(errs.Invalid, "key: must not be empty")
	case len(key) > maxKey:
		return errs.E(errs.Invalid, "key: at most %d bytes, got %d", maxKey, len(key))
	}
	for _, r := range key {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII {
			return errs.E(errs.Invalid, "key: spaces, control characters and non-ASCII characters are not allowed in an API key")
		}
	}
	return nil
}

// Set stores key as providerID's API key, replacing any earlier one.
func (s *Store) Set(providerID, key string, metadata map[string]string) error {
	if err := CheckProvider(providerID); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := json.Marshal(entry{Type: "api", Key: key, Metadata: metadata})
	if err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	next := make(map[string]json.RawMessage, len(s.keys)+1)
	for id, e := range s.keys {
		next[id] = e
	}
	next[providerID] = e
	if err := s.write(next); err != nil {
		return err
	}
	s.keys = next
	return nil
}

// Remove deletes providerID's stored key and reports whether there was one.
func (s *Store) Remove(providerID string) (bool, error) {
	if err := CheckProvider(providerID); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[providerID]; !ok {
		return false, nil
	}
	next := make(map[string]json.RawMessage, len(s.keys))
	for id, e := range s.keys {
		if id != providerID {
			next[id] = e
		}
	}
	if err := s.write(next); err != nil {
		return false, err
	}
	s.keys = next
	return true, nil
}

// Keys returns the stored API keys by provider ID.
func (s *Store) Keys() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.keys))
	for id, raw := range s.keys {
		var e entry
		if json.Unmarshal(raw, &e) == nil && e.Type == "api" && e.Key != "" {
			out[id] = e.Key
		}
	}
	return out
}

// write replaces the file with keys, atomically and 0600 from the start.
func (s *Store) write(keys map[string]json.RawMessage) error {
	data, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	if err := atomicfile.Write(s.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	return nil
}
