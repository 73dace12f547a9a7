package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/tandem-dev/tandem/internal/infra/gcpace"
	"github.com/tandem-dev/tandem/internal/infra/lease"
	"github.com/tandem-dev/tandem/internal/infra/reaper"
)

// Serve is `tandem serve` and `tandem web`: it takes the data directory's lease, guards the
// processes the server starts, serves until ctx ends or the listener fails, and shuts down.
// noOpen prints the web UI's login link instead of opening a browser (with o.Web).
func Serve(ctx context.Context, stdout io.Writer, o Options, noOpen bool) error {
	// A second server on the data directory stops here, before it starts or sweeps anything.
	held, err := lease.Acquire(o.Paths.Data, os.Getpid())
	if err != nil {
		return err
	}
	stopReaper := guardChildren(o.Logger)
	defer stopReaper()
	// A server's live heap is small and its requests many: collections are paced by a headroom
	// (package gcpace), unless GOGC in the environment says otherwise.
	if os.Getenv("GOGC") == "" {
		defer gcpace.Start(gcpace.DefaultHeadroom).Stop()
	}
	o.Lease = held
	m, err := Start(ctx, o)
	if err != nil {
		return err
	}
	m.Announce(stdout)
	if o.Web {
		m.OpenBrowser(stdout, noOpen)
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "shutting down…")
	case err := <-m.Done():
		if err != nil {
			m.Close()
			return err
		}
	}
	return m.Close()
}

// guardChildren tags this run's environment, so that every process the server starts carries the
// tag, sweeps what dead runs left behind and starts the watchdog that kills this run's processes
// when the server dies (package reaper). The returned function releases the watchdog, which then
// kills whatever is still running.
func guardChildren(logger *slog.Logger) func() {
	tag := reaper.Tag()
	if err := reaper.Tagged(tag); err != nil {
		logger.Warn("processes are not tagged; a crash may leave commands running", "err", err)
		return func() {}
	}
	if !reaper.Supported {
		return func() {}
	}
	if n := reaper.Sweep(tag); n > 0 {
		logger.Warn("killed processes left running by a server that died", "count", n)
	}
	exe, err := os.Executable()
	if err == nil {
		var pipe *os.File
		if pipe, err = reaper.Watchdog(exe, tag); err == nil {
			return func() { pipe.Close() }
		}
	}
	logger.Warn("no watchdog; a crash may leave commands running", "err", err)
	return func() {}
}
