// Package web serves the browser UI. Its built files (dist/) are committed
// and embedded, so building tandem needs no Node; web/check-dist.sh proves the
// committed files are what the sources build to.
package web

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/internal/base/contentcoding"
)

//go:embed all:dist
var dist embed.FS

// contentTypes pins the types of what Vite emits, because mime.TypeByExtension
// depends on the host's /etc/mime.types and an asset served as text/plain is
// refused by browsers under nosniff.
var contentTypes = map[string]string{
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".woff2": "font/woff2",
	".woff":  "font/woff",
	".ttf":   "font/ttf",
	".json":  "application/json",
	".wasm":  "application/wasm",
	".html":  "text/html; charset=utf-8",
	// The installable app's manifest (web/public, copied to dist as is).
	".webmanifest": "application/manifest+json",
}

func contentType(name string) string {
	ext := path.Ext(name)
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Snapshot returns the first screen's data for a request for the UI's page, as a JSON object
// (the answers of the API's GETs the app makes at start, by path), or nil: always nil unless the
// request is signed in. The page carries it so that the app shows the inbox without first asking
// for it, one round trip less on a slow link.
type Snapshot func(r *http.Request) []byte

// Handler serves the UI at "/" (index.html) and "/assets/*" and nothing else,
// since every other path belongs to the API. Mount it on exactly those paths.
// notFound answers for paths the UI does not have; nil is net/http's plain 404. tandem passes its
// JSON error writer, so every error it writes has the one shape. snapshot (may be nil) fills the
// page at "/" for a signed-in request.
func Handler(notFound http.Handler, snapshot Snapshot) http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("web: embedded dist is missing: " + err.Error())
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic("web: embedded dist has no index.html; run npm ci && npm run build in web/")
	}
	page, err := readPage(index)
	if err != nil {
		panic("web: embedded index.html: " + err.Error())
	}
	if notFound == nil {
		notFound = http.NotFoundHandler()
	}
	return &handler{files: sub, index: index, page: page, notFound: notFound, snapshot: snapshot}
}

type handler struct {
	files    fs.FS
	index    []byte
	page     page
	notFound http.Handler
	snapshot Snapshot
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	setSecurityHeaders(w, r, h.page.scriptHashes)
	switch {
	case r.URL.Path == "/" || r.URL.Path == "/index.html":
		// Revalidated, so a new build is seen at once; private and varying by the credentials,
		// since a signed-in page carries that user's data (never kept by a shared cache).
		w.Header().Set("Vary", "Cookie")
		const cache = "private, no-cache"
		if r.Method == http.MethodGet && h.snapshot != nil {
			if snap := h.snapshot(r); snap != nil && json.Valid(snap) {
				h.serveWithSnapshot(w, r, snap, cache)
				return
			}
		}
		h.serveFile(w, r, "index.html", cache)
	case r.URL.Path == PairPage || IsSharePage(r.URL.Path):
		if IsSharePage(r.URL.Path) {
			// The link's token is in the path: never hand it to another site.
			w.Header().Set("Referrer-Policy", "no-referrer")
		}
		h.serveFile(w, r, "index.html", "no-store")
	case strings.HasPrefix(r.URL.Path, "/assets/"):
		h.serveAsset(w, r)
	case IsAppFile(r.URL.Path):
		h.serveAppFile(w, r)
	default:
		h.notFound.ServeHTTP(w, r)
	}
}

// DataElementID is the id of the JSON script element that carries the snapshot in the page; the
// app reads it (web/src/store.js) and index.html's first script looks for it.
const DataElementID = "tandem-data"

// serveWithSnapshot serves index.html with snap in it, right before the page's first inline
// script (which opens the event stream when it sees the data). The JSON is written with <, > and
// & as \u escapes, so no text in it can end the element. The page is compressed here, once per
// request, since its bytes differ every time.
func (h *handler) serveWithSnapshot(w http.ResponseWriter, r *http.Request, snap []byte, cache string) {
	var doc bytes.Buffer
	doc.Grow(len(h.index) + len(snap) + 128)
	doc.Write(h.index[:h.page.dataAt])
	doc.WriteString(`<script type="application/json" id="` + DataElementID + `">`)
	json.HTMLEscape(&doc, snap)
	doc.WriteString("</script>\n    ")
	doc.Write(h.index[h.page.dataAt:])
	hdr := w.Header()
	hdr.Set("Content-Type", contentType("index.html"))
	hdr.Set("Cache-Control", cache)
	hdr.Add("Vary", "Accept-Encoding")
	if !contentcoding.Accepts(r.Header.Get("Accept-Encoding"), "gzip") {
		hdr.Set("Content-Length", strconv.Itoa(doc.Len()))
		_, _ = w.Write(doc.Bytes())
		return
	}
	hdr.Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(doc.Bytes()); err == nil {
		_ = zw.Close()
	}
}

// PairPage is the page a pairing link opens (`tandem pair`): the UI posts the code from the
// link's fragment to /auth/pair/redeem and lands on the inbox signed in.
const PairPage = "/pair"

// IsSharePage reports whether path is the page of a read-only link, /s/{token}: the UI opens it
// in read-only mode, reading the session through /s/{token}/… with the token as its only key.
func IsSharePage(path string) bool {
	token, ok := strings.CutPrefix(path, "/s/")
	return ok && token != "" && !strings.Contains(token, "/")
}

// IsAppFile reports whether path is one of the files that make the UI an installable app: the
// service worker (/sw.js, served from the root so that its scope is the whole UI), the manifest
// and its icons. Their names are fixed, so they are revalidated rather than cached for good.
func IsAppFile(path string) bool {
	return path == "/sw.js" || path == "/manifest.webmanifest" || strings.HasPrefix(path, "/icons/")
}

func (h *handler) serveAppFile(w http.ResponseWriter, r *http.Request) {
	h.serveFile(w, r, strings.TrimPrefix(r.URL.Path, "/"), "no-cache")
}

// serveAsset serves /assets/*: their names carry a content hash, so a name never changes meaning
// and browsers may keep them for good.
func (h *handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	h.serveFile(w, r, strings.TrimPrefix(r.URL.Path, "/"), "public, max-age=31536000, immutable")
}

// encodings are the precompressed copies the build writes beside a file (web/compress.js), the
// server's preference first.
var encodings = []struct{ coding, suffix string }{{"br", ".br"}, {"gzip", ".gz"}}

// serveFile serves the embedded file name, or the precompressed copy of it that the request's
// Accept-Encoding prefers, with Content-Encoding and Vary saying which.
func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, name, cache string) {
	if !fs.ValidPath(name) || strings.HasSuffix(name, "/") || isEncodedCopy(name) {
		h.notFound.ServeHTTP(w, r)
		return
	}
	data, err := fs.ReadFile(h.files, name)
	if name == "index.html" {
		data, err = h.index, nil
	}
	if err != nil {
		h.notFound.ServeHTTP(w, r)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", contentType(name))
	hdr.Set("Cache-Control", cache)
	var offers []string
	for _, e := range encodings {
		if _, err := fs.Stat(h.files, name+e.suffix); err == nil {
			offers = append(offers, e.coding)
		}
	}
	if len(offers) > 0 {
		hdr.Add("Vary", "Accept-Encoding")
		if coding := contentcoding.Choose(r.Header.Get("Accept-Encoding"), offers...); coding != "" {
			for _, e := range encodings {
				if e.coding == coding {
					if encoded, err := fs.ReadFile(h.files, name+e.suffix); err == nil {
						data = encoded
						hdr.Set("Content-Encoding", coding)
					}
				}
			}
		}
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// isEncodedCopy reports whether name is one of the precompressed copies, which are only ever
// served in the place of their original.
func isEncodedCopy(name string) bool {
	for _, e := range encodings {
		if strings.HasSuffix(name, e.suffix) {
			return true
		}
	}
	return false
}

// setSecurityHeaders forbids inline scripts other than the page's own (allowed by their hashes),
// foreign connections and framing. Inline styles stay allowed because xterm.js sizes its rows with
// <style> elements it creates at run time; scripts never are.
func setSecurityHeaders(w http.ResponseWriter, r *http.Request, scriptHashes []string) {
	connect := "'self'"
	if host := r.Host; host != "" && !strings.ContainsAny(host, " ;,'\"\t\r\n") {
		connect += " ws://" + host + " wss://" + host
	}
	script := "script-src 'self'"
	for _, h := range scriptHashes {
		script += " '" + h + "'"
	}
	h := w.Header()
	h.Set("Content-Security-Policy", strings.Join([]string{
		"default-src 'self'",
		script,
		"style-src 'self' 'unsafe-inline'",
		"img-src 'self' data:",
		"font-src 'self' data:",
		"connect-src " + connect,
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; "))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
