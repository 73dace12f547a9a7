//go:build unix

// Command bench measures tandem side by side with the machine's limit and, when its binary is
// installed, OpenCode, and prints one markdown table.
//
//	go run ./test/bench            # the full run (several minutes; OpenCode adds more)
//	go run ./test/bench -smoke     # every figure at a small size, for CI (no thresholds)
//
// It builds tandem (or takes -tandem), and starts each server as its own process on loopback with
// its own HOME, one at a time: tandem, a bare net/http server that answers from memory (the
// limit), and OpenCode (npm opencode-linux-x64, as compat/ installs it). Both agents use the same
// scripted OpenAI-compatible model, served by this program over HTTP.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sizes are how much of each figure a run measures.
type sizes struct {
	starts          int // process starts for start → first 200
	latency         int // sequential GET /session requests
	load            time.Duration
	prompts         int   // prompts in the one long session; its messages are what gets paged
	window          int   // prompts in each of the first and last windows compared
	pages           int   // requests per page size
	permissions     int   // permission round trips
	sseClients      int   // SSE clients
	sseRounds       int   // events fanned out to them
	ptyZeros        int   // zero bytes base64-encoded through the PTY (output is 4/3 of it)
	ptyRuns         int   // runs of each PTY figure
	sessionLevels   []int // session counts the growth figures are taken at
	growthLatencies int   // requests per growth figure
	// growthBudget skips a session count whose sessions would take longer than this to create, at
	// the rate of the count before (OpenCode took about 190 ms per session at 1,000).
	growthBudget time.Duration
}

var full = sizes{
	starts: 5, latency: 1000, load: 3 * time.Second, prompts: 500, window: 50, pages: 50,
	permissions: 50, sseClients: 1000, sseRounds: 10, ptyZeros: 15_000_000, ptyRuns: 3,
	sessionLevels: []int{10, 1000, 10000}, growthLatencies: 200, growthBudget: 3 * time.Minute,
}

var smoke = sizes{
	starts: 1, latency: 100, load: 300 * time.Millisecond, prompts: 10, window: 3, pages: 5,
	permissions: 2, sseClients: 50, sseRounds: 2, ptyZeros: 750_000, ptyRuns: 1,
	sessionLevels: []int{10, 100}, growthLatencies: 20, growthBudget: 10 * time.Second,
}

func main() {
	serveLimitAddr := flag.String("serve-limit", "", "internal: run the limit server on this address")
	smokeRun := flag.Bool("smoke", false, "measure every figure at a small size (for CI; the figures mean little)")
	tandemBin := flag.String("tandem", "", "the tandem binary to measure (default: build ./cmd/tandem)")
	opencodeBin := flag.String("opencode", "", `the OpenCode binary (default: test/compat/node_modules/opencode-linux-x64/bin/opencode if present; "off" skips it)`)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if *serveLimitAddr != "" {
		if err := serveLimit(ctx, *serveLimitAddr); err != nil {
			log.Error("limit server", "err", err)
			os.Exit(1)
		}
		return
	}
	sz := full
	if *smokeRun {
		sz = smoke
	}
	if err := run(ctx, log, os.Stdout, sz, *tandemBin, *opencodeBin); err != nil {
		log.Error("bench failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, out io.Writer, sz sizes, tandemBin, opencodeBin string) error {
	work, err := os.MkdirTemp("", "tandem-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if tandemBin == "" {
		tandemBin = filepath.Join(work, "tandem")
		log.Info("building tandem", "out", tandemBin)
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tandemBin, "./cmd/tandem")
		build.Stdout, build.Stderr, build.Env = os.Stderr, os.Stderr, append(os.Environ(), "CGO_ENABLED=0")
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/tandem: %w", err)
		}
	}
	if opencodeBin == "" {
		guess := filepath.Join("test", "compat", "node_modules", "opencode-"+runtime.GOOS+"-"+map[string]string{"amd64": "x64"}[runtime.GOARCH], "bin", "opencode")
		if _, err := os.Stat(guess); err == nil {
			opencodeBin = guess
		}
	}
	if opencodeBin == "off" {
		opencodeBin = ""
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	model, err := startModel()
	if err != nil {
		return err
	}
	defer model.close()

	targets := []*target{
		{name: "tandem", kind: tandemKind, bin: mustAbs(tandemBin), model: model},
		{name: "limit", kind: limitKind, bin: self},
	}
	if opencodeBin != "" {
		targets = append(targets, &target{name: "opencode", kind: opencodeKind, bin: mustAbs(opencodeBin), model: model})
	}
	res := results{}
	for _, t := range targets {
		log.Info("measuring", "server", t.name)
		figs, err := measure(ctx, log, t, sz, work)
		t.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		res[t.kind] = figs
		// Each server's figures as soon as they are taken, for a run that is stopped before the table.
		attrs := []any{"server", t.name}
		for _, k := range slices.Sorted(maps.Keys(figs)) {
			attrs = append(attrs, k, strconv.FormatFloat(figs[k], 'g', 4, 64))
		}
		log.Info("figures", attrs...)
	}
	version := ""
	if v, err := exec.CommandContext(ctx, tandemBin, "--version").Output(); err == nil {
		version = strings.TrimSpace(string(v))
	}
	if opencodeBin != "" {
		if v, err := exec.CommandContext(ctx, opencodeBin, "--version").Output(); err == nil {
			version += ", OpenCode " + strings.TrimSpace(string(v))
		}
	}
	load1 := ""
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		load1 = strings.Fields(string(raw))[0]
	}
	fmt.Fprintf(out, "%s; %d CPUs; load average %s at the end\n\n", version, runtime.NumCPU(), load1)
	printTable(out, res, sz, opencodeBin != "")
	return nil
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
