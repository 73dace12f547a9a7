package appserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/tandem-dev/tandem/client"
)

// RunOptions are what `tandem app-server` was given, with its server already reached.
type RunOptions struct {
	Options
	// Addr is --listen's HOST:PORT (ParseListen); empty serves one client on Stdin/Stdout.
	Addr      string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer // where the listening address is announced
	TracePath string    // --trace: every message of every connection is appended here
	TokenFile string    // --token-file
	Password  string    // the password of the server this process started, if it started one
	StateDir  string    // where the local server's state file is, for its password
	Getenv    func(string) string
}

// Run serves Codex's app-server protocol as o says until ctx ends or the stdio client leaves.
func Run(ctx context.Context, o RunOptions) error {
	addr := o.Addr
	if o.TracePath != "" {
		tf, err := os.OpenFile(o.TracePath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer tf.Close()
		o.Trace = tf
	}
	if addr == "" {
		return Serve(ctx, o.Options, NewStdio(o.Stdin, o.Stdout))
	}
	token, err := bearerToken(o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	fmt.Fprintf(o.Stderr, "tandem app-server: listening on ws://%s\n", ln.Addr())
	return serveHTTP(ctx, ln, Handler(ctx, WSOptions{Token: token, Logger: o.Logger,
		Serve: func(ctx context.Context, conn Conn) error { return Serve(ctx, o.Options, conn) }}))
}

// bearerToken is the token WebSocket clients must send: the token file's content, else
// TANDEM_SERVER_PASSWORD, else the password of the server this door drives (the one it started, or
// the local state file's when it describes that server).
func bearerToken(o RunOptions) (string, error) {
	if o.TokenFile != "" {
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("--token-file %s is empty", o.TokenFile)
	}
	if o.Getenv != nil {
		if p := o.Getenv("TANDEM_SERVER_PASSWORD"); p != "" {
			return p, nil
		}
	}
	if o.Password != "" {
		return o.Password, nil
	}
	if st, err := client.ReadState(o.StateDir); err == nil && st.Password != "" && strings.TrimSuffix(st.URL, "/") == o.Client.URL() {
		return st.Password, nil
	}
	return "", errors.New("--listen needs a token: give --token-file, or set TANDEM_SERVER_PASSWORD")
}

// serveHTTP serves h on ln until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		_ = srv.Close()
		<-errc
		return nil
	}
}
