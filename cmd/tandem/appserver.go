package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/door/appserver"
)

// appServerFlags are the flags of `tandem app-server`.
type appServerFlags struct {
	serve     serveFlags
	attach    string
	listen    string
	tokenFile string
	trace     string
}

// newAppServerCommand is `tandem app-server`: tandem speaking Codex's app-server protocol, for the
// Codex TUI (`codex --remote`), its IDE extension and other app-server clients. Like `acp` it
// attaches to the tandem that owns the data directory, or runs one in-process.
func newAppServerCommand() *cobra.Command {
	var f appServerFlags
	cmd := &cobra.Command{
		Use:   "app-server",
		Short: "Serve tandem over Codex's app-server protocol (stdio, or WebSocket for `codex --remote`)",
		Long: "Speak Codex's app-server protocol (JSON-RPC, as Codex 0.171 writes it): threads are tandem sessions, turns\n" +
			"their prompts, and approvals tandem's pending requests (also in GET /permission; the first answer wins).\n" +
			"By default one client on stdin/stdout (JSON lines). With --listen ws://127.0.0.1:PORT it accepts\n" +
			"WebSocket clients such as `codex --remote ws://127.0.0.1:PORT --remote-auth-token-env TANDEM_SERVER_PASSWORD`;\n" +
			"every connection must send the token (--token-file, else the tandem server's password) as a bearer token.\n" +
			"With --attach URL it drives the running server at URL; without it, the tandem that owns the data\n" +
			"directory (tandem serve), or one started in this process.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAppServer(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.attach, "attach", "", "drive the running tandem server at this URL instead of starting one (\"local\": the one `tandem serve` started here)")
	fl.StringVar(&f.listen, "listen", "", "serve WebSocket clients at ws://HOST:PORT instead of stdio")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --listen: the file holding the bearer token clients must send (default: the server's password)")
	fl.StringVar(&f.trace, "trace", "", "append every protocol message (both ways) to this file, one JSON line each")
	f.serve.addServerFlags(fl)
	return cmd
}

func runAppServer(cmd *cobra.Command, f appServerFlags) error {
	var addr string
	if f.listen != "" {
		a, err := appserver.ParseListen(f.listen)
		if err != nil {
			return err
		}
		addr = a
	}
	level, err := parseLevel(f.serve.logLevel)
	if err != nil {
		return err
	}
	paths, err := resolvePaths(f.serve.dataDir)
	if err != nil {
		return err
	}
	dir := f.serve.dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	// On stdio, stdout carries the protocol: logs go to the log file, or stderr with --print-logs.
	logger, closeLog, err := openLogger(paths, f.serve.printLogs, cmd.ErrOrStderr(), level)
	if err != nil {
		return err
	}
	defer closeLog()
	ctx := cmd.Context()
	var c *client.Client
	password := ""
	if cmd.Flags().Changed("attach") {
		c, err = client.Locate(f.attach, os.Getenv, paths.State)
		if err != nil {
			return fmt.Errorf("--attach: %w", err)
		}
		if err := c.Health(ctx); err != nil {
			return fmt.Errorf("--attach: %s: %w", c.URL(), err)
		}
	} else {
		m, owner, err := startOrUse(ctx, f.serve.startOptions(paths, logger), "tandem app-server", cmd.ErrOrStderr())
		switch {
		case err != nil:
			return err
		case owner != nil:
			c = owner
		default:
			defer m.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "tandem app-server: HTTP server on %s\n", m.URL())
			c = client.New(m.URL(), m.Username(), m.password)
			password = m.password
		}
	}
	o := appserver.Options{Client: c, Version: version, Logger: logger, Dir: dir, Home: paths.Data}
	if f.trace != "" {
		tf, err := os.OpenFile(f.trace, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer tf.Close()
		o.Trace = tf
	}
	if addr == "" {
		return appserver.Serve(ctx, o, appserver.NewStdio(os.Stdin, os.Stdout))
	}
	token, err := appServerToken(f.tokenFile, password, c, paths.State)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "tandem app-server: listening on ws://%s\n", ln.Addr())
	return serveAppServer(ctx, ln, appserver.Handler(ctx, appserver.WSOptions{Token: token, Logger: logger,
		Serve: func(ctx context.Context, conn appserver.Conn) error { return appserver.Serve(ctx, o, conn) }}))
}

// appServerToken is the bearer token WebSocket clients must send: the token file's content, else
// TANDEM_SERVER_PASSWORD, else the password of the server this door drives (the one it started, or
// the local state file's when it describes that server).
func appServerToken(file, password string, c *client.Client, stateDir string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("--token-file %s is empty", file)
	}
	if p := os.Getenv("TANDEM_SERVER_PASSWORD"); p != "" {
		return p, nil
	}
	if password != "" {
		return password, nil
	}
	if st, err := client.ReadState(stateDir); err == nil && st.Password != "" && strings.TrimSuffix(st.URL, "/") == c.URL() {
		return st.Password, nil
	}
	return "", errors.New("--listen needs a token: give --token-file, or set TANDEM_SERVER_PASSWORD")
}

// serveAppServer serves h on ln until ctx ends.
func serveAppServer(ctx context.Context, ln net.Listener, h http.Handler) error {
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
