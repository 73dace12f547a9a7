package files

import (
	"fmt"
	"slices"
	"testing"
)

func listingOf(paths ...string) *Listing {
	return finish(&Listing{Files: paths})
}

func TestSearchRanksTheFileANamePointsAtFirst(t *testing.T) {
	l := listingOf(
		"README.md",
		"cmd/tandem/main.go",
		"routes/routes.go",
		"routes/session.go",
		"session/service.go",
		"session/loop.go",
		"web/src/main.tsx",
		"docs/maintenance/notes.md",
		"internal/testdata/fixtures/sessionfile.txt",
		".github/workflows/ci.yml",
		"tool/grep.go",
		"files/fuzzy.go",
	)
	tests := []struct {
		name, query string
		want        string
	}{
		{"an exact file name wins", "main.go", "cmd/tandem/main.go"},
		{"a name without its extension wins", "loop", "session/loop.go"},
		{"a directory and a name together", "sess/loop", "session/loop.go"},
		{"letters of a name in order", "fzy", "files/fuzzy.go"},
		{"case does not matter", "readme", "README.md"},
		{"a name at the start beats one inside a word", "routes", "routes/routes.go"},
		{"a hidden file is found when asked for", "ci.yml", ".github/workflows/ci.yml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := l.Search(tt.query, KindFile, 5)
			if len(got) == 0 || got[0] != tt.want {
				t.Errorf("Search(%q) = %q, want %q first", tt.query, got, tt.want)
			}
		})
	}
}

func TestSearchReturnsOnlyWhatMatches(t *testing.T) {
	l := listingOf("a/b.go", "c/d.go", "src/x/y.ts")
	tests := []struct {
		name  string
		query string
		kind  Kind
		limit int
		want  []string
	}{
		{"characters out of order do not match", "og.b", KindFile, 10, []string{}},
		{"every word must match", "src ts", KindFile, 10, []string{"src/x/y.ts"}},
		{"directories end with a slash", "src/x", KindDirectory, 10, []string{"src/x/"}},
		{"all kinds include files and directories", "src", KindAll, 10, []string{"src/", "src/x/", "src/x/y.ts"}},
		{"the limit cuts the list", ".go", KindFile, 1, []string{"a/b.go"}},
		{"an empty query lists files in path order", "", KindFile, 2, []string{"a/b.go", "c/d.go"}},
		{"an empty query lists directories otherwise", "", KindAll, 10, []string{"a/", "c/", "src/", "src/x/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := l.Search(tt.query, tt.kind, tt.limit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Search(%q, %q, %d) = %q, want %q", tt.query, tt.kind, tt.limit, got, tt.want)
			}
		})
	}
}

func TestHiddenDirectoriesComeLastUnlessAskedFor(t *testing.T) {
	l := listingOf(".config/app/x", "config/y")
	if got := l.Search("config", KindDirectory, 10); !slices.Equal(got, []string{"config/", ".config/", ".config/app/"}) {
		t.Errorf("config: %q", got)
	}
	if got := l.Search(".config", KindDirectory, 10); len(got) == 0 || got[0] != ".config/" {
		t.Errorf(".config: %q, want .config/ first", got)
	}
}

func TestAHiddenFileThatMatchesWellIsNotPushedOutByWeakMatches(t *testing.T) {
	paths := []string{".github/workflows/ci.yml"}
	for i := range 20 {
		paths = append(paths, fmt.Sprintf("src/c%02d/deep/nested/i/yaml.yml", i))
	}
	l := listingOf(paths...)
	if got := l.Search("ci.yml", KindAll, 10); len(got) == 0 || got[0] != ".github/workflows/ci.yml" {
		t.Errorf("Search(ci.yml) = %q, want .github/workflows/ci.yml first", got)
	}
}
