package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/app"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			var o appserver.RunOptions
			if f.listen != "" {
				addr, err := appserver.ParseListen(f.listen)
				if err != nil {
					return err
				}
				o.Addr = addr
			}
			d, err := f.serve.stdioDoor(cmd, "tandem app-server", f.attach)
			if err != nil {
				return err
			}
			if o.Dir, err = app.ProjectDir(f.serve.start.Directory); err != nil {
				return err
			}
			r, err := app.OpenStdioDoor(cmd.Context(), d)
			if err != nil {
				return err
			}
			defer r.Close()
			if r.Main != nil {
				o.Password = r.Main.Password()
			}
			o.Client, o.Version, o.Logger, o.Home, o.StateDir = r.Client, app.Version(), r.Logger, d.Options.Paths.Data, d.Options.Paths.State
			o.Stdin, o.Stdout, o.Stderr, o.Getenv = os.Stdin, os.Stdout, cmd.ErrOrStderr(), os.Getenv
			o.TracePath, o.TokenFile = f.trace, f.tokenFile
			return appserver.Run(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.attach, "attach", "", "drive the running tandem server at this URL instead of starting one (\"local\": the one `tandem serve` started here)")
	fl.StringVar(&f.listen, "listen", "", "serve WebSocket clients at ws://HOST:PORT instead of stdio")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --listen: the file holding the bearer token clients must send (default: the server's password)")
	fl.StringVar(&f.trace, "trace", "", "append every protocol message (both ways) to this file, one JSON line each")
	f.serve.addServerFlags(fl)
	return cmd
}
