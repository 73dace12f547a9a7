package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/html"
)

func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return res, string(body)
}

func TestHandlerServesIndexAndItsAssetsFromTheEmbeddedBuild(t *testing.T) {
	srv := httptest.NewServer(Handler(nil, nil))
	defer srv.Close()

	res, index := get(t, srv, "/")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d", res.StatusCode)
	}
	for header, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"Cache-Control":          "private, no-cache",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := res.Header.Get(header); got != want {
			t.Errorf("GET / %s = %q, want %q", header, got, want)
		}
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "connect-src 'self' ws://" + strings.TrimPrefix(srv.URL, "http://"), "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(strings.Split(csp, "style-src")[0], "unsafe-inline") {
		t.Errorf("CSP allows inline or eval'd scripts: %q", csp)
	}
	// The page's own inline scripts (the bootstrap and the app) run by their hashes, and nothing
	// else inline does: every one the page holds is in the CSP, and the CSP names no other.
	inline := regexp.MustCompile(`(?s)<script(?:\s[^>]*)?>(.*?)</script>`).FindAllStringSubmatch(index, -1)
	if len(inline) != 2 {
		t.Fatalf("index.html has %d inline scripts, want the bootstrap and the app", len(inline))
	}
	for _, m := range inline {
		sum := sha256.Sum256([]byte(m[1]))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, "script-src 'self' ") || !strings.Contains(csp, h) {
			t.Errorf("CSP %q does not allow the inline script %.60q… (%s)", csp, m[1], h)
		}
	}
	if n := strings.Count(csp, "'sha256-"); n != len(inline) {
		t.Errorf("CSP names %d hashes for %d inline scripts", n, len(inline))
	}

	assets := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"|import\(`+"`"+`(/assets/[^`+"`"+`]+)`).FindAllStringSubmatch(index, -1)
	if len(assets) == 0 {
		t.Fatalf("index.html references no assets:\n%s", index)
	}
	wantType := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	for _, m := range assets {
		path := m[1] + m[2]
		t.Run("serves "+path, func(t *testing.T) {
			res, body := get(t, srv, path)
			if res.StatusCode != http.StatusOK || len(body) == 0 {
				t.Fatalf("GET %s = %d with %d bytes", path, res.StatusCode, len(body))
			}
			if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
				t.Errorf("Cache-Control = %q, want immutable", cc)
			}
			for ext, want := range wantType {
				if strings.HasSuffix(path, ext) && res.Header.Get("Content-Type") != want {
					t.Errorf("Content-Type = %q, want %q", res.Header.Get("Content-Type"), want)
				}
			}
		})
	}
}

func TestHandlerRefusesWhatIsNotTheUI(t *testing.T) {
	srv := httptest.NewServer(Handler(nil, nil))
	defer srv.Close()
	for _, tc := range []struct {
		name, path string
		want       int
	}{
		{"an API path is not the UI's", "/session", http.StatusNotFound},
		{"an unknown asset is missing", "/assets/nope.js", http.StatusNotFound},
		{"the asset folder is not listed", "/assets/", http.StatusNotFound},
		{"a path climbing out of assets is refused", "/assets/../index.html", http.StatusNotFound},
		{"an encoded climb out of assets is refused", "/assets/%2e%2e/index.html", http.StatusNotFound},
		{"a precompressed copy is not served under its own name", "/sw.js.br", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := get(t, srv, tc.path)
			if res.StatusCode != tc.want {
				t.Errorf("GET %s = %d, want %d", tc.path, res.StatusCode, tc.want)
			}
		})
	}

	t.Run("a POST is not allowed", func(t *testing.T) {
		res, err := http.Post(srv.URL+"/", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST / = %d, want 405", res.StatusCode)
		}
	})
}

func TestAMissingAssetIsAnsweredByTheGivenNotFoundHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"name":"NotFoundError"}`))
	}), nil))
	defer srv.Close()
	for _, path := range []string{"/assets/missing.js", "/nowhere"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want the JSON 404", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

func TestHandlerServesTheInstallableAppFiles(t *testing.T) {
	srv := httptest.NewServer(Handler(nil, nil))
	defer srv.Close()

	_, index := get(t, srv, "/")
	if !strings.Contains(index, `rel="manifest" href="/manifest.webmanifest"`) {
		t.Errorf("index.html does not link the manifest:\n%s", index)
	}
	res, body := get(t, srv, "/manifest.webmanifest")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/manifest+json" {
		t.Fatalf("manifest: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	icons := regexp.MustCompile(`"src": "(/icons/[^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(icons) < 2 || !strings.Contains(body, `"display": "standalone"`) {
		t.Fatalf("manifest lacks icons or standalone display:\n%s", body)
	}
	for _, m := range icons {
		res, data := get(t, srv, m[1])
		if res.StatusCode != http.StatusOK || (strings.HasSuffix(m[1], ".png") && !strings.HasPrefix(data, "\x89PNG")) {
			t.Errorf("icon %s: %d %q", m[1], res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	res, sw := get(t, srv, "/sw.js")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || res.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("sw.js: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Cache-Control"))
	}
	for _, want := range []string{"addEventListener('push'", "addEventListener('notificationclick'", "'/push/action'"} {
		if !strings.Contains(sw, want) {
			t.Errorf("sw.js lacks %s", want)
		}
	}
	if res, _ := get(t, srv, "/icons/../index.html"); res.StatusCode == http.StatusOK && res.Request.URL.Path != "/index.html" {
		t.Errorf("path escape served")
	}
}

// getRaw fetches path with the given Accept-Encoding and leaves the body as it came on the wire.
func getRaw(t *testing.T, srv *httptest.Server, path, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

func TestAssetsAreSentPrecompressedInTheCodingTheClientPrefers(t *testing.T) {
	srv := httptest.NewServer(Handler(nil, nil))
	defer srv.Close()
	_, index := get(t, srv, "/")
	// The app's own script is in the page; the terminal's, loaded when it opens, is a file.
	script := regexp.MustCompile("import\\(`(/assets/[^`]+\\.js)`\\)").FindStringSubmatch(index)
	if script == nil {
		t.Fatalf("index.html imports no script file")
	}
	plainRes, plain := getRaw(t, srv, script[1], "identity")
	if plainRes.Header.Get("Content-Encoding") != "" || len(plain) == 0 {
		t.Fatalf("identity: Content-Encoding %q with %d bytes", plainRes.Header.Get("Content-Encoding"), len(plain))
	}
	for _, tc := range []struct {
		name, accept, want string
	}{
		{"a browser gets brotli", "gzip, deflate, br, zstd", "br"},
		{"a gzip-only client gets gzip", "gzip", "gzip"},
		{"a client refusing brotli gets gzip", "br;q=0, gzip", "gzip"},
		{"a client naming no coding gets the file as it is", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := getRaw(t, srv, script[1], tc.accept)
			if got := res.Header.Get("Content-Encoding"); got != tc.want {
				t.Fatalf("Content-Encoding = %q, want %q", got, tc.want)
			}
			if !strings.Contains(res.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("Vary = %q, want Accept-Encoding", res.Header.Get("Vary"))
			}
			if cc := res.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control = %q", cc)
			}
			if tc.want != "" && len(body) >= len(plain)/2 {
				t.Errorf("%s body is %d bytes of %d: not compressed", tc.want, len(body), len(plain))
			}
			if tc.want == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(zr)
				if err != nil || !bytes.Equal(got, plain) {
					t.Errorf("gzip copy decodes to %d bytes (%v), want the %d of the file", len(got), err, len(plain))
				}
			}
		})
	}
}

func TestEveryPrecompressedCopyHasItsOriginal(t *testing.T) {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isEncodedCopy(name) {
			return err
		}
		if _, err := fs.Stat(sub, name[:len(name)-len(path.Ext(name))]); err != nil {
			t.Errorf("%s has no original beside it", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestThePageCarriesTheSnapshotOnlyWhereAndWhenItIsGiven(t *testing.T) {
	// A stand-in for the server's snapshot: the one for a "signed-in" cookie holds a title that
	// would end the element and run a script if it were written as it is.
	const title = `</script><script>alert(1)</script><!--`
	var asked atomic.Int32
	snapshot := func(r *http.Request) []byte {
		asked.Add(1)
		if c, err := r.Cookie("who"); err != nil || c.Value != "signed-in" {
			return nil
		}
		b, err := json.Marshal(map[string]any{"/session": []map[string]string{{"id": "ses_1", "title": title}}})
		if err != nil {
			t.Error(err)
		}
		return b
	}
	srv := httptest.NewServer(Handler(nil, snapshot))
	defer srv.Close()
	fetch := func(t *testing.T, method, path, cookie, acceptEncoding string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "who", Value: cookie})
		}
		req.Header.Set("Accept-Encoding", acceptEncoding)
		res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var r io.Reader = res.Body
		if res.Header.Get("Content-Encoding") == "gzip" {
			if r, err = gzip.NewReader(res.Body); err != nil {
				t.Fatal(err)
			}
		}
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return res, string(body)
	}
	// data is the text of the page's JSON element, read by a real HTML parser as a browser would.
	data := func(t *testing.T, page string) (string, bool) {
		t.Helper()
		doc, err := html.Parse(strings.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		for n := range doc.Descendants() {
			if n.Type == html.ElementNode && n.Data == "script" {
				for _, a := range n.Attr {
					if a.Key == "id" && a.Val == DataElementID && n.FirstChild != nil {
						return n.FirstChild.Data, true
					}
				}
			}
		}
		return "", false
	}

	for _, enc := range []string{"gzip, deflate, br", ""} {
		t.Run("a signed-in page carries the snapshot, escaped, before the bootstrap; Accept-Encoding "+strconv.Quote(enc), func(t *testing.T) {
			res, page := fetch(t, http.MethodGet, "/", "signed-in", enc)
			if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "private, no-cache" || !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Cookie") {
				t.Fatalf("GET / = %d, Cache-Control %q, Vary %q", res.StatusCode, res.Header.Get("Cache-Control"), res.Header.Values("Vary"))
			}
			if want := map[string]string{"gzip, deflate, br": "gzip", "": ""}[enc]; res.Header.Get("Content-Encoding") != want {
				t.Errorf("Content-Encoding = %q, want %q", res.Header.Get("Content-Encoding"), want)
			}
			text, ok := data(t, page)
			if !ok {
				t.Fatalf("no #%s in the page", DataElementID)
			}
			var snap map[string][]map[string]string
			if err := json.Unmarshal([]byte(text), &snap); err != nil || snap["/session"][0]["title"] != title {
				t.Errorf("the page's data %q (%v) does not hold the title", text, err)
			}
			if strings.Contains(page, "alert(1)</script>") || strings.Count(page, "<script") != 3 {
				t.Errorf("the title escaped the element: %d <script in the page", strings.Count(page, "<script"))
			}
			if strings.Index(page, DataElementID) > strings.Index(page, "__tandemBoot") {
				t.Errorf("the data comes after the bootstrap that looks for it")
			}
		})
	}

	for _, tc := range []struct{ name, method, path, cookie string }{
		{"a page without the cookie carries none", http.MethodGet, "/", ""},
		{"a page with another cookie carries none", http.MethodGet, "/", "someone-else"},
		{"a HEAD builds none", http.MethodHead, "/", "signed-in"},
		{"the pairing page carries none", http.MethodGet, PairPage, "signed-in"},
		{"a shared page carries none", http.MethodGet, "/s/tok", "signed-in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := asked.Load()
			res, page := fetch(t, tc.method, tc.path, tc.cookie, "")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s %s = %d", tc.method, tc.path, res.StatusCode)
			}
			if _, ok := data(t, page); ok {
				t.Errorf("%s carries a snapshot", tc.path)
			}
			if tc.path != "/" || tc.method == http.MethodHead {
				if asked.Load() != before {
					t.Errorf("%s %s asked for a snapshot", tc.method, tc.path)
				}
			}
		})
	}
}
