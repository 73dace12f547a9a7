package routes_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// The credentials every foundation test server accepts.
const (
	apiUser     = "tandem"
	apiPassword = "s3cret-password"
)

// apiServer is the real server (listener, middleware, auth guard, router) over a real SQLite file,
// serving the foundation modules: health, events, login and sessions.
type apiServer struct {
	base     string // http://127.0.0.1:port, no trailing slash
	dir      string // the project directory requests default to
	db       *store.DB
	bus      *bus.Bus
	sessions *session.Service
	auth     *auth.Authority
	srv      *server.Server
	client   *http.Client
}

type apiOptions struct {
	replay, maxQueued int           // bus sizes; 0 keeps the defaults
	writeTimeout      time.Duration // SSE write timeout; 0 keeps the default
	noLeakCheck       bool          // benchmarks skip goleak
}

func startAPIServer(tb testing.TB, o apiOptions) *apiServer {
	tb.Helper()
	if !o.noLeakCheck {
		opts := goleak.IgnoreCurrent()
		tb.Cleanup(func() { goleak.VerifyNone(tb, opts) })
	}
	dir := tb.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "tandem.db"))
	if err != nil {
		tb.Fatal(err)
	}
	b := bus.New(bus.Options{Replay: o.replay, MaxQueued: o.maxQueued})
	svc := session.New(session.Options{DB: db, Bus: b, Version: "test"})
	a := auth.New(auth.Credentials{Username: apiUser, Password: apiPassword})
	srv, err := server.Listen(server.Config{
		Port: testenv.UnusedPort(tb), Directory: dir, Auth: a, PasswordSet: true,
		API: &routes.API{Modules: []routes.Module{
			&routes.Global{Version: "test", ProjectID: svc.ProjectID, Started: time.Now()},
			&routes.Events{Bus: b, Heartbeat: time.Hour, WriteTimeout: o.writeTimeout},
			&routes.Login{Auth: a},
			&routes.Sessions{Service: svc},
		}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	srv.Serve()
	s := &apiServer{
		base: strings.TrimSuffix(srv.URL(), "/"), dir: dir, db: db, bus: b, sessions: svc, auth: a, srv: srv,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svc.Shutdown(ctx)
		b.Close()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		testenv.Recv(tb, srv.Done(), "server shutdown")
		s.client.CloseIdleConnections()
		if err := db.Close(); err != nil {
			tb.Errorf("close db: %v", err)
		}
	})
	return s
}

// newRequest builds an authenticated request; a non-empty body is sent as JSON.
func (s *apiServer) newRequest(tb testing.TB, method, path, body string) *http.Request {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	req.SetBasicAuth(apiUser, apiPassword)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// send performs req and returns the status, headers and body.
func (s *apiServer) send(tb testing.TB, req *http.Request) (int, http.Header, []byte) {
	tb.Helper()
	res, err := s.client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return res.StatusCode, res.Header, b
}

// call sends an authenticated JSON request, requires want as the status and decodes the body into out.
func (s *apiServer) call(tb testing.TB, method, path, body string, want int, out any) http.Header {
	tb.Helper()
	status, h, b := s.send(tb, s.newRequest(tb, method, path, body))
	if status != want {
		tb.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return h
}

func (s *apiServer) createSession(tb testing.TB, body string) session.Session {
	tb.Helper()
	var out session.Session
	s.call(tb, http.MethodPost, "/session", body, http.StatusOK, &out)
	return out
}

// errorShape is the one error body: {"name", "data":{"message"}}.
type errorShape struct {
	Name string         `json:"name"`
	Data map[string]any `json:"data"`
}

// requireErrorShape checks that body is the one error shape with a name and a message.
func requireErrorShape(tb testing.TB, h http.Header, body []byte) errorShape {
	tb.Helper()
	var e errorShape
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		tb.Fatalf("error body %q is not {name, data}: %v", body, err)
	}
	msg, _ := e.Data["message"].(string)
	if e.Name == "" || msg == "" {
		tb.Fatalf("error body %s lacks a name or data.message", body)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		tb.Errorf("error Content-Type %q, want application/json", ct)
	}
	return e
}
