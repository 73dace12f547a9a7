// Command tandem is a coding-agent application server: `tandem serve` runs it headless, `tandem web`
// adds the browser UI, `tandem openapi` prints the API document. The commands parse their flags and
// call into internal/app, where the server is wired, and the doors under internal/door.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/door/run"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

func main() {
	// A command the agent runs starts as this binary, which confines itself and execs it.
	sandbox.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		code := 1
		var exit *run.ExitError
		if errors.As(err, &exit) {
			code = exit.Code
		}
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "tandem:", msg)
		}
		stop()
		os.Exit(code)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "tandem",
		Short:         "A coding-agent application server",
		Long:          "tandem runs AI coding sessions over HTTP, streams every event over SSE, and lets any client answer what the agent needs from a person.",
		Version:       app.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(false), newServeCommand(true), newOpenAPICommand(), newDiscoverCommand(), newWatchdogCommand(), newTrustCommand(), newMCPCommand(), newACPCommand(), newAppServerCommand(), newRunCommand(), newAttachCommand(), newPairCommand(), newManCommand())
	return root
}
