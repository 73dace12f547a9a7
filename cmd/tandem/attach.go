package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/door/tui"
	"github.com/tandem-dev/tandem/internal/infra/discovery"
)

// newAttachCommand is `tandem attach [URL]`: the terminal UI, a pure HTTP/SSE client of a server.
func newAttachCommand() *cobra.Command {
	var (
		sessionID string
		browse    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "attach [URL]",
		Short: "Open the terminal UI on a running tandem server",
		Long: "attach shows a tandem server's sessions in the terminal: the conversation as it streams, a prompt, and one\n" +
			"inbox of what waits for you (approvals, questions, MCP forms and links) across sessions. Without a URL it\n" +
			"uses the server `tandem serve` started on this machine (its state file holds the URL and password), and\n" +
			"without one it lists the servers that answer over mDNS. The password of a URL comes from the URL's user\n" +
			"info or TANDEM_SERVER_PASSWORD.",
		Example: "  tandem attach\n  tandem attach http://127.0.0.1:4096\n  TANDEM_SERVER_PASSWORD=… tandem attach http://build-box.local:4096 --session ses_…",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := app.ResolvePaths("")
			if err != nil {
				return err
			}
			raw := ""
			if len(args) == 1 {
				raw = args[0]
			}
			c, err := tui.Locate(cmd.Context(), raw, paths.State, browse, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			hctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			if err := c.Health(hctx); err != nil {
				return fmt.Errorf("%s does not answer: %w", c.URL(), err)
			}
			if _, err := c.SearchSessions(hctx, "", 1); err != nil {
				return fmt.Errorf("%s: %w", c.URL(), err)
			}
			return tui.Run(cmd.Context(), tui.Options{Client: c.Named("tandem attach"), Server: c.URL(), SessionID: sessionID, Open: tui.OpenBrowser})
		},
	}
	cmd.Flags().StringVarP(&sessionID, "session", "s", "", "open this session first")
	cmd.Flags().DurationVar(&browse, "browse", discovery.DefaultBrowseTimeout, "how long to ask the LAN (mDNS) for servers when no URL is given and none runs here")
	return cmd
}
