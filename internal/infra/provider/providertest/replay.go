package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Recording is one exchange with a provider's API: what tandem was asked to send (Call, a
// provider.Request as JSON), the request the API expects for it, and the API's answer, byte for
// byte. Want is what the answer decodes to (provider.Event fields, as JSON). A recording is two
// files in a directory: NAME.json holds everything but the answer's body, NAME.response the body.
type Recording struct {
	Name  string          `json:"-"`
	About string          `json:"about"`
	Call  json.RawMessage `json:"call"`
	// Request is the request the API documents for Call: its path and JSON body.
	Request struct {
		Path string          `json:"path"`
		Body json.RawMessage `json:"body"`
	} `json:"request"`
	Response struct {
		Status int               `json:"status"`
		Header map[string]string `json:"header"`
		Body   []byte            `json:"-"`
	} `json:"response"`
	Want json.RawMessage `json:"want"`
}

// LoadRecordings reads every recording of a directory, sorted by name.
func LoadRecordings(t testing.TB, dir string) []Recording {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []Recording
	for _, name := range names {
		out = append(out, LoadRecording(t, strings.TrimSuffix(name, ".json")))
	}
	if len(out) == 0 {
		t.Fatalf("no recordings in %s", dir)
	}
	return out
}

// LoadRecording reads one recording: path without its extension.
func LoadRecording(t testing.TB, path string) Recording {
	t.Helper()
	b, err := os.ReadFile(path + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var r Recording
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s.json: %v", path, err)
	}
	r.Name = filepath.Base(path)
	if r.Response.Body, err = os.ReadFile(path + ".response"); err != nil {
		t.Fatal(err)
	}
	return r
}

// Replay is a loopback server that answers each request with the next recording's response,
// exactly as it was recorded, and keeps the requests it received to compare with the recordings'.
type Replay struct {
	// URL is the server's root; BaseURL is what a provider's baseURL option should be (for the
	// OpenAI wire, URL + "/v1").
	URL, BaseURL string

	t        testing.TB
	mu       sync.Mutex
	recs     []Recording
	next     int
	requests []Request
}

// NewReplay starts a replay of recs, in order. It stops when the test ends.
func NewReplay(t testing.TB, recs ...Recording) *Replay {
	t.Helper()
	r := &Replay{t: t, recs: recs}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	r.BaseURL = srv.URL
	if len(recs) > 0 && strings.HasPrefix(recs[0].Request.Path, "/v1/") && recs[0].Request.Path != "/v1/messages" {
		r.BaseURL = srv.URL + "/v1"
	}
	return r
}

// Requests returns the requests received so far.
func (r *Replay) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

func (r *Replay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
	n := len(r.requests)
	var rec Recording
	ok := r.next < len(r.recs)
	if ok {
		rec = r.recs[r.next]
		r.next++
	}
	r.mu.Unlock()
	if !ok {
		r.t.Errorf("replay: request %d has no recording left", n)
		http.Error(w, fmt.Sprintf("replay: no recording left for request %d", n), http.StatusInternalServerError)
		return
	}
	if req.Method != http.MethodPost || req.URL.Path != rec.Request.Path {
		r.t.Errorf("replay %s: got %s %s, the recording was sent to POST %s", rec.Name, req.Method, req.URL.Path, rec.Request.Path)
		http.Error(w, "replay: unexpected path", http.StatusNotFound)
		return
	}
	for k, v := range rec.Response.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rec.Response.Status)
	_, _ = w.Write(rec.Response.Body)
}
