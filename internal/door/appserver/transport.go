package appserver

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// maxMessage bounds one incoming message (a prompt with pasted images is large; 64 MiB is not).
const maxMessage = 64 << 20

// Stdio is the JSONL transport: one message per line.
type Stdio struct {
	r  *bufio.Reader
	w  io.Writer
	mu sync.Mutex
}

// NewStdio reads messages from r and writes them to w.
func NewStdio(r io.Reader, w io.Writer) *Stdio {
	return &Stdio{r: bufio.NewReaderSize(r, 64<<10), w: w}
}

// Read returns the next non-empty line. It does not watch ctx: the caller ends it by closing the
// input (the process's stdin closes with the client).
func (s *Stdio) Read(context.Context) ([]byte, error) {
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(buf) > maxMessage {
					return nil, fmt.Errorf("a message of over %d bytes", maxMessage)
				}
				line, err = s.r.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if t := strings.TrimSpace(string(line)); t != "" {
			return []byte(t), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Write writes msg and a newline.
func (s *Stdio) Write(_ context.Context, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.w.Write(append(append([]byte(nil), msg...), '\n'))
	return err
}

// wsConn is one WebSocket: a message per text frame.
type wsConn struct{ c *websocket.Conn }

func (w wsConn) Read(ctx context.Context) ([]byte, error) {
	for {
		typ, b, err := w.c.Read(ctx)
		if err != nil {
			return nil, io.EOF
		}
		if typ == websocket.MessageText {
			return b, nil
		}
	}
}

func (w wsConn) Write(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

// WSOptions configure the WebSocket listener.
type WSOptions struct {
	// Token is the bearer token every connection must present (Authorization: Bearer <token>);
	// empty refuses every connection.
	Token string
	// Serve speaks the protocol on one accepted connection.
	Serve func(ctx context.Context, c Conn) error
	// Logger records refused connections.
	Logger *slog.Logger
}

// Handler is the WebSocket endpoint on "/" (the Codex TUI takes no path) with /readyz and
// /healthz, as Codex's own listener has. The token is checked before the upgrade, so a client
// without it never reaches initialize; a request with an Origin header is refused (a web page
// cannot drive the agent), as Codex does.
func Handler(ctx context.Context, o WSOptions) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
	mux.HandleFunc("GET /readyz", ok)
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Origin") != "" {
			o.Logger.Warn("app-server: refused a request with an Origin header", "origin", r.Header.Get("Origin"), "addr", r.RemoteAddr)
			http.Error(w, "requests from web pages are refused", http.StatusForbidden)
			return
		}
		got, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if o.Token == "" || !found || subtle.ConstantTimeCompare([]byte(got), []byte(o.Token)) != 1 {
			o.Logger.Warn("app-server: refused a connection without the token", "addr", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="tandem app-server"`)
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		c.SetReadLimit(maxMessage)
		err = o.Serve(ctx, wsConn{c})
		if err != nil {
			o.Logger.Debug("app-server: connection ended", "err", err)
			_ = c.Close(websocket.StatusInternalError, "")
			return
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
	return mux
}

// ParseListen checks a --listen address: ws://HOST:PORT with no path, host an IP or localhost.
func ParseListen(addr string) (string, error) {
	rest, ok := strings.CutPrefix(addr, "ws://")
	if !ok {
		return "", fmt.Errorf("--listen %q: expected ws://HOST:PORT", addr)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil || port == "" {
		return "", fmt.Errorf("--listen %q: expected ws://HOST:PORT (%v)", addr, err)
	}
	if host != "localhost" && net.ParseIP(host) == nil {
		return "", fmt.Errorf("--listen %q: the host must be an IP address or localhost", addr)
	}
	return net.JoinHostPort(host, port), nil
}
