package keys

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func TestStoredKeys(t *testing.T) {
	t.Run("a key is written to a file only its owner can read and read back after a restart", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		s := open(t, path)
		if err := s.Set("openai", "sk-one", nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Set("anthropic", "sk-ant-two", map[string]string{"note": "x"}); err != nil {
			t.Fatal(err)
		}
		if m := mode(t, path); m != 0o600 {
			t.Fatalf("mode %o, want 600", m)
		}
		want := map[string]string{"openai": "sk-one", "anthropic": "sk-ant-two"}
		if diff := cmp.Diff(want, open(t, path).Keys()); diff != "" {
			t.Fatalf("after reopening (-want +got):\n%s", diff)
		}
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("temporary files were left: %v", entries)
		}
	})

	t.Run("a removed key is gone from memory and from the file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		s := open(t, path)
		if err := s.Set("openai", "sk-one", nil); err != nil {
			t.Fatal(err)
		}
		if had, err := s.Remove("openai"); err != nil || !had {
			t.Fatalf("Remove = %v, %v", had, err)
		}
		if had, err := s.Remove("openai"); err != nil || had {
			t.Fatalf("a second Remove = %v, %v", had, err)
		}
		if len(s.Keys()) != 0 || len(open(t, path).Keys()) != 0 {
			t.Fatal("the key survived its removal")
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "sk-one") {
			t.Fatalf("the file still holds the key: %s", raw)
		}
	})

	t.Run("entries tandem does not use, like an OAuth credential, are kept", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		oauth := `{"type":"oauth","refresh":"r","access":"a","expires":1}`
		if err := os.WriteFile(path, []byte(`{"copilot":`+oauth+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		s := open(t, path)
		if err := s.Set("openai", "sk-one", nil); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"openai": "sk-one"}, s.Keys()); diff != "" {
			t.Errorf("keys (-want +got):\n%s", diff)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var file map[string]map[string]any
		if err := json.Unmarshal(raw, &file); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"type": "oauth", "refresh": "r", "access": "a", "expires": 1.0}
		if diff := cmp.Diff(want, file["copilot"]); diff != "" {
			t.Errorf("the OAuth entry was not kept (-want +got):\n%s", diff)
		}
	})

	t.Run("a file others can read is tightened when opened", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, []byte(`{"openai":{"type":"api","key":"sk-one"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		open(t, path)
		if m := mode(t, path); m != 0o600 {
			t.Fatalf("mode %o, want 600", m)
		}
	})

	t.Run("a corrupt file is an error that does not quote it", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, []byte(`{"openai": sk-secret-value`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path)
		if err == nil || strings.Contains(err.Error(), "sk-secret") {
			t.Fatalf("Open = %v", err)
		}
	})
}

func TestBadKeysAndProvidersAreRefusedWithoutQuotingTheKey(t *testing.T) {
	tests := []struct {
		name, provider, key string
	}{
		{"an empty key", "openai", ""},
		{"a key with a newline, which would break the request header", "openai", "sk-abc\nX-Injected: 1"},
		{"a key with a space", "openai", "sk-abc def"},
		{"a key too long to be real", "openai", strings.Repeat("k", maxKey+1)},
		{"a provider ID with a slash", "open/ai", "sk-abc"},
		{"an empty provider ID", "", "sk-abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			s := open(t, path)
			err := s.Set(tt.provider, tt.key, nil)
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("Set = %v, want an Invalid error", err)
			}
			if tt.key != "" && strings.Contains(err.Error(), tt.key) {
				t.Errorf("the error quotes the key: %v", err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("a refused key wrote the file: %v", err)
			}
		})
	}
}
