//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type kind int

const (
	limitKind kind = iota
	tandemKind
	opencodeKind
)

func (k kind) String() string {
	switch k {
	case tandemKind:
		return "tandem"
	case opencodeKind:
		return "opencode"
	}
	return "limit"
}

const benchPassword = "bench-secret-7f3a"

// target is one server under test, run as its own process on loopback with its own HOME, XDG
// directories and project, so nothing on the machine leaks in and nothing it writes leaks out.
type target struct {
	name  string
	kind  kind
	bin   string // the executable; for the limit server, this program
	model *scriptedModel
	ports *portPool
	// registry is the dead npm registry OpenCode is pointed at (its plugin install must not reach
	// the network, nor time a download).
	registry string

	root, project string
	port          int
	base, auth    string
	cmd           *exec.Cmd
	done          chan struct{}
	output        *capped
	client        *http.Client
}

// capped keeps the first 64 KB a process writes, to explain a failure.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := 64<<10 - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// portPool hands out loopback ports: ephemeral ones, or with -ports the next free one of the range,
// round and round.
type portPool struct {
	r    portRange
	next int
}

// listen opens a listener on the next free port.
func (p *portPool) listen() (net.Listener, error) {
	if p.r.lo == 0 {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	if p.next < p.r.lo || p.next > p.r.hi {
		p.next = p.r.lo
	}
	for range p.r.hi - p.r.lo + 1 {
		port := p.next
		if p.next++; p.next > p.r.hi {
			p.next = p.r.lo
		}
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			return ln, nil
		}
	}
	return nil, fmt.Errorf("%w (%d-%d)", errNoPort, p.r.lo, p.r.hi)
}

// take is a port that was free a moment ago, for a server to listen on.
func (p *portPool) take() (int, error) {
	ln, err := p.listen()
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (t *target) user() string {
	if t.kind == opencodeKind {
		return "opencode"
	}
	return "tandem"
}

// prepare makes a fresh root: HOME and XDG directories, a git project with one committed file, and
// for OpenCode a config that points it at the scripted model.
func (t *target) prepare(parent string) error {
	root, err := os.MkdirTemp(parent, t.name+"-")
	if err != nil {
		return err
	}
	t.root, t.project = root, filepath.Join(root, "project")
	for _, d := range []string{"project", "home/.config", "home/.local/share", "home/.local/state", "home/.cache"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(t.project, "README.md"), []byte("# bench project\n"), 0o644); err != nil {
		return err
	}
	if t.kind != limitKind {
		git := exec.Command("sh", "-c", "git init -q && git add -A && git -c user.name=bench -c user.email=bench@localhost commit -qm init")
		git.Dir, git.Env = t.project, t.env()
		if out, err := git.CombinedOutput(); err != nil {
			return fmt.Errorf("git init: %v: %s", err, out)
		}
	}
	if t.kind == opencodeKind {
		cfg := map[string]any{
			"$schema":     "https://opencode.ai/config.json",
			"model":       "scripted/scripted",
			"small_model": "scripted/scripted",
			"autoupdate":  false,
			"share":       "disabled",
			// OpenCode allows bash by default; tandem asks. Both ask here, for the round trip.
			"permission": map[string]any{"bash": "ask"},
			"provider": map[string]any{"scripted": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
				"options": map[string]any{"baseURL": t.model.baseURL(), "apiKey": "sk-bench"},
				"models":  map[string]any{"scripted": map[string]any{"name": "Scripted", "tool_call": true}},
			}},
		}
		b, _ := json.MarshalIndent(cfg, "", "  ")
		dir := filepath.Join(root, "home/.config/opencode")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o644); err != nil {
			return err
		}
		// Every place npm and Bun (which OpenCode runs to install its plugin package) read a
		// registry from names the dead one, besides the environment (see env).
		npmrc := []byte("registry=" + t.registry + "\n")
		bunfig := []byte("[install]\nregistry = \"" + t.registry + "\"\n")
		for path, content := range map[string][]byte{
			"home/.npmrc": npmrc, "home/.config/opencode/.npmrc": npmrc, "project/.npmrc": npmrc,
			"home/.bunfig.toml": bunfig, "home/.config/.bunfig.toml": bunfig, "home/.config/opencode/bunfig.toml": bunfig,
		} {
			if err := os.WriteFile(filepath.Join(root, path), content, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *target) env() []string {
	home := filepath.Join(t.root, "home")
	env := []string{
		"PATH=" + os.Getenv("PATH"), "SHELL=/bin/bash", "TERM=xterm-256color", "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local/state"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
	}
	switch t.kind {
	case tandemKind:
		env = append(env, "TANDEM_SERVER_PASSWORD="+benchPassword, "OPENAI_BASE_URL="+t.model.baseURL(),
			"OPENAI_API_KEY=sk-bench", "TANDEM_MODEL=openai/scripted")
	case opencodeKind:
		env = append(env, "OPENCODE_SERVER_PASSWORD="+benchPassword, "OPENCODE_DISABLE_AUTOUPDATE=true",
			"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_LSP_DOWNLOAD=true",
			"npm_config_registry="+t.registry, "NPM_CONFIG_REGISTRY="+t.registry, "BUN_CONFIG_REGISTRY="+t.registry)
	}
	return env
}

// launch starts the process on the prepared root (again, after halt: on what the last run stored)
// on a new port and returns the time from starting it to the first 200 from GET /global/health.
// Each poll uses a new connection with a short timeout: OpenCode never answers connections
// accepted in its first few hundred milliseconds.
func (t *target) launch(ctx context.Context) (time.Duration, error) {
	var err error
	for range 3 {
		var d time.Duration
		if d, err = t.launchOnce(ctx); !errors.Is(err, errExited) {
			return d, err
		}
		// Another process may have taken the port between the pool's check and the server's
		// bind; a server that fails for another reason fails three times.
		t.halt()
	}
	return 0, err
}

// errExited is a server exiting before its first 200.
var errExited = errors.New("exited before it answered")

func (t *target) launchOnce(ctx context.Context) (time.Duration, error) {
	port, err := t.ports.take()
	if err != nil {
		return 0, err
	}
	t.port, t.base = port, "http://127.0.0.1:"+strconv.Itoa(port)
	t.auth = ""
	if t.kind != limitKind {
		t.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(t.user()+":"+benchPassword))
	}
	var args []string
	switch t.kind {
	case limitKind:
		args = []string{"-serve-limit", "127.0.0.1:" + strconv.Itoa(port)}
	case tandemKind:
		args = []string{"serve", "--port", strconv.Itoa(port), "--dir", t.project}
	case opencodeKind:
		args = []string{"serve", "--port", strconv.Itoa(port), "--hostname", "127.0.0.1"}
	}
	t.output = &capped{}
	t.cmd = exec.Command(t.bin, args...)
	t.cmd.Dir, t.cmd.Env = t.project, t.env()
	t.cmd.Stdout, t.cmd.Stderr = t.output, t.output
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}

	poll := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 100 * time.Millisecond}
	defer poll.CloseIdleConnections()
	begin := time.Now()
	if err := t.cmd.Start(); err != nil {
		return 0, err
	}
	t.done = make(chan struct{})
	go func() { _ = t.cmd.Wait(); close(t.done) }()
	deadline := begin.Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-t.done:
			return 0, fmt.Errorf("%s %w: %s", t.name, errExited, t.output)
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		// No connection before the port has a listener: a connection to a port nobody listens on
		// can connect to itself when the kernel picks that same port as its source (the port is
		// in the ephemeral range), and then holds the port the server is about to bind.
		if !listening(port) {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.base+"/global/health", nil)
		t.authorize(req)
		if resp, err := poll.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(begin), nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s gave no 200 within 60 s: %s", t.name, t.output)
}

// stop ends the process and removes its root.
func (t *target) stop() {
	t.halt()
	if t.root != "" {
		_ = os.RemoveAll(t.root)
	}
	t.root = ""
}

// halt ends the process group (SIGTERM, then SIGKILL after 5 s) and keeps its root.
func (t *target) halt() {
	if t.cmd != nil && t.cmd.Process != nil {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-t.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
			<-t.done
		}
	}
	if t.client != nil {
		t.client.CloseIdleConnections()
	}
	t.cmd = nil
}

func (t *target) authorize(req *http.Request) {
	if t.auth != "" {
		req.Header.Set("Authorization", t.auth)
	}
}

// pss is the proportional set size of the server's whole process tree, in bytes (see treePSS).
func (t *target) pss() (int64, error) {
	total, _, err := treePSS(t.cmd.Process.Pid)
	return total, err
}

// call sends one request over the keep-alive client and checks the status.
func (t *target) call(ctx context.Context, method, path, body string, want int) ([]byte, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, r)
	if err != nil {
		return nil, err
	}
	t.authorize(req)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return out, fmt.Errorf("%s %s: %d, want %d: %.300s", method, path, resp.StatusCode, want, out)
	}
	return out, nil
}

// callJSON is call that decodes the response into out.
func (t *target) callJSON(ctx context.Context, method, path, body string, out any) error {
	raw, err := t.call(ctx, method, path, body, http.StatusOK)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: %w: %.300s", method, path, err, raw)
	}
	return nil
}

func (t *target) newSession(ctx context.Context) (string, error) {
	var s struct {
		ID string `json:"id"`
	}
	if err := t.callJSON(ctx, http.MethodPost, "/session", `{"title":"bench"}`, &s); err != nil {
		return "", err
	}
	return s.ID, nil
}

func promptBody(text string) string {
	b, _ := json.Marshal(map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}}})
	return string(b)
}
