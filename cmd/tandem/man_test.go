package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/manpage"
	"github.com/tandem-dev/tandem/internal/testenv"
)

const regenerateMan = "regenerate them with: go run ./cmd/tandem man docs/man"

// TestManPagesMatchTheCommands fails when docs/man no longer says what the commands' --help says:
// a page that differs, a command without a page, or a page of a command that is gone.
func TestManPagesMatchTheCommands(t *testing.T) {
	committed := filepath.Join(testenv.ModuleRoot(t), "docs", "man")
	want := manpage.Pages(newRootCommand())
	files, err := filepath.Glob(filepath.Join(committed, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		page, ok := want[name]
		switch {
		case !ok:
			t.Errorf("docs/man/%s documents a command that no longer exists; %s", name, regenerateMan)
		case !bytes.Equal(got, page):
			t.Errorf("docs/man/%s differs from what the commands say; %s", name, regenerateMan)
		}
	}
	for name := range want {
		if !slices.Contains(files, filepath.Join(committed, name)) {
			t.Errorf("docs/man/%s is missing; %s", name, regenerateMan)
		}
	}
}

// TestTheManCommandWritesEveryPage runs the hidden command as the regeneration line does: it writes a
// page per visible command, removes a stale page, and groff reads every page without a warning
// (-k: as UTF-8, as man does).
func TestTheManCommandWritesEveryPage(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "tandem-gone.1")
	if err := os.WriteFile(stale, []byte(".TH GONE 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := newRootCommand()
	root.SetArgs([]string{"man", dir})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale page is still there (stat: %v)", err)
	}
	for _, name := range []string{"tandem.1", "tandem-serve.1", "tandem-run.1", "tandem-attach.1", "tandem-completion-bash.1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("no %s: %v", name, err)
		}
	}
	for _, name := range []string{"tandem-man.1", "tandem-help.1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written, but the command is hidden", name)
		}
	}

	groff := testenv.Program(t, "groff", "apt-get install groff-base")
	pages, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		ctx, cancel := context.WithTimeout(t.Context(), testenv.Patience)
		out, err := exec.CommandContext(ctx, groff, "-k", "-man", "-Tutf8", "-ww", "-z", page).CombinedOutput()
		cancel()
		if err != nil || len(out) > 0 {
			t.Errorf("groff on %s: %v\n%s", filepath.Base(page), err, out)
		}
	}
}

// TestManPageOfServe checks one page's sections, so a reader of `man tandem-serve` gets the flags
// --help lists, with their defaults.
func TestManPageOfServe(t *testing.T) {
	page := string(manpage.Pages(newRootCommand())["tandem-serve.1"])
	for _, want := range []string{".TH TANDEM-SERVE 1", ".SH NAME\ntandem-serve \\- ", ".SH SYNOPSIS\n.B tandem serve", ".SH OPTIONS\n", "\\fB\\-\\-port\\fR", ".SH SEE ALSO\n\\fBtandem\\fP(1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}
