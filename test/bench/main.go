//go:build unix

// Command bench measures tandem side by side with the machine's limit and, when its binary is
// installed, OpenCode, and prints one markdown table (or, with -json, the same as JSON).
//
//	go run ./test/bench                    # the full run: 3 rounds (about 45 minutes with OpenCode)
//	go run ./test/bench -smoke -rounds 1   # every figure at a small size, for CI (no thresholds)
//
// It builds tandem (or takes -tandem) and measures in rounds: in each, tandem, OpenCode (npm
// opencode-linux-x64, as compat/ installs it) and a bare net/http server that answers from memory
// (the limit), each started as its own process on loopback with its own HOME and measured while
// the others are not running. Every figure is reported as the median of the rounds with their
// range and the load average it was taken at; a ratio is printed only when the runs support it.
// Both agents use the same scripted OpenAI-compatible model, served by this program over HTTP,
// and OpenCode's npm registry is a dead one on loopback.
package main

import (
	"context"
	"encoding/json"
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
	seq          int // the tool call whose /event bytes are counted runs `seq 1 seq`
}

var full = sizes{
	starts: 5, latency: 1000, load: 3 * time.Second, prompts: 500, window: 50, pages: 50,
	permissions: 50, sseClients: 1000, sseRounds: 10, ptyZeros: 15_000_000, ptyRuns: 3,
	sessionLevels: []int{10, 1000, 10000}, growthLatencies: 200, growthBudget: 3 * time.Minute,
	seq: 100_000,
}

var smoke = sizes{
	starts: 1, latency: 100, load: 300 * time.Millisecond, prompts: 10, window: 3, pages: 5,
	permissions: 2, sseClients: 50, sseRounds: 2, ptyZeros: 750_000, ptyRuns: 1,
	sessionLevels: []int{10, 100}, growthLatencies: 20, growthBudget: 10 * time.Second,
	seq: 1000,
}

func main() {
	serveLimitAddr := flag.String("serve-limit", "", "internal: run the limit server on this address")
	limitBodyFile := flag.String("limit-body", "", "with -serve-limit: answer GET /session with this file (a server's own answer) instead of 2 KB of JSON")
	limitHeadFile := flag.String("limit-head", "", "with -limit-body: send the header lines of this file too (the same server's head, as curl -D writes it)")
	smokeRun := flag.Bool("smoke", false, "measure every figure at a small size (for CI; the figures mean little)")
	tandemBin := flag.String("tandem", "", "the tandem binary to measure (default: build ./cmd/tandem)")
	opencodeBin := flag.String("opencode", "", `the OpenCode binary (default: test/compat/node_modules/opencode-linux-x64/bin/opencode if present; "off" skips it)`)
	rounds := flag.Int("rounds", 0, "rounds of measuring each server in turn (default 3, or 1 with -smoke)")
	portsFlag := flag.String("ports", "", "the loopback ports to listen on, LOW-HIGH, e.g. 41000-41100 (default: ephemeral ports)")
	jsonOut := flag.Bool("json", false, "print the figures as JSON instead of the markdown table")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if *serveLimitAddr != "" {
		ans, err := limitAnswer(*limitBodyFile, *limitHeadFile)
		if err == nil {
			err = serveLimit(ctx, *serveLimitAddr, ans)
		}
		if err != nil {
			log.Error("limit server", "err", err)
			os.Exit(1)
		}
		return
	}
	sz := full
	if *smokeRun {
		sz = smoke
	}
	if *rounds == 0 {
		*rounds = 3
		if *smokeRun {
			*rounds = 1
		}
	}
	ports, err := parsePorts(*portsFlag)
	if err == nil && *rounds < 1 {
		err = fmt.Errorf("-rounds %d: at least 1", *rounds)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	o := options{sz: sz, rounds: *rounds, ports: ports, json: *jsonOut, tandemBin: *tandemBin, opencodeBin: *opencodeBin}
	if err := run(ctx, log, os.Stdout, o); err != nil {
		log.Error("bench failed", "err", err)
		os.Exit(1)
	}
}

// options are what the flags ask of a run.
type options struct {
	sz                     sizes
	rounds                 int
	ports                  portRange
	json                   bool
	tandemBin, opencodeBin string
}

func run(ctx context.Context, log *slog.Logger, out io.Writer, o options) error {
	work, err := os.MkdirTemp("", "tandem-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	tandemBin, opencodeBin := o.tandemBin, o.opencodeBin
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
	if in, ok := ephemeralOverlap(o.ports); ok {
		log.Warn("-ports lies in the kernel's range of source ports: an outgoing connection may take a port before a server binds it, and that start is then tried again on the next port (a range outside net.ipv4.ip_local_port_range avoids it)",
			"overlap", fmt.Sprintf("%d-%d", in.lo, in.hi))
	}
	ports := &portPool{r: o.ports}
	ln, err := ports.listen()
	if err != nil {
		return err
	}
	model := startModel(ln)
	defer model.close()
	if ln, err = ports.listen(); err != nil {
		return err
	}
	registry := startDeadRegistry(ln)
	defer registry.close()

	// The order of a round; each round starts one further along it, so no server always follows
	// the same one.
	targets := []*target{{name: "tandem", kind: tandemKind, bin: mustAbs(tandemBin), model: model, ports: ports}}
	if opencodeBin != "" {
		targets = append(targets, &target{name: "opencode", kind: opencodeKind, bin: mustAbs(opencodeBin), model: model, ports: ports, registry: registry.url()})
	}
	targets = append(targets, &target{name: "limit", kind: limitKind, bin: self, ports: ports})
	rep := &report{Machine: thisMachine(time.Now()), Rounds: o.rounds, LoadStart: loadAverage(), sz: o.sz, res: newResults(o.rounds), opencode: opencodeBin != ""}
	for _, t := range targets {
		rep.Order = append(rep.Order, t.name)
	}
	for round := range o.rounds {
		for i := range targets {
			t := targets[(i+round)%len(targets)]
			log.Info("measuring", "server", t.name, "round", round+1, "of", o.rounds, "load", loadText(loadAverage()))
			asked := registry.requests.Load()
			figs, err := measure(ctx, log, t, o.sz, work)
			t.stop()
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", t.name, round+1, err)
			}
			if n := registry.requests.Load() - asked; n > 0 {
				log.Info("the dead registry refused requests", "server", t.name, "requests", n)
			}
			rep.res.add(t.kind, round, figs)
			// Each server's figures as soon as they are taken, for a run that is stopped before the table.
			attrs := []any{"server", t.name, "round", round + 1}
			for _, k := range slices.Sorted(maps.Keys(figs)) {
				attrs = append(attrs, k, strconv.FormatFloat(figs[k].v, 'g', 4, 64)+"@"+loadText(figs[k].load))
			}
			log.Info("figures", attrs...)
		}
	}
	rep.LoadEnd = loadAverage()
	if v, err := exec.CommandContext(ctx, tandemBin, "--version").Output(); err == nil {
		rep.Versions = strings.TrimSpace(string(v))
	}
	if opencodeBin != "" {
		if v, err := exec.CommandContext(ctx, opencodeBin, "--version").Output(); err == nil {
			rep.Versions += ", OpenCode " + strings.TrimSpace(string(v))
		}
	}
	rep.build()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.printTable(out)
	return nil
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
