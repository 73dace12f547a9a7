package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `tandem trust` as a user runs it: trust a directory, see it listed, stop trusting it.
func TestTrustAddsListsAndRemovesADirectory(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	project := t.TempDir()
	t.Chdir(project)
	var out bytes.Buffer
	list := func() string {
		t.Helper()
		out.Reset()
		if err := TrustList(&out); err != nil {
			t.Fatalf("TrustList: %v", err)
		}
		return out.String()
	}
	if got := list(); got != "" {
		t.Fatalf("trusted before anything was trusted: %q", got)
	}

	t.Run("trusting the current directory names it and the file that lists it", func(t *testing.T) {
		out.Reset()
		if err := Trust(&out, ".", false); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "tandem")
		if !strings.HasPrefix(out.String(), "trusted: "+project+" (") || !strings.Contains(out.String(), file) {
			t.Fatalf("printed %q, want the directory and a file under %s", out.String(), file)
		}
		if got := list(); got != project+"\n" {
			t.Fatalf("--list printed %q, want %s", got, project)
		}
	})
	t.Run("removing it leaves nothing trusted", func(t *testing.T) {
		out.Reset()
		if err := Trust(&out, project, true); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "no longer trusted: "+project+" (") {
			t.Fatalf("printed %q", out.String())
		}
		if got := list(); got != "" {
			t.Fatalf("--list printed %q after the removal", got)
		}
	})
}
