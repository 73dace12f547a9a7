package server_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// raw sends req as a client that decodes nothing itself, so the test sees the bytes on the wire.
func raw(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

func TestJSONIsGzippedWhenTheClientAcceptsItAndTheBodyIsWorthIt(t *testing.T) {
	s := listen(t, nil)
	list := func(t *testing.T, acceptEncoding string) (*http.Response, []byte) {
		t.Helper()
		req := newReq(t, http.MethodGet, s.base+"/session", "")
		req.SetBasicAuth(user, password)
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		return raw(t, req)
	}

	t.Run("a small body is sent as it is, with its length", func(t *testing.T) {
		res, body := list(t, "gzip, br")
		if res.Header.Get("Content-Encoding") != "" || string(body) != "[]" || res.ContentLength != 2 {
			t.Fatalf("Content-Encoding %q, length %d, body %q", res.Header.Get("Content-Encoding"), res.ContentLength, body)
		}
	})

	for i := 0; i < 8; i++ {
		req := newReq(t, http.MethodPost, s.base+"/session", `{"title":"`+strings.Repeat("a long session title ", 10)+`"}`)
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(user, password)
		if status, _, body := do(t, req); status != http.StatusOK {
			t.Fatalf("create session: %d %s", status, body)
		}
	}
	_, plain := list(t, "")
	if len(plain) < 2048 {
		t.Fatalf("the session list is only %d bytes; the test needs a large body", len(plain))
	}

	t.Run("a large body is gzipped for a client that accepts gzip", func(t *testing.T) {
		res, body := list(t, "br;q=1, gzip;q=0.5")
		if res.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(vary(res), "Accept-Encoding") {
			t.Fatalf("Content-Encoding %q, Vary %q", res.Header.Get("Content-Encoding"), vary(res))
		}
		if len(body) >= len(plain)/2 {
			t.Errorf("gzipped body is %d bytes of %d", len(body), len(plain))
		}
		zr, err := gzip.NewReader(strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		var sessions []json.RawMessage
		if err := json.Unmarshal(decoded, &sessions); err != nil || len(sessions) != 8 {
			t.Fatalf("decoded body holds %d sessions (%v)", len(sessions), err)
		}
	})

	t.Run("a JSON answer names Origin and Accept-Encoding in one Vary line", func(t *testing.T) {
		res, _ := list(t, "gzip")
		if got := res.Header.Values("Vary"); len(got) != 1 || got[0] != "Origin, Accept-Encoding" {
			t.Fatalf("Vary lines %q, want one: Origin, Accept-Encoding", got)
		}
	})

	for _, accept := range []string{"", "identity", "gzip;q=0, br"} {
		t.Run("a client that does not accept gzip ("+accept+") gets plain JSON", func(t *testing.T) {
			res, body := list(t, accept)
			if res.Header.Get("Content-Encoding") != "" || !json.Valid(body) || !strings.Contains(vary(res), "Accept-Encoding") {
				t.Fatalf("Content-Encoding %q, Vary %q, valid JSON %v", res.Header.Get("Content-Encoding"), res.Header.Get("Vary"), json.Valid(body))
			}
		})
	}
}

func TestTheEventStreamIsNeverCompressed(t *testing.T) {
	s := listen(t, nil)
	req := newReq(t, http.MethodGet, s.base+"/event", "")
	req.SetBasicAuth(user, password)
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Encoding") != "" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("Content-Encoding %q, Content-Type %q", res.Header.Get("Content-Encoding"), res.Header.Get("Content-Type"))
	}
	// The first event (server.connected) arrives at once, readable as it is.
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || !(strings.HasPrefix(line, "data:") || strings.HasPrefix(line, "id:")) {
		t.Fatalf("first line %q (%v), want an event", line, err)
	}
}

func vary(res *http.Response) string { return strings.Join(res.Header.Values("Vary"), ", ") }
