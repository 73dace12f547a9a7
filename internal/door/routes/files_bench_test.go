package routes_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/files"
)

// benchTree writes a project of n files: top-level areas, packages and components, with names
// like a web and Go monorepo's, so fuzzy queries hit realistic numbers of candidates.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	areas := []string{"src", "pkg", "internal", "web", "docs", "tools", "test", "scripts", "api", ".github"}
	pkgs := []string{"components", "services", "store", "routes", "utils", "models", "hooks", "views", "config", "auth",
		"billing", "search", "session", "editor", "render", "parser", "network", "storage", "metrics", "theme"}
	parts := []string{"Button", "Group", "Dialog", "Table", "Row", "Header", "Footer", "Menu", "Item", "List",
		"Form", "Input", "Select", "Modal", "Panel", "Card", "Tab", "Tree", "Node", "Cache"}
	exts := []string{".tsx", ".ts", ".go", ".md", ".css", "_test.go", ".json", ".spec.ts"}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("node_modules/\n*.log\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	count := 0
	for i := 0; count < n; i++ {
		area := areas[i%len(areas)]
		pkg := pkgs[(i/len(areas))%len(pkgs)]
		sub := fmt.Sprintf("%s%d", parts[(i/7)%len(parts)], i/(len(areas)*len(pkgs)))
		d := filepath.Join(dir, area, pkg, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 20 && count < n; j++ {
			name := parts[(i+j)%len(parts)] + parts[(i*3+j*7)%len(parts)] + exts[(i+j)%len(exts)]
			if j == 0 {
				name = "index" + exts[i%len(exts)]
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%d%s", j, name)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
			count++
		}
	}
	return dir
}

// BenchmarkFindFile100k types queries into GET /find/file on a generated 100,000-file tree, one
// request per keystroke, through the real server, and reports the median and 90th percentile per
// request. "recheck-1s" is the server's default (a burst of keystrokes is answered from the index);
// "recheck-every-request" checks the tree for changes on every request, the worst case.
func BenchmarkFindFile100k(b *testing.B) {
	dir := benchTree(b, 100_000)
	keystrokes := []string{
		"b", "bu", "but", "butt", "butto", "button",
		"s", "se", "ses", "sess", "sessi", "session",
		"i", "in", "ind", "inde", "index", "index.", "index.t", "index.ts",
		"c", "co", "com", "comp", "comp/", "comp/m", "comp/mo", "comp/mod", "comp/moda", "comp/modal",
		"m", "mo", "mod", "mode", "model", "models", "models/", "models/c", "models/ca",
		"r", "rt", "rtg", "rtgb", "t", "ta", "tab", "tabl", "table", "tablerow",
	}
	for _, tc := range []struct {
		name    string
		recheck time.Duration
	}{{"recheck-1s", time.Second}, {"recheck-every-request", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			ix := files.NewIndex()
			ix.Recheck = tc.recheck
			s := startFilesServer(b, dir, ix)
			if status, body := s.get(b, "/find/file?query=warm"); status != http.StatusOK {
				b.Fatalf("warm-up: %d %s", status, body)
			}
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := keystrokes[i%len(keystrokes)]
				start := time.Now()
				status, body := s.get(b, "/find/file?limit=10&query="+url.QueryEscape(q))
				lat = append(lat, time.Since(start))
				if status != http.StatusOK {
					b.Fatalf("%q: %d %s", q, status, body)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
		})
	}
}
