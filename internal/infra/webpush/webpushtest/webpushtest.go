// Package webpushtest is a push service on loopback for tests: it hands out subscriptions with
// real, freshly generated browser keys, checks each push's VAPID signature and content coding the
// way a push service and a browser do, and delivers what it decrypted.
package webpushtest

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/webpush"
)

// Push is one message the service accepted.
type Push struct {
	Endpoint  string
	Plaintext []byte
	Header    http.Header
}

// Service is the loopback push service.
type Service struct {
	srv *httptest.Server
	// Pushes receives every accepted message, decrypted.
	Pushes chan Push

	mu     sync.Mutex
	subs   map[string]*browser // by endpoint path
	status map[string]int      // endpoint path -> forced answer (410 for an unsubscribed browser)
	bodies map[string]string   // endpoint path -> the forced answer's body
	errs   []error
}

type browser struct {
	key       *ecdh.PrivateKey
	auth      []byte
	serverKey string // the applicationServerKey it subscribed with
}

// New starts the service; it stops when the test ends, and fails the test if a push was refused
// for a reason the test did not ask for.
func New(t *testing.T) *Service {
	t.Helper()
	s := &Service{Pushes: make(chan Push, 64), subs: map[string]*browser{}, status: map[string]int{}, bodies: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, err := range s.errs {
			t.Errorf("push service refused a push: %v", err)
		}
	})
	return s
}

// Subscribe is PushManager.subscribe: a new browser subscribes with the server's public key.
func (s *Service) Subscribe(t *testing.T, serverKey string) webpush.Subscription {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	if _, err := rand.Read(auth); err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	path := "/push/" + base64.RawURLEncoding.EncodeToString(id)
	s.mu.Lock()
	s.subs[path] = &browser{key: key, auth: auth, serverKey: serverKey}
	s.mu.Unlock()
	enc := base64.RawURLEncoding.EncodeToString
	return webpush.Subscription{Endpoint: s.srv.URL + path, Keys: webpush.Keys{P256dh: enc(key.PublicKey().Bytes()), Auth: enc(auth)}}
}

// Unsubscribe makes the endpoint answer 410 Gone, as a push service does after the browser
// unsubscribed.
func (s *Service) Unsubscribe(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[strings.TrimPrefix(endpoint, s.srv.URL)] = http.StatusGone
}

// Refuse makes the endpoint answer every push with code and a JSON body, as a push service that
// refuses tandem's signature does (Apple's: 403 {"reason":"BadJwtToken"}).
func (s *Service) Refuse(endpoint string, code int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := strings.TrimPrefix(endpoint, s.srv.URL)
	s.status[path], s.bodies[path] = code, body
}

// subject is the "sub" claim of a vapid Authorization header's JWT ("" when there is none).
func subject(header string) string {
	_, rest, _ := strings.Cut(header, "t=")
	token, _, _ := strings.Cut(rest, ",")
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	_ = json.Unmarshal(raw, &claims)
	return claims.Sub
}

// Next waits for the next push, failing the test after d.
func (s *Service) Next(t *testing.T, d time.Duration) Push {
	t.Helper()
	select {
	case p := <-s.Pushes:
		return p
	case <-time.After(d):
		t.Fatalf("no push within %s", d)
		return Push{}
	}
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.subs[r.URL.Path]
	forced := s.status[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if forced != 0 {
		if body := s.bodies[r.URL.Path]; body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(forced)
			_, _ = io.WriteString(w, body)
			return
		}
		w.WriteHeader(forced)
		return
	}
	fail := func(code int, format string, args ...any) {
		err := fmt.Errorf(format, args...)
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		http.Error(w, err.Error(), code)
	}
	endpoint := s.srv.URL + r.URL.Path
	switch {
	case r.Method != http.MethodPost:
		fail(http.StatusMethodNotAllowed, "method %s", r.Method)
		return
	case r.Header.Get("Content-Encoding") != "aes128gcm":
		fail(http.StatusUnsupportedMediaType, "Content-Encoding %q", r.Header.Get("Content-Encoding"))
		return
	case r.Header.Get("TTL") == "":
		fail(http.StatusBadRequest, "no TTL header (RFC 8030 §5.2)")
		return
	}
	key, err := webpush.VerifyAuthorization(r.Header.Get("Authorization"), endpoint, time.Now())
	if err != nil {
		fail(http.StatusUnauthorized, "VAPID: %v", err)
		return
	}
	// As Apple's push service does: a subject that names no contact it could reach is refused.
	if sub := subject(r.Header.Get("Authorization")); webpush.LocalSubject(sub) {
		s.mu.Lock()
		s.errs = append(s.errs, fmt.Errorf("VAPID subject %q names no reachable contact", sub))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"reason":"BadJwtToken"}`)
		return
	}
	if key != b.serverKey {
		fail(http.StatusForbidden, "signed by %s, subscribed with %s", key, b.serverKey)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
	if err != nil {
		fail(http.StatusBadRequest, "body: %v", err)
		return
	}
	if len(body) > 4096 {
		fail(http.StatusRequestEntityTooLarge, "%d bytes", len(body))
		return
	}
	plain, err := webpush.Decrypt(b.key, b.auth, body)
	if err != nil {
		fail(http.StatusBadRequest, "decrypt: %v", err)
		return
	}
	w.WriteHeader(http.StatusCreated)
	s.Pushes <- Push{Endpoint: endpoint, Plaintext: plain, Header: r.Header.Clone()}
}
