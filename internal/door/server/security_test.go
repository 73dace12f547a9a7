package server_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/openapi"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/infra/store"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	user     = "tandem"
	password = "correct horse"
	corsOK   = "https://ide.example"
)

type testServer struct {
	srv      *server.Server
	base     string
	host     string // host:port
	auth     *auth.Authority
	sessions *session.Service
	dir      string
}

// panicky is a route module whose one operation panics, to prove the recover middleware.
type panicky struct{}

func (panicky) Ops() []routes.Op {
	return []routes.Op{{
		Operation: openapi.Operation{Method: http.MethodGet, Path: "/boom", ID: "test.boom"},
		Handler:   func(http.ResponseWriter, *http.Request) { panic("secret internal detail") },
	}}
}

// listen starts a real server with the foundation modules; edit adjusts its configuration.
func listen(t *testing.T, edit func(*server.Config)) *testServer {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.Options{})
	svc := session.New(session.Options{DB: db, Bus: b})
	a := auth.New(auth.Credentials{Username: user, Password: password})
	cfg := server.Config{
		Port: testenv.UnusedPort(t), Directory: dir, CORS: []string{corsOK}, Auth: a, PasswordSet: true,
		API: &routes.API{Modules: []routes.Module{
			&routes.Global{Version: "test", ProjectID: svc.ProjectID},
			&routes.Events{Bus: b},
			&routes.Login{Auth: a},
			&routes.Sessions{Service: svc},
			panicky{},
		}},
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve()
	t.Cleanup(func() {
		b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		testenv.Recv(t, srv.Done(), "server shutdown")
		db.Close()
	})
	return &testServer{srv: srv, base: strings.TrimSuffix(srv.URL(), "/"), host: srv.Addr().String(), auth: cfg.Auth, sessions: svc, dir: dir}
}

// do sends a request through a fresh transport (so cookies and connections never carry over) and
// returns the status, headers and body.
func do(t *testing.T, req *http.Request) (int, http.Header, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func newReq(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func (s *testServer) sessionCount(t *testing.T) int {
	t.Helper()
	req := newReq(t, http.MethodGet, s.base+"/session", "")
	req.SetBasicAuth(user, password)
	status, _, body := do(t, req)
	var list []json.RawMessage
	if status != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("GET /session: %d %s", status, body)
	}
	return len(list)
}

func requireErrorBody(t *testing.T, body, wantName string) {
	t.Helper()
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Data.Message == "" || (wantName != "" && e.Name != wantName) {
		t.Errorf("error body %s, want name %q with a message", body, wantName)
	}
}

func TestCrossOriginRequestsAreRefusedBeforeTheyRun(t *testing.T) {
	s := listen(t, nil)
	tests := []struct {
		name   string
		origin string
		ctype  string
		creds  bool
		want   int
	}{
		{"a foreign origin's text/plain POST with credentials is 403", "http://evil.example", "text/plain", true, 403},
		{"a foreign origin's JSON POST with credentials is 403", "http://evil.example", "application/json", true, 403},
		{"a foreign origin's form POST without credentials is 403", "http://evil.example", "application/x-www-form-urlencoded", false, 403},
		{"a null origin is 403", "null", "application/json", true, 403},
		{"a look-alike of the server's own origin is 403", "http://" + s.host + ".evil.example", "application/json", true, 403},
		{"a same-origin text/plain POST is still 415", "http://" + s.host, "text/plain", true, 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, http.MethodPost, s.base+"/session", `{"title":"pwned"}`)
			req.Header.Set("Origin", tt.origin)
			req.Header.Set("Content-Type", tt.ctype)
			if tt.creds {
				req.SetBasicAuth(user, password)
			}
			status, h, body := do(t, req)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, body)
			}
			if h.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("a refused origin got CORS headers")
			}
			requireErrorBody(t, body, "")
		})
	}
	if n := s.sessionCount(t); n != 0 {
		t.Fatalf("refused requests created %d sessions", n)
	}

	t.Run("a same-origin JSON POST is served", func(t *testing.T) {
		req := newReq(t, http.MethodPost, s.base+"/session", `{"title":"mine"}`)
		req.Header.Set("Origin", "http://"+s.host)
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(user, password)
		if status, _, body := do(t, req); status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("a --cors origin is served with CORS headers", func(t *testing.T) {
		req := newReq(t, http.MethodPost, s.base+"/session", `{"title":"ide"}`)
		req.Header.Set("Origin", corsOK)
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(user, password)
		status, h, body := do(t, req)
		if status != http.StatusOK || h.Get("Access-Control-Allow-Origin") != corsOK || h.Get("Access-Control-Allow-Credentials") != "true" {
			t.Fatalf("%d %v %s", status, h, body)
		}
		if !strings.Contains(h.Get("Access-Control-Expose-Headers"), "x-next-cursor") {
			t.Errorf("paging headers are not exposed: %q", h.Get("Access-Control-Expose-Headers"))
		}
	})
	t.Run("a --cors origin's preflight is answered without credentials", func(t *testing.T) {
		req := newReq(t, http.MethodOptions, s.base+"/session", "")
		req.Header.Set("Origin", corsOK)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, authorization")
		status, h, _ := do(t, req)
		if status != http.StatusNoContent || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			h.Get("Access-Control-Allow-Headers") != "content-type, authorization" || h.Get("Access-Control-Allow-Origin") != corsOK {
			t.Fatalf("preflight: %d %v", status, h)
		}
	})
	t.Run("a foreign origin's preflight is 403", func(t *testing.T) {
		req := newReq(t, http.MethodOptions, s.base+"/session", "")
		req.Header.Set("Origin", "http://evil.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		if status, h, _ := do(t, req); status != http.StatusForbidden || h.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("preflight: %d %v", status, h)
		}
	})
	if n := s.sessionCount(t); n != 2 {
		t.Fatalf("%d sessions, want the 2 allowed ones", n)
	}
}

func TestHostMustNameTheServer(t *testing.T) {
	s := listen(t, nil)
	port := strconv.Itoa(s.srv.Port())
	tests := []struct {
		host string
		want int
	}{
		{"evil.example", 403},
		{"evil.example:" + port, 403},
		{"127.0.0.1.nip.io:" + port, 403},
		{"127.0.0.1:1", 403},
		{"localhost:" + port, 200},
		{"127.0.0.1:" + port, 200},
		{"app.localhost:" + port, 200},
		{"[::1]:" + port, 200},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("Host %s is %d", tt.host, tt.want), func(t *testing.T) {
			req := newReq(t, http.MethodGet, s.base+"/global/health", "")
			req.Host = tt.host
			status, _, body := do(t, req)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, body)
			}
			if tt.want == 403 {
				requireErrorBody(t, body, "ForbiddenHostError")
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	s := listen(t, nil)
	basic := func(u, p string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + p)) }
	cookie := s.auth.NewSession()
	tests := []struct {
		name string
		set  func(*http.Request)
		want int
	}{
		{"no credentials is 401", func(*http.Request) {}, 401},
		{"HTTP Basic works", func(r *http.Request) { r.SetBasicAuth(user, password) }, 200},
		{"HTTP Basic with the wrong password is 401", func(r *http.Request) { r.SetBasicAuth(user, "wrong") }, 401},
		{"HTTP Basic with the wrong user is 401", func(r *http.Request) { r.SetBasicAuth("root", password) }, 401},
		{"the password as a Bearer token works", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+password) }, 200},
		{"a wrong Bearer token is 401", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401},
		{"?auth_token=base64(user:pass) works", func(r *http.Request) { addQuery(r, "auth_token", basic(user, password)) }, 200},
		{"?auth_token in URL-safe base64 works", func(r *http.Request) {
			addQuery(r, "auth_token", base64.RawURLEncoding.EncodeToString([]byte(user+":"+password)))
		}, 200},
		{"a wrong ?auth_token is 401", func(r *http.Request) { addQuery(r, "auth_token", basic(user, "nope")) }, 401},
		{"?auth_token that is not base64 is 401", func(r *http.Request) { addQuery(r, "auth_token", "%%%") }, 401},
		{"the session cookie works", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: routes.SessionCookie, Value: cookie}) }, 200},
		{"an unknown session cookie is 401", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: routes.SessionCookie, Value: "forged"}) }, 401},
		{"a login ticket is not a credential for the API", func(r *http.Request) { addQuery(r, "ticket", s.auth.IssueTicket()) }, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, http.MethodGet, s.base+"/session", "")
			tt.set(req)
			status, h, body := do(t, req)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, body)
			}
			if status == 401 {
				requireErrorBody(t, body, "")
				if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic ") {
					t.Errorf("401 without a Basic challenge: %q", h.Get("WWW-Authenticate"))
				}
			}
		})
	}

	t.Run("a wrong password and no password get different messages", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			set  func(*http.Request)
			says string
		}{
			{"none", func(*http.Request) {}, "authentication required"},
			{"a wrong password", func(r *http.Request) { r.SetBasicAuth(user, "wrong") }, "wrong credentials: the user name or password was not accepted"},
			{"a wrong bearer token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, "wrong credentials: the bearer token was not accepted"},
		} {
			req := newReq(t, http.MethodGet, s.base+"/session", "")
			tt.set(req)
			if status, _, body := do(t, req); status != 401 || !strings.Contains(body, tt.says) {
				t.Errorf("%s: %d %s, want 401 saying %q", tt.name, status, body, tt.says)
			}
		}
	})

	t.Run("health is public", func(t *testing.T) {
		if status, _, body := do(t, newReq(t, http.MethodGet, s.base+"/global/health", "")); status != 200 || !strings.Contains(body, `"healthy":true`) {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("the password login sets a cookie that authenticates", func(t *testing.T) {
		req := newReq(t, http.MethodPost, s.base+"/auth/login", `{"password":"`+password+`"}`)
		req.Header.Set("Content-Type", "application/json")
		status, h, body := do(t, req)
		if status != http.StatusNoContent {
			t.Fatalf("login: %d %s", status, body)
		}
		ck := sessionCookie(t, h)
		req = newReq(t, http.MethodGet, s.base+"/session", "")
		req.AddCookie(ck)
		if status, _, body := do(t, req); status != 200 {
			t.Fatalf("with the cookie: %d %s", status, body)
		}
		logout := newReq(t, http.MethodPost, s.base+"/auth/logout", "")
		logout.AddCookie(ck)
		if status, _, body := do(t, logout); status != http.StatusNoContent {
			t.Fatalf("logout: %d %s", status, body)
		}
		req = newReq(t, http.MethodGet, s.base+"/session", "")
		req.AddCookie(ck)
		if status, _, _ := do(t, req); status != 401 {
			t.Fatalf("the cookie still works after logout: %d", status)
		}
	})
	t.Run("a wrong password login is 401 and sets no cookie", func(t *testing.T) {
		req := newReq(t, http.MethodPost, s.base+"/auth/login", `{"password":"guess"}`)
		req.Header.Set("Content-Type", "application/json")
		status, h, body := do(t, req)
		if status != 401 || len(h.Values("Set-Cookie")) != 0 {
			t.Fatalf("%d %v %s", status, h, body)
		}
	})
	t.Run("a one-time ticket is traded for a cookie once", func(t *testing.T) {
		ticket := s.auth.IssueTicket()
		status, h, _ := do(t, newReq(t, http.MethodGet, s.base+"/auth/login?ticket="+ticket, ""))
		if status != http.StatusSeeOther || h.Get("Location") != "/" {
			t.Fatalf("redeem: %d %v", status, h)
		}
		req := newReq(t, http.MethodGet, s.base+"/session", "")
		req.AddCookie(sessionCookie(t, h))
		if status, _, body := do(t, req); status != 200 {
			t.Fatalf("with the ticket's cookie: %d %s", status, body)
		}
		status, h, _ = do(t, newReq(t, http.MethodGet, s.base+"/auth/login?ticket="+ticket, ""))
		if status != http.StatusSeeOther || len(h.Values("Set-Cookie")) != 0 || !strings.Contains(h.Get("Location"), "expired") {
			t.Fatalf("second redeem: %d %v", status, h)
		}
	})
}

func addQuery(r *http.Request, k, v string) {
	q := r.URL.Query()
	q.Set(k, v)
	r.URL.RawQuery = q.Encode()
}

func sessionCookie(t *testing.T, h http.Header) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == routes.SessionCookie && c.Value != "" {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("cookie %+v is not HttpOnly and SameSite=Strict", c)
			}
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", routes.SessionCookie, h.Values("Set-Cookie"))
	return nil
}

func TestNoAuthOnLoopbackNeedsNoCredentials(t *testing.T) {
	s := listen(t, func(c *server.Config) {
		c.Auth = auth.New(auth.Credentials{Disabled: true})
		c.PasswordSet = false
	})
	if status, _, body := do(t, newReq(t, http.MethodGet, s.base+"/session", "")); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	// The Origin and Host rules still hold without authentication.
	req := newReq(t, http.MethodPost, s.base+"/session", `{}`)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "application/json")
	if status, _, _ := do(t, req); status != 403 {
		t.Fatalf("cross-origin with --no-auth: %d", status)
	}
}

func TestListenRefusesUnsafeConfigurations(t *testing.T) {
	api := &routes.API{}
	tests := []struct {
		name    string
		cfg     server.Config
		wantErr string
	}{
		{"--no-auth off loopback is refused",
			server.Config{Hostname: "0.0.0.0", Auth: auth.New(auth.Credentials{Disabled: true}), API: api}, "--no-auth"},
		{"--no-auth on a LAN address is refused",
			server.Config{Hostname: "192.168.1.10", Auth: auth.New(auth.Credentials{Disabled: true}), API: api}, "--no-auth"},
		{"a non-loopback bind with a generated password is refused",
			server.Config{Hostname: "0.0.0.0", Auth: auth.New(auth.Credentials{Username: user, Password: "generated"}), API: api}, "TANDEM_SERVER_PASSWORD"},
		{"an IPv6 wildcard bind without a chosen password is refused",
			server.Config{Hostname: "::", Auth: auth.New(auth.Credentials{Username: user, Password: "generated"}), API: api}, "TANDEM_SERVER_PASSWORD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := server.Listen(tt.cfg)
			if err == nil {
				srv.Shutdown(context.Background())
				t.Fatal("Listen succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestAnExplicitPortInUseIsAnErrorNamingIt(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	_, err = server.Listen(server.Config{Port: port, Auth: auth.New(auth.Credentials{Password: "x"}), API: &routes.API{}})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("err = %v, want one naming port %d as in use", err, port)
	}
}

func TestPortZeroTriesTheDefaultThenAnEphemeralPort(t *testing.T) {
	cfg := server.Config{Auth: auth.New(auth.Credentials{Password: "x"}), API: &routes.API{}}
	// Hold 4096 so the fallback must happen; if someone else holds it, the fallback is tested all the same.
	hold, holdErr := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(server.DefaultPort)))
	srv, err := server.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Port() == server.DefaultPort || srv.Port() == 0 {
		t.Errorf("with %d taken, bound port %d", server.DefaultPort, srv.Port())
	}
	srv.Shutdown(context.Background())
	if holdErr != nil {
		t.Skipf("port %d is used by another process; the default-port half is not testable now", server.DefaultPort)
	}
	hold.Close()
	srv, err = server.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if srv.Port() != server.DefaultPort {
		t.Errorf("with %d free, bound port %d", server.DefaultPort, srv.Port())
	}
}

func TestAConnectionMadeTheInstantThePortOpensIsServed(t *testing.T) {
	srv, err := server.Listen(server.Config{
		Port: testenv.UnusedPort(t), Auth: auth.New(auth.Credentials{Password: "x"}), PasswordSet: true,
		API: &routes.API{Modules: []routes.Module{&routes.Global{Version: "early"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Connect and send the request before Serve: the connection waits in the backlog.
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /global/health HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", srv.Addr())
	srv.Serve()
	defer func() {
		srv.Shutdown(context.Background())
		testenv.Recv(t, srv.Done(), "server shutdown")
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the early connection was not served: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"version":"early"`) {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

func TestAPanicBecomesA500WithoutInternals(t *testing.T) {
	s := listen(t, nil)
	req := newReq(t, http.MethodGet, s.base+"/boom", "")
	req.SetBasicAuth(user, password)
	req.Header.Set("X-Request-ID", "trace-me")
	status, h, body := do(t, req)
	if status != 500 || strings.Contains(body, "secret internal detail") {
		t.Fatalf("%d %s", status, body)
	}
	requireErrorBody(t, body, "")
	if h.Get("X-Request-ID") != "trace-me" {
		t.Errorf("X-Request-ID = %q, want the client's", h.Get("X-Request-ID"))
	}
	// The server is still up.
	if status, _, _ := do(t, newReq(t, http.MethodGet, s.base+"/global/health", "")); status != 200 {
		t.Fatalf("after the panic: %d", status)
	}
}

func TestEveryResponseCarriesARequestID(t *testing.T) {
	s := listen(t, nil)
	_, h, _ := do(t, newReq(t, http.MethodGet, s.base+"/global/health", ""))
	if len(h.Get("X-Request-ID")) < 8 {
		t.Errorf("X-Request-ID = %q", h.Get("X-Request-ID"))
	}
	_, h, _ = do(t, newReq(t, http.MethodGet, s.base+"/session?"+url.Values{"x": {"y"}}.Encode(), ""))
	if h.Get("X-Request-ID") == "" {
		t.Error("a refused request has no X-Request-ID")
	}
}
