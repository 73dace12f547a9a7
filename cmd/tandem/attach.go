package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/client"
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
			paths, err := resolvePaths("")
			if err != nil {
				return err
			}
			raw := ""
			if len(args) == 1 {
				raw = args[0]
			}
			c, err := locateForAttach(cmd, raw, paths.State, browse)
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
			return tui.Run(cmd.Context(), tui.Options{Client: c.Named("tandem attach"), Server: c.URL(), SessionID: sessionID, Open: openBrowser})
		},
	}
	cmd.Flags().StringVarP(&sessionID, "session", "s", "", "open this session first")
	cmd.Flags().DurationVar(&browse, "browse", discovery.DefaultBrowseTimeout, "how long to ask the LAN (mDNS) for servers when no URL is given and none runs here")
	return cmd
}

// locateForAttach finds the server: the URL given; else the local one; else one found over mDNS.
func locateForAttach(cmd *cobra.Command, raw, stateDir string, browse time.Duration) (*client.Client, error) {
	if raw != "" {
		return client.Locate(raw, os.Getenv, stateDir)
	}
	c, localErr := client.Locate("local", os.Getenv, stateDir)
	if localErr == nil {
		hctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		if c.Health(hctx) == nil {
			return c, nil
		}
		localErr = fmt.Errorf("the local server at %s does not answer", c.URL())
	}
	errOut := cmd.ErrOrStderr()
	fmt.Fprintf(errOut, "%v; asking the LAN (mDNS) for %v…\n", localErr, browse)
	servers, err := discovery.Browse(cmd.Context(), browse, nil)
	if err != nil {
		return nil, fmt.Errorf("%v, and mDNS: %w", localErr, err)
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no local server and none answered over mDNS; start `tandem serve`, or pass a URL: tandem attach http://HOST:PORT")
	}
	for i, s := range servers {
		fmt.Fprintf(errOut, "  %d. %s  %s\n", i+1, s.Name, s.URL())
	}
	if len(servers) == 1 || !isTerminal(os.Stdin) {
		if len(servers) > 1 {
			return nil, fmt.Errorf("several servers answered: pass one, e.g. tandem attach %s", servers[0].URL())
		}
		fmt.Fprintf(errOut, "attaching to %s\n", servers[0].URL())
		return client.Locate(servers[0].URL(), os.Getenv, stateDir)
	}
	fmt.Fprintf(errOut, "attach to which? [1-%d] ", len(servers))
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || n < 1 || n > len(servers) {
		return nil, fmt.Errorf("no server chosen")
	}
	return client.Locate(servers[n-1].URL(), os.Getenv, stateDir)
}

// openBrowser opens a URL the person asked to open (an MCP server's link), never by itself. The
// BROWSER environment variable, when set, names the program that opens it (the URL is its last
// argument); otherwise the system's opener does.
func openBrowser(url string) error {
	var c *exec.Cmd
	switch browser := strings.Fields(os.Getenv("BROWSER")); {
	case len(browser) > 0:
		c = exec.Command(browser[0], append(browser[1:], url)...)
	case runtime.GOOS == "darwin":
		c = exec.Command("open", url)
	case runtime.GOOS == "windows":
		c = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		c = exec.Command("xdg-open", url)
	}
	c.Stdin, c.Stdout, c.Stderr = nil, nil, nil // the terminal belongs to the UI
	if err := c.Start(); err != nil {
		return err
	}
	go func() { _ = c.Wait() }()
	return nil
}
