// Package server runs tandem's HTTP listener: it picks the port (4096, else an ephemeral one),
// applies the security rules every request passes through (authentication, Origin and Host checks,
// JSON-only mutations), serves the routes and shuts down gracefully.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
)

// DefaultPort is tried first when no port is given, as OpenCode.
const DefaultPort = 4096

// Config is what a Server needs.
type Config struct {
	Hostname string // default 127.0.0.1
	// Port is the port to bind; 0 tries DefaultPort, then an ephemeral port. An explicit port that is
	// taken is an error naming it.
	Port int
	// AnyPort binds an ephemeral port without trying DefaultPort (a server for one client process).
	AnyPort   bool
	Directory string   // the default project directory
	CORS      []string // extra allowed origins
	Auth      *auth.Authority
	// PasswordSet says the password came from the user, not generated; required off loopback.
	PasswordSet bool
	API         *routes.API
	// Fallback serves what no route matches (the web UI); nil answers 404 JSON.
	Fallback http.Handler
	Logger   *slog.Logger
	// BodyTimeout bounds how long a client may take to send a request body (default 30 s), so a
	// slow-body client cannot hold connections open forever.
	BodyTimeout time.Duration
}

// Server is a listening tandem server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	ln       net.Listener
	http     *http.Server
	loopback bool
	port     string
	cors     map[string]bool
	served   chan error
}

// Listen validates the configuration and binds the port. It does not serve yet; call Serve.
func Listen(cfg Config) (*Server, error) {
	if cfg.Hostname == "" {
		cfg.Hostname = "127.0.0.1"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	loopback := isLoopback(cfg.Hostname)
	if !loopback && cfg.Auth.Disabled() {
		return nil, fmt.Errorf("--no-auth is only allowed on a loopback address, not %s", cfg.Hostname)
	}
	if !loopback && !cfg.PasswordSet {
		return nil, fmt.Errorf("refusing to listen on %s without a password you chose: set TANDEM_SERVER_PASSWORD", cfg.Hostname)
	}
	ln, err := bind(cfg.Hostname, cfg.Port, cfg.AnyPort)
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := &Server{cfg: cfg, log: cfg.Logger, ln: ln, loopback: loopback, port: port, cors: map[string]bool{}, served: make(chan error, 1)}
	for _, o := range cfg.CORS {
		s.cors[o] = true
	}
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

func bind(host string, port int, anyPort bool) (net.Listener, error) {
	if anyPort {
		return net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	if port != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("port %d on %s is already in use: choose another with --port, or --port 0 for any free port", port, host)
			}
			return nil, fmt.Errorf("listen on %s port %d: %w", host, port, err)
		}
		return ln, nil
	}
	if ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(DefaultPort))); err == nil {
		return ln, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", host, err)
	}
	return ln, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler is the full middleware chain around the router; tests drive it with httptest.
func (s *Server) Handler() http.Handler {
	router := s.cfg.API.Router(guard(s.cfg.Auth))
	if s.cfg.Fallback != nil {
		router.NotFound(s.cfg.Fallback.ServeHTTP)
	}
	var h http.Handler = router
	h = s.scope(h)
	h = s.originGuard(h)
	h = s.hostGuard(h)
	h = compressJSON(h)
	h = s.observe(h)
	h = s.bodyDeadline(h)
	return h
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is how a client on this machine reaches the server.
func (s *Server) URL() string {
	host := s.cfg.Hostname
	if host == "0.0.0.0" || host == "::" || host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, s.port) + "/"
}

// Port is the bound port.
func (s *Server) Port() int { p, _ := strconv.Atoi(s.port); return p }

// Serve starts serving in the background. Connections that arrived before Serve wait in the
// listener's backlog and are served, never dropped.
func (s *Server) Serve() {
	go func() {
		err := s.http.Serve(s.ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.served <- err
	}()
}

// Done reports the end of serving: nil after a shutdown, the error if the listener failed.
func (s *Server) Done() <-chan error { return s.served }

// Shutdown stops accepting, lets in-flight requests finish until ctx ends, then closes what remains.
// Long-lived streams must have been ended by their owners (the bus, the PTY manager) before.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		_ = s.http.Close()
	}
	return err
}
