package tui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/infra/discovery"
)

// Locate finds the server `tandem attach` opens: the URL given; else the local one (its state file
// in stateDir); else one found over mDNS within browse, chosen on stdin when several answer. It
// reports what it does on errOut.
func Locate(ctx context.Context, raw, stateDir string, browse time.Duration, errOut io.Writer) (*client.Client, error) {
	if raw != "" {
		return client.Locate(raw, os.Getenv, stateDir)
	}
	c, localErr := client.Locate("local", os.Getenv, stateDir)
	if localErr == nil {
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if c.Health(hctx) == nil {
			return c, nil
		}
		localErr = fmt.Errorf("the local server at %s does not answer", c.URL())
	}
	fmt.Fprintf(errOut, "%v; asking the LAN (mDNS) for %v…\n", localErr, browse)
	servers, err := discovery.Browse(ctx, browse, nil)
	if err != nil {
		return nil, fmt.Errorf("%v, and mDNS: %w", localErr, err)
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no local server and none answered over mDNS; start `tandem serve`, or pass a URL: tandem attach http://HOST:PORT")
	}
	for i, s := range servers {
		fmt.Fprintf(errOut, "  %d. %s  %s\n", i+1, s.Name, s.URL())
	}
	if len(servers) == 1 || !isatty.IsTerminal(os.Stdin.Fd()) {
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

// OpenBrowser opens a URL the person asked to open (an MCP server's link), never by itself. The
// BROWSER environment variable, when set, names the program that opens it (the URL is its last
// argument); otherwise the system's opener does.
func OpenBrowser(url string) error {
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
